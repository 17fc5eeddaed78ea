//go:build unix

package output

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// openDescriptor opens what a path naming one of the process's descriptors names —
// /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N — as a copy of that descriptor, so a
// write lands where the descriptor's own would (after what it wrote, before what it writes
// next), whatever it is open on. ok is false for any other path.
func openDescriptor(path string) (f *os.File, ok bool, err error) {
	fd := -1
	switch p := filepath.Clean(path); {
	case p == "/dev/stdout":
		fd = 1
	case p == "/dev/stderr":
		fd = 2
	default:
		for _, dir := range []string{"/dev/fd/", "/proc/self/fd/"} {
			if n, found := strings.CutPrefix(p, dir); found {
				if i, err := strconv.Atoi(n); err == nil && i >= 0 {
					fd = i
				}
			}
		}
	}
	if fd < 0 {
		return nil, false, nil
	}
	syscall.ForkLock.RLock()
	d, err := syscall.Dup(fd)
	if err == nil {
		syscall.CloseOnExec(d)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, true, &os.PathError{Op: "dup", Path: path, Err: err}
	}
	return os.NewFile(uintptr(d), path), true, nil
}

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
	fd, ok := descriptor(path)
	if !ok {
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

// descriptor is the descriptor a path names — /dev/stdout 1, /dev/stderr 2, /dev/fd/N and
// /proc/self/fd/N N — however spelled (/dev//stdout, /dev/fd/./1); ok is false for any other
// path.
func descriptor(path string) (fd int, ok bool) {
	switch p := filepath.Clean(path); p {
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	default:
		for _, dir := range []string{"/dev/fd/", "/proc/self/fd/"} {
			if n, found := strings.CutPrefix(p, dir); found {
				if i, err := strconv.Atoi(n); err == nil && i >= 0 {
					return i, true
				}
			}
		}
	}
	return -1, false
}

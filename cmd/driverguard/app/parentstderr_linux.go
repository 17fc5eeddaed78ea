package app

import (
	"fmt"
	"io"
	"os"
)

// openParentStderr opens the parent process's standard error (/proc/PPID/fd/2) for writing,
// when it is a pipe or a character device (a terminal) other than this process's own standard
// error. A regular file is left alone: the parent writes it at its own offset and would
// overwrite what is appended.
func openParentStderr() (io.WriteCloser, error) {
	path := fmt.Sprintf("/proc/%d/fd/2", os.Getppid())
	parent, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if parent.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		return nil, errNoParentStderr
	}
	if own, err := os.Stat("/proc/self/fd/2"); err == nil && os.SameFile(own, parent) {
		return nil, errNoParentStderr
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
}

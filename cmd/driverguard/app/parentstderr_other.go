//go:build !linux

package app

import "io"

// openParentStderr: only Linux exposes another process's standard error (/proc/PPID/fd/2).
func openParentStderr() (io.WriteCloser, error) { return nil, errNoParentStderr }

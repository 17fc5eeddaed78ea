//go:build !unix

package output

import "os"

// openDescriptor: paths name no descriptor here.
func openDescriptor(string) (*os.File, bool, error) { return nil, false, nil }

// descriptor: paths name no descriptor here.
func descriptor(string) (int, bool) { return -1, false }

//go:build unix

package output

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A FIFO (a reader waiting on it: `-o sarif=pipe` with `upload < pipe`) gets the output; a
// rename over it would leave the reader waiting forever and a regular file in its place.
func TestWriteFileIntoFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	got := make(chan []byte, 1)
	go func() {
		data, _ := os.ReadFile(fifo)
		got <- data
	}()

	require.NoError(t, Write(&bytes.Buffer{}, []Target{{Format: SARIF, Path: fifo}}, sampleReport()))

	fi, err := os.Lstat(fifo)
	require.NoError(t, err)
	require.Equal(t, os.ModeNamedPipe, fi.Mode().Type(), "the FIFO is still a FIFO")
	select {
	case data := <-got:
		assert.Contains(t, string(data), `"2.1.0"`)
	case <-time.After(10 * time.Second):
		t.Fatal("the reader of the FIFO got nothing")
	}
	assert.Empty(t, tempFiles(t, dir))
}

// -o json=/dev/stdout with standard output redirected to a file (`> out`): the output goes
// through the descriptor, as the shell's would, so the file keeps it and what the process
// writes to the descriptor after; a rename onto the file the descriptor's link resolves to
// would leave the descriptor writing into a deleted file.
func TestWriteFileIntoDescriptor(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	f, err := os.Create(out)
	require.NoError(t, err)
	defer f.Close()
	fdPath := "/dev/fd/" + strconv.Itoa(int(f.Fd()))
	if _, err := os.Stat(fdPath); err != nil {
		t.Skipf("no %s here: %v", fdPath, err)
	}

	require.NoError(t, Write(&bytes.Buffer{}, []Target{{Format: JSON, Path: fdPath}}, sampleReport()))
	_, err = f.WriteString("after\n")
	require.NoError(t, err)

	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"findings"`)
	assert.True(t, strings.HasSuffix(string(data), "}\nafter\n"), "what the descriptor wrote after is in the same file: %q", data)
	assert.Empty(t, tempFiles(t, dir))
}

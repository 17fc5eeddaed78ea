//go:build unix

package decode

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadStopsOnAFIFOWithoutWriter: open(2) on a FIFO blocks until a writer comes; the read
// returns when the context ends all the same.
func TestReadStopsOnAFIFOWithoutWriter(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ReadFile(ctx, fifo, nil, 1<<20)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "reading "+fifo+" stopped")
	assert.Less(t, time.Since(start), 2*time.Second)

	_, err = ReadDocuments(ctx, fifo, nil, 1<<20)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestReadDevZeroStopsAtTheLimit(t *testing.T) {
	_, err := ReadFile(context.Background(), "/dev/zero", nil, 1<<20)
	var tl *TooLargeError
	require.ErrorAs(t, err, &tl)
	assert.Equal(t, "/dev/zero is larger than the limit of 1Mi (1048576 bytes)", err.Error())
}

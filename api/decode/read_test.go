package decode

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// endless is an input that never ends (like /dev/zero).
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestReadFileWithinAndOverTheLimit(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "values.yaml")
	require.NoError(t, os.WriteFile(file, []byte("driver: {}\n"), 0o600))
	tests := []struct {
		name    string
		path    string
		stdin   io.Reader
		limit   int64
		want    string
		tooBig  bool
		errName string
	}{
		{name: "a file within the limit", path: file, limit: 11, want: "driver: {}\n"},
		{name: "a file one byte over", path: file, limit: 10, tooBig: true, errName: file},
		{name: "stdin within the limit", path: "-", stdin: strings.NewReader("abc"), limit: 3, want: "abc"},
		{name: "stdin over the limit", path: "-", stdin: strings.NewReader("abcd"), limit: 3, tooBig: true, errName: StdinName},
		{name: "an endless stdin", path: "-", stdin: endless{}, limit: 1 << 20, tooBig: true, errName: StdinName},
		{name: "an empty stdin", path: "-", stdin: strings.NewReader(""), limit: 1, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := ReadFile(context.Background(), tt.path, tt.stdin, tt.limit)
			if !tt.tooBig {
				require.NoError(t, err)
				assert.Equal(t, tt.want, string(data))
				return
			}
			var tl *TooLargeError
			require.ErrorAs(t, err, &tl)
			assert.Equal(t, tt.errName, tl.Name)
			assert.Equal(t, tt.limit, tl.Limit)
			assert.Contains(t, err.Error(), tt.errName+" is larger than the limit of ")
		})
	}
}

// TestReadFileReadsAtMostOneBytePastTheLimit: an endless input is not read beyond the limit.
func TestReadFileReadsAtMostOneBytePastTheLimit(t *testing.T) {
	in := &countingReader{r: endless{}}
	_, err := ReadFile(context.Background(), "-", in, 100_000)
	var tl *TooLargeError
	require.ErrorAs(t, err, &tl)
	assert.LessOrEqual(t, in.n, int64(100_001))
}

func TestReadFileErrors(t *testing.T) {
	_, err := ReadFile(context.Background(), filepath.Join(t.TempDir(), "nope.yaml"), nil, 10)
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "nope.yaml")

	_, err = ReadFile(context.Background(), "-", nil, 10)
	require.ErrorContains(t, err, "standard input is not available")

	_, err = ReadFile(context.Background(), t.TempDir(), nil, 10)
	require.Error(t, err, "a directory is not a file")
}

// TestReadStopsWithTheContext: a stalled standard input (a pipe nobody writes) is interrupted
// by the context, which names its cause.
func TestReadStopsWithTheContext(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	cause := errors.New("interrupted by SIGTERM")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	start := time.Now()
	_, err := ReadFile(ctx, "-", pr, 1<<20)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, cause)
	assert.Contains(t, err.Error(), "reading <stdin> stopped: interrupted by SIGTERM")
	assert.Less(t, time.Since(start), 2*time.Second)

	// A context already done reads nothing.
	_, err = ReadFile(ctx, "-", strings.NewReader("x"), 10)
	require.ErrorIs(t, err, context.Canceled)
}

func TestReadDocumentsOverTheLimit(t *testing.T) {
	stream := strings.Repeat("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n", 100)
	_, err := ReadDocuments(context.Background(), "-", strings.NewReader(stream), 1000)
	var tl *TooLargeError
	require.ErrorAs(t, err, &tl)
	assert.Equal(t, "<stdin> is larger than the limit of 1000 bytes", err.Error(), "the file is named once")

	docs, err := ReadDocuments(context.Background(), "-", strings.NewReader(stream), int64(len(stream)))
	require.NoError(t, err)
	assert.Len(t, docs, 100)
}

func TestFormatAndParseBytes(t *testing.T) {
	assert.Equal(t, "16Mi (16777216 bytes)", FormatBytes(16<<20))
	assert.Equal(t, "1000 bytes", FormatBytes(1000))
	assert.Equal(t, "7Mi (7340032 bytes)", FormatBytes(7<<20))
	for in, want := range map[string]int64{"16Mi": 16 << 20, "1Gi": 1 << 30, "1000": 1000, " 2Ki ": 2048, "1M": 1_000_000, "0.5Ki": 512} {
		n, err := ParseBytes(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, n, in)
	}
	for _, in := range []string{"", "lots", "0", "-1Mi", "1e30"} {
		_, err := ParseBytes(in)
		assert.Error(t, err, in)
	}
}

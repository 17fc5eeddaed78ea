package action

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/decode"
)

// helmEncode stores JSON as Helm's storage drivers do: gzipped, then base64.
func helmEncode(t *testing.T, r io.Reader) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	_, err = io.Copy(gz, r)
	require.NoError(t, err)
	require.NoError(t, gz.Close())
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// bomb is a release JSON of about size bytes that gzip shrinks a thousandfold: one long value.
func bomb(size int64) io.Reader {
	head := `{"name":"x","version":1,"chart":{"metadata":{"name":"driverguard"}},"config":{"pad":"`
	return io.MultiReader(strings.NewReader(head), io.LimitReader(zeros{}, size), strings.NewReader(`"}}`))
}

// zeros reads '0' forever.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// TestDecodeRelease reads the revision formats Helm stores (gzipped, and the uncompressed
// form of old releases) and refuses a revision larger than the limit once decompressed — a
// compressed bomb — having inflated no more than the limit.
func TestDecodeRelease(t *testing.T) {
	const rel = `{"name":"driverguard","namespace":"npu","version":3,"info":{"status":"deployed"},` +
		`"chart":{"metadata":{"name":"driverguard"},"templates":[{"name":"t","data":"AAAA"}]},"config":{"driver":{"image":{"tag":"3.2.3"}}},"manifest":"---"}`
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"gzipped", helmEncode(t, strings.NewReader(rel))},
		{"uncompressed", []byte(base64.StdEncoding.EncodeToString([]byte(rel)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeRelease(t.Context(), tc.data, 1<<20)
			require.NoError(t, err)
			assert.Equal(t, "driverguard", got.Name)
			assert.Equal(t, 3, got.Version)
			assert.Equal(t, "deployed", got.Info.Status)
			assert.Equal(t, "driverguard", got.Chart.Metadata.Name)
			assert.Equal(t, map[string]any{"driver": map[string]any{"image": map[string]any{"tag": "3.2.3"}}}, got.Config)
		})
	}

	t.Run("at the limit", func(t *testing.T) {
		_, err := decodeRelease(t.Context(), helmEncode(t, strings.NewReader(rel)), int64(len(rel)))
		require.NoError(t, err, "a revision of exactly the limit is read")
		_, err = decodeRelease(t.Context(), helmEncode(t, strings.NewReader(rel)), int64(len(rel))-1)
		var tl *decode.TooLargeError
		require.ErrorAs(t, err, &tl)
	})

	t.Run("bomb", func(t *testing.T) {
		data := helmEncode(t, bomb(128<<20)) // 128 MiB of JSON in a few hundred KiB
		require.Less(t, len(data), 1<<20)
		const limit = 8 << 20
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := decodeRelease(t.Context(), data, limit)
		runtime.ReadMemStats(&after)
		var tl *decode.TooLargeError
		require.ErrorAs(t, err, &tl)
		assert.Equal(t, int64(limit), tl.Limit)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(limit), "measured, not held: a revision over the limit costs less memory than the limit")
	})

	t.Run("not a release", func(t *testing.T) {
		for _, data := range [][]byte{nil, []byte("not base64!"), helmEncode(t, strings.NewReader("[1,2"))} {
			_, err := decodeRelease(t.Context(), data, 1<<20)
			require.Error(t, err)
			var tl *decode.TooLargeError
			assert.False(t, errors.As(err, &tl))
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := decodeRelease(ctx, helmEncode(t, bomb(1<<20)), 8<<20)
		require.ErrorIs(t, err, context.Canceled)
	})
}

package imagebuild

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayerTar: the layer's tar stream is sorted, with fixed owners, modes and times, and
// equal input gives equal bytes whatever the order of the entries.
func TestLayerTar(t *testing.T) {
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	entries := rootEntries([]byte("binary"))
	raw, err := layerTar(entries, mtime)
	require.NoError(t, err)

	reversed := make([]entry, len(entries))
	for i, e := range entries {
		reversed[len(entries)-1-i] = e
	}
	again, err := layerTar(reversed, mtime)
	require.NoError(t, err)
	assert.Equal(t, raw, again, "entry order must not change the stream")

	type file struct {
		mode     int64
		uid, gid int
		typ      byte
		content  string
	}
	want := []struct {
		name string
		file
	}{
		{"driverguard", file{0o755, 0, 0, tar.TypeReg, "binary"}},
		{"etc/", file{0o755, 0, 0, tar.TypeDir, ""}},
		{"etc/group", file{0o644, 0, 0, tar.TypeReg, "root:x:0:\nnonroot:x:65532:\n"}},
		{"etc/passwd", file{0o644, 0, 0, tar.TypeReg, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"}},
		{"home/", file{0o755, 0, 0, tar.TypeDir, ""}},
		{"home/nonroot/", file{0o700, UID, UID, tar.TypeDir, ""}},
		{"tmp/", file{0o1777, 0, 0, tar.TypeDir, ""}},
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for _, w := range want {
		hdr, err := tr.Next()
		require.NoError(t, err, w.name)
		content, err := io.ReadAll(tr)
		require.NoError(t, err)
		assert.Equal(t, w.name, hdr.Name)
		assert.Equal(t, w.file, file{hdr.Mode, hdr.Uid, hdr.Gid, hdr.Typeflag, string(content)}, w.name)
		assert.Equal(t, time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC), hdr.ModTime.UTC(), w.name)
		assert.Empty(t, hdr.Uname, w.name)
		assert.Empty(t, hdr.Gname, w.name)
		assert.True(t, hdr.AccessTime.IsZero() && hdr.ChangeTime.IsZero(), w.name)
	}
	_, err = tr.Next()
	assert.ErrorIs(t, err, io.EOF)
}

// TestNewLayer: compressing is deterministic, so equal entries give the same layer digest.
func TestNewLayer(t *testing.T) {
	mtime := time.Unix(1700000000, 0)
	a, err := newLayer(rootEntries([]byte("binary")), mtime)
	require.NoError(t, err)
	b, err := newLayer(rootEntries([]byte("binary")), mtime)
	require.NoError(t, err)
	c, err := newLayer(rootEntries([]byte("other")), mtime)
	require.NoError(t, err)
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	dc, err := c.Digest()
	require.NoError(t, err)
	assert.Equal(t, da, db)
	assert.NotEqual(t, da, dc)
	mt, err := a.MediaType()
	require.NoError(t, err)
	assert.Equal(t, "application/vnd.oci.image.layer.v1.tar+gzip", string(mt))
}

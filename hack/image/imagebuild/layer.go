package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file or directory of the image's only layer. Name is relative to the root,
// without a leading or trailing slash.
type entry struct {
	name     string
	dir      bool
	mode     int64
	uid, gid int
	data     []byte
}

// rootEntries are the files of the image besides the binary: a passwd and group that name the
// non-root user (so tools and os/user resolve 65532), its home, and a sticky /tmp that the
// chart mounts an emptyDir over (the root filesystem stays read-only).
func rootEntries(binary []byte) []entry {
	return []entry{
		{name: BinaryPath[1:], mode: 0o755, data: binary},
		{name: "etc", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "home", dir: true, mode: 0o755},
		{name: "home/nonroot", dir: true, mode: 0o700, uid: UID, gid: UID},
		{name: "tmp", dir: true, mode: 0o1777},
	}
}

// layerTar writes entries as a reproducible tar stream: entries sorted by name, every header
// with the same modification time, numeric owners only, and no access or change times.
func layerTar(entries []entry, mtime time.Time) ([]byte, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range sorted {
		hdr := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime.UTC().Truncate(time.Second),
			Format:  tar.FormatUSTAR,
		}
		if e.dir {
			hdr.Typeflag, hdr.Name = tar.TypeDir, e.name+"/"
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing the tar header of %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("writing %s into the tar stream: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the tar stream: %w", err)
	}
	return buf.Bytes(), nil
}

// newLayer returns entries as a gzip-compressed OCI layer. The stream is compressed once here
// (the gzip header carries no name or time, so equal input gives equal bytes) rather than on
// every read by go-containerregistry.
func newLayer(entries []entry, mtime time.Time) (v1.Layer, error) {
	raw, err := layerTar(entries, mtime)
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	if err != nil {
		return nil, fmt.Errorf("creating the gzip writer: %w", err)
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	compressed := gz.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("creating the layer: %w", err)
	}
	return layer, nil
}

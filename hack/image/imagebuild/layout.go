package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// WriteLayout writes the index as an OCI image layout in dir, named RefName in index.json.
// The layout is written next to dir and then moved into place, so a failed write leaves the
// old layout as it was. An existing dir must be an image layout (or empty) to be replaced.
func WriteLayout(dir string, r *Result) error {
	if err := replaceable(dir); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+"-")
	if err != nil {
		return fmt.Errorf("creating a directory for the layout: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("creating a directory for the layout: %w", err)
	}
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the image layout: %w", err)
	}
	if err := p.AppendIndex(r.Index, layout.WithAnnotations(map[string]string{AnnotationRefName: r.RefName})); err != nil {
		return fmt.Errorf("writing the image index into the layout: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the old layout: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("moving the layout into place: %w", err)
	}
	return nil
}

// replaceable reports an error unless dir does not exist, is empty or is an image layout.
func replaceable(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("refusing to replace %s: it is not an OCI image layout (no oci-layout file)", dir)
	}
	return nil
}

// LoadLayout returns the image index of the layout in dir named refName, or the layout's only
// index when refName is empty.
func LoadLayout(dir, refName string) (v1.ImageIndex, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the image layout %s: %w", dir, err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s/index.json: %w", dir, err)
	}
	var found []v1.Descriptor
	for _, d := range m.Manifests {
		if !d.MediaType.IsIndex() {
			continue
		}
		if refName == "" || d.Annotations[AnnotationRefName] == refName {
			found = append(found, d)
		}
	}
	switch {
	case len(found) == 0 && refName != "":
		return nil, fmt.Errorf("the image layout %s has no index named %q", dir, refName)
	case len(found) == 0:
		return nil, fmt.Errorf("the image layout %s has no image index", dir)
	case len(found) > 1:
		return nil, fmt.Errorf("the image layout %s has %d image indexes; name one", dir, len(found))
	}
	idx, err := root.ImageIndex(found[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("reading the image index %s from %s: %w", found[0].Digest, dir, err)
	}
	return idx, nil
}

// Push uploads the index, its manifests and blobs to ref, which must name a registry and a
// tag explicitly ($REGISTRY/driverguard:0.1.0). It returns the pushed reference by digest.
func Push(ctx context.Context, idx v1.ImageIndex, ref string, opts ...remote.Option) (name.Digest, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image reference %q (want <registry>/<repository>:<tag>): %w", ref, err)
	}
	return PushTag(ctx, idx, tag, opts...)
}

// PushTag is Push to a parsed tag (name.Insecure for a registry spoken to over plain HTTP).
func PushTag(ctx context.Context, idx v1.ImageIndex, tag name.Tag, opts ...remote.Option) (name.Digest, error) {
	h, err := idx.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("computing the index digest: %w", err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	if err := remote.WriteIndex(tag, idx, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	d, err := name.NewDigest(tag.Context().String() + "@" + h.String())
	if err != nil {
		return name.Digest{}, fmt.Errorf("naming the pushed digest: %w", err)
	}
	return d, nil
}

// Package imagebuild builds the driverguard container image without a container daemon: the
// binary cross-compiled by `go build` for each platform, one reproducible layer on an empty
// base, assembled into a multi-platform OCI image index with go-containerregistry.
//
// The same commit built by the same Go toolchain gives the same index digest: the binaries
// are built from a clean checkout of the commit with -trimpath and a fixed environment, and
// every timestamp (config, history, annotations, tar headers) is the commit time unless
// Options.Created says otherwise.
package imagebuild

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

const (
	// DefaultRepository is the repository part of the reference the layout records; the
	// chart's default webhook.image.repository.
	DefaultRepository = "driverguard/driverguard"
	// DefaultSource is org.opencontainers.image.source.
	DefaultSource = "https://github.com/driverguard/driverguard"
	// DefaultPackage is the main package that becomes the image's entrypoint.
	DefaultPackage = "./cmd/driverguard"
	// ChartFile is where the default version (the chart's appVersion) is read, relative to
	// Options.Dir.
	ChartFile = "charts/driverguard/Chart.yaml"

	// BinaryPath is the binary inside the image and its entrypoint.
	BinaryPath = "/driverguard"
	// UID is the user and group the image runs as (the chart's runAsUser and runAsGroup).
	UID = 65532
)

// The OCI annotation keys the image carries, as manifest and index annotations and as config
// labels.
const (
	AnnotationTitle    = "org.opencontainers.image.title"
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationVersion  = "org.opencontainers.image.version"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationCreated  = "org.opencontainers.image.created"
	// AnnotationRefName names the index in the layout's index.json.
	AnnotationRefName = "org.opencontainers.image.ref.name"
)

// DefaultPlatforms are the platforms of the image index.
var DefaultPlatforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
}

// Options configure Build. The zero value builds the defaults from the current directory.
type Options struct {
	// Dir is the module root the binary is built in ("." when empty).
	Dir string
	// Package is the main package to build, relative to Dir (DefaultPackage when empty).
	Package string
	// Platforms of the index (DefaultPlatforms when empty). Variants are not supported.
	Platforms []v1.Platform
	// Version is org.opencontainers.image.version and the tag of the reference the layout
	// records (the appVersion of ChartFile in the source that is built when empty).
	Version string
	// Repository is the repository of the recorded reference (DefaultRepository when empty).
	Repository string
	// Source is org.opencontainers.image.source (DefaultSource when empty).
	Source string
	// Created is the time of every timestamp in the image. Zero: the commit time the binary
	// was stamped with (vcs.time), or the Unix epoch when it has none.
	Created time.Time
	// Go is the go command (from PATH when empty).
	Go string
	// WorkingTree builds the files in Dir as they are, uncommitted changes included, instead
	// of a clean checkout of Dir's HEAD commit. The revision is then what go build stamps
	// (nothing in a linked git worktree, which go build does not recognise). Dir outside a
	// git checkout, or no git command, always builds the working tree.
	WorkingTree bool
}

// PlatformImage is the image of one platform of the index.
type PlatformImage struct {
	Platform v1.Platform
	Image    v1.Image
	// SBOM is an SPDX 2.3 JSON document of the modules linked into the platform's binary.
	SBOM []byte
}

// Result is a built image index and what it was built from.
type Result struct {
	Index v1.ImageIndex
	// RefName is Repository:Version, the name the layout records for Index.
	RefName string
	// Version, Revision and Created are the values of the OCI annotations; Modified is
	// whether the binaries were built from a tree with uncommitted changes (then Revision
	// does not identify the source; only with Options.WorkingTree).
	Version  string
	Revision string
	Created  time.Time
	Modified bool
	// LeftOut is whether Dir has uncommitted changes or untracked files that the image does
	// not contain, because it was built from the commit.
	LeftOut bool
	Images  []PlatformImage
}

// Build cross-compiles the binary for every platform and assembles the image index.
func Build(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "driverguard-image-")
	if err != nil {
		return nil, fmt.Errorf("creating a build directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	src, err := checkout(ctx, o, tmp)
	if err != nil {
		return nil, err
	}
	if o.Version == "" {
		// The chart of the source that is built: with a checkout, the committed appVersion.
		if o.Version, err = chartAppVersion(filepath.Join(src.dir, ChartFile)); err != nil {
			return nil, err
		}
	}
	refName := o.Repository + ":" + o.Version
	if _, err := name.NewTag(refName, name.WeakValidation); err != nil {
		return nil, fmt.Errorf("image reference %q: %w", refName, err)
	}

	bins, err := buildBinaries(ctx, o, src, tmp)
	if err != nil {
		return nil, err
	}
	st, err := sameStamp(bins, o.Platforms)
	if err != nil {
		return nil, err
	}
	r := &Result{
		RefName:  refName,
		Version:  o.Version,
		Revision: st.revision,
		Modified: st.modified,
		Created:  o.Created.UTC(),
		LeftOut:  src.leftOut,
	}
	if r.Created.IsZero() {
		r.Created = time.Unix(0, 0).UTC()
		if st.time != "" {
			if r.Created, err = time.Parse(time.RFC3339, st.time); err != nil {
				return nil, fmt.Errorf("the binary's vcs.time %q: %w", st.time, err)
			}
			r.Created = r.Created.UTC()
		}
	}

	ann := map[string]string{
		AnnotationTitle:   "driverguard",
		AnnotationSource:  o.Source,
		AnnotationVersion: r.Version,
		AnnotationCreated: r.Created.Format(time.RFC3339),
	}
	if r.Revision != "" {
		ann[AnnotationRevision] = r.Revision
	}

	r.Images = make([]PlatformImage, len(o.Platforms))
	err = forEach(len(o.Platforms), func(i int) error {
		p := o.Platforms[i]
		img, err := platformImage(p, bins[i].data, r.Created, ann)
		if err != nil {
			return fmt.Errorf("building the %s image: %w", platform(p), err)
		}
		doc, err := sbom(bins[i].info, p, r.Version, r.Revision, o.Source, r.Created)
		if err != nil {
			return err
		}
		r.Images[i] = PlatformImage{Platform: p, Image: img, SBOM: doc}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var adds []mutate.IndexAddendum
	for _, pi := range r.Images {
		plat := pi.Platform
		adds = append(adds, mutate.IndexAddendum{Add: pi.Image, Descriptor: v1.Descriptor{Platform: &plat}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	var ok bool
	if r.Index, ok = mutate.Annotations(idx, ann).(v1.ImageIndex); !ok {
		return nil, errors.New("annotating the image index: unexpected type")
	}
	if _, err := r.Index.Digest(); err != nil {
		return nil, fmt.Errorf("computing the index digest: %w", err)
	}
	return r, nil
}

// binary is one platform's built binary and its build information.
type binary struct {
	data []byte
	info *debug.BuildInfo
}

// buildBinaries builds the binary of every platform into tmp, concurrently.
func buildBinaries(ctx context.Context, o Options, src source, tmp string) ([]binary, error) {
	bins := make([]binary, len(o.Platforms))
	err := forEach(len(o.Platforms), func(i int) error {
		p := o.Platforms[i]
		out := filepath.Join(tmp, "driverguard-"+p.OS+"-"+p.Architecture)
		if err := goBuild(ctx, o, src, p, out); err != nil {
			return err
		}
		var err error
		if bins[i].info, err = buildinfo.ReadFile(out); err != nil {
			return fmt.Errorf("reading the build information of %s: %w", out, err)
		}
		if bins[i].data, err = os.ReadFile(out); err != nil {
			return fmt.Errorf("reading the built binary: %w", err)
		}
		return nil
	})
	return bins, err
}

// sameStamp is the VCS stamp of the binaries, which must agree.
func sameStamp(bins []binary, platforms []v1.Platform) (vcsStamp, error) {
	first := stamp(bins[0].info)
	for i, b := range bins[1:] {
		if st := stamp(b.info); st != first {
			return vcsStamp{}, fmt.Errorf("the binaries of %s and %s were built from different sources (%+v, %+v)",
				platform(platforms[0]), platform(platforms[i+1]), first, st)
		}
	}
	return first, nil
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.Package == "" {
		o.Package = DefaultPackage
	}
	if len(o.Platforms) == 0 {
		o.Platforms = DefaultPlatforms
	}
	for _, p := range o.Platforms {
		if p.OS == "" || p.Architecture == "" || p.Variant != "" || p.OSVersion != "" {
			return fmt.Errorf("platform %q: want <os>/<arch>", p.String())
		}
	}
	if o.Repository == "" {
		o.Repository = DefaultRepository
	}
	if o.Source == "" {
		o.Source = DefaultSource
	}
	if o.Go == "" {
		o.Go = "go"
	}
	return nil
}

// chartAppVersion reads the appVersion of a Chart.yaml.
func chartAppVersion(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the chart's appVersion: %w", err)
	}
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return "", fmt.Errorf("reading the chart's appVersion from %s: %w", path, err)
	}
	if meta.AppVersion == "" {
		return "", fmt.Errorf("%s has no appVersion", path)
	}
	return meta.AppVersion, nil
}

// goBuild builds a static binary for p. The environment is pinned where it changes the
// output (cgo off, GOFLAGS cleared, no go.work, the default GOAMD64/GOARM64 levels) and
// -trimpath drops the build's paths. In a checkout of the commit, -buildvcs=true fails rather
// than silently leaving out the revision.
func goBuild(ctx context.Context, o Options, src source, p v1.Platform, out string) error {
	buildvcs := "-buildvcs=auto"
	if src.commit {
		buildvcs = "-buildvcs=true"
	}
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", buildvcs, "-ldflags=-s -w", "-o", out, o.Package)
	cmd.Dir = src.dir
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOFLAGS=", "GOWORK=off", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", o.Package, platform(p), err, bytes.TrimSpace(output.Bytes()))
	}
	return nil
}

// source is the directory the binaries are built in.
type source struct {
	dir string
	// commit: dir is in a clean checkout of Dir's HEAD commit; leftOut: Dir has changes that
	// the checkout does not.
	commit, leftOut bool
}

// checkout returns Dir's counterpart in a clean checkout (in tmp) of Dir's HEAD commit. A
// clone with a .git directory is also what lets go build stamp the revision when Dir is a
// linked git worktree (go build looks for a .git directory only). With Options.WorkingTree,
// no git command, or Dir outside a git checkout: Dir itself.
// Checkout is a clean checkout of dir's HEAD commit in tmp (a shared clone: git's objects are
// not copied), the directory of dir inside it, and whether dir has changes the checkout does
// not. Outside a git work tree, or without git, it is dir itself.
func Checkout(ctx context.Context, dir, tmp string) (checkoutDir string, leftOut bool, err error) {
	src, err := checkout(ctx, Options{Dir: dir}, tmp)
	return src.dir, src.leftOut, err
}

func checkout(ctx context.Context, o Options, tmp string) (source, error) {
	inPlace := source{dir: o.Dir}
	if o.WorkingTree {
		return inPlace, nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		return inPlace, nil
	}
	if inside, err := git(ctx, o.Dir, "rev-parse", "--is-inside-work-tree"); err != nil || inside != "true" {
		return inPlace, nil
	}
	var top, prefix, rev, status string
	for _, q := range []struct {
		out  *string
		args []string
	}{
		{&top, []string{"rev-parse", "--show-toplevel"}},
		{&prefix, []string{"rev-parse", "--show-prefix"}},
		{&rev, []string{"rev-parse", "--verify", "HEAD^{commit}"}},
		{&status, []string{"status", "--porcelain"}},
	} {
		var err error
		if *q.out, err = git(ctx, o.Dir, q.args...); err != nil {
			return source{}, err
		}
	}
	clone := filepath.Join(tmp, "src")
	if _, err := git(ctx, tmp, "clone", "--quiet", "--shared", "--no-checkout", top, clone); err != nil {
		return source{}, err
	}
	if _, err := git(ctx, clone, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", rev); err != nil {
		return source{}, err
	}
	return source{dir: filepath.Join(clone, filepath.FromSlash(prefix)), commit: true, leftOut: status != ""}, nil
}

// git runs a git command in dir and returns its trimmed standard output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

type vcsStamp struct {
	revision, time string
	modified       bool
}

func stamp(bi *debug.BuildInfo) vcsStamp {
	var st vcsStamp
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			st.revision = s.Value
		case "vcs.time":
			st.time = s.Value
		case "vcs.modified":
			st.modified, _ = strconv.ParseBool(s.Value)
		}
	}
	return st
}

// platformImage is the image of one platform: the binary as its entrypoint, run as 65532.
func platformImage(p v1.Platform, binary []byte, created time.Time, ann map[string]string) (v1.Image, error) {
	layer, err := newLayer(rootEntries(binary), created)
	if err != nil {
		return nil, err
	}
	cfg := &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			User:       strconv.Itoa(UID) + ":" + strconv.Itoa(UID),
			Entrypoint: []string{BinaryPath},
			WorkingDir: "/",
			Labels:     ann,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "driverguard hack/image: " + BinaryPath + ", /etc/passwd, /etc/group, /home/nonroot, /tmp",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	annotated, ok := mutate.Annotations(img, ann).(v1.Image)
	if !ok {
		return nil, errors.New("annotating the image manifest: unexpected type")
	}
	return notArtifact{annotated}, nil
}

// notArtifact keeps go-containerregistry from giving the image's index descriptor an
// artifactType (it copies the config media type there): the descriptor points to an image,
// and artifactType is for artifacts.
type notArtifact struct{ v1.Image }

func (notArtifact) ArtifactType() (string, error) { return "", nil }

// Size is the number of bytes a registry stores for the image: manifest, config and layers.
func Size(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, fmt.Errorf("reading the manifest: %w", err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, fmt.Errorf("reading the manifest: %w", err)
	}
	n := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}

func platform(p v1.Platform) string { return p.OS + "/" + p.Architecture }

// forEach runs f(0) ... f(n-1) concurrently (one per platform: the links and the layer
// compression are mostly single-threaded) and joins their errors.
func forEach(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Package image tests the container image `make image` builds: through an in-process OCI
// registry and back, its config, its platforms, the binary it runs, and that the same commit
// gives the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/cmd/driverguard/app"
	"github.com/driverguard/driverguard/hack/image/imagebuild"
)

// platformsEnv chooses the image platforms the test builds: "all" for every platform `make
// image` builds (what `make image-test` runs), a comma-separated list, or unset for this
// machine's Linux platform only — each platform is a cold cross-compile of the whole binary,
// minutes on a fresh machine, and the code that assembles the index is the same for one or two.
const platformsEnv = "DRIVERGUARD_IMAGE_PLATFORMS"

func testPlatforms(t *testing.T) []v1.Platform {
	t.Helper()
	switch env := os.Getenv(platformsEnv); env {
	case "all":
		return imagebuild.DefaultPlatforms
	case "":
		for _, p := range imagebuild.DefaultPlatforms {
			if p.OS == "linux" && p.Architecture == runtime.GOARCH {
				return []v1.Platform{p}
			}
		}
		return imagebuild.DefaultPlatforms[:1]
	default:
		var out []v1.Platform
		for _, s := range strings.Split(env, ",") {
			p, err := v1.ParsePlatform(strings.TrimSpace(s))
			require.NoError(t, err, "%s=%q", platformsEnv, env)
			out = append(out, *p)
		}
		return out
	}
}

func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles driverguard twice")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	wantRevision := headRevision(t, root)
	platforms := testPlatforms(t)
	t.Logf("platforms: %v (%s=all for every platform of make image)", platforms, platformsEnv)

	started := time.Now()
	built, err := imagebuild.Build(ctx, imagebuild.Options{Dir: root, Platforms: platforms})
	require.NoError(t, err)
	t.Logf("first build: %s", time.Since(started).Round(time.Millisecond))
	digest := mustDigest(t, built.Index)

	t.Run("reproducible", func(t *testing.T) {
		again, err := imagebuild.Build(ctx, imagebuild.Options{Dir: root, Platforms: platforms})
		require.NoError(t, err)
		assert.Equal(t, digest, mustDigest(t, again.Index), "two builds of the same commit")
	})

	// The layout names the index as the chart's default webhook image.
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	wh := ch.Values["webhook"].(map[string]any)["image"].(map[string]any)
	assert.Empty(t, wh["registry"], "chart default webhook.image.registry")
	assert.Equal(t, wh["repository"].(string)+":"+ch.AppVersion(), built.RefName, "chart default image")
	layoutDir := filepath.Join(t.TempDir(), "oci")
	require.NoError(t, imagebuild.WriteLayout(layoutDir, built))
	fromLayout, err := imagebuild.LoadLayout(layoutDir, built.RefName)
	require.NoError(t, err)
	require.Equal(t, digest, mustDigest(t, fromLayout))

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/driverguard/driverguard:" + built.Version
	pushed, err := imagebuild.Push(ctx, fromLayout, ref)
	require.NoError(t, err)
	assert.Equal(t, digest.String(), pushed.DigestStr())

	tag, err := name.NewTag(ref)
	require.NoError(t, err)
	pulled, err := remote.Index(tag, remote.WithContext(ctx))
	require.NoError(t, err)
	require.Equal(t, digest, mustDigest(t, pulled))
	im, err := pulled.IndexManifest()
	require.NoError(t, err)

	wantAnnotations := map[string]string{
		"org.opencontainers.image.source":  "https://github.com/driverguard/driverguard",
		"org.opencontainers.image.version": ch.AppVersion(),
		"org.opencontainers.image.created": built.Created.Format(time.RFC3339),
	}
	if wantRevision != "" {
		wantAnnotations["org.opencontainers.image.revision"] = wantRevision
	}
	assertContains(t, im.Annotations, wantAnnotations, "index annotations")

	var gotPlatforms, wantPlatforms []string
	for _, m := range im.Manifests {
		require.NotNil(t, m.Platform, "platform of %s", m.Digest)
		gotPlatforms = append(gotPlatforms, m.Platform.String())
	}
	for _, p := range platforms {
		wantPlatforms = append(wantPlatforms, p.String())
	}
	assert.ElementsMatch(t, wantPlatforms, gotPlatforms)

	ran := false
	for _, m := range im.Manifests {
		t.Run(m.Platform.String(), func(t *testing.T) {
			img, err := pulled.Image(m.Digest)
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, m.Platform.OS, cfg.OS)
			assert.Equal(t, m.Platform.Architecture, cfg.Architecture)
			assert.Equal(t, "65532:65532", cfg.Config.User)
			assert.Equal(t, []string{"/driverguard"}, cfg.Config.Entrypoint, "the chart passes only args (serve ...)")
			assert.Empty(t, cfg.Config.Cmd)
			assert.Equal(t, built.Created, cfg.Created.UTC())
			assertContains(t, cfg.Config.Labels, wantAnnotations, "config labels")
			manifest, err := img.Manifest()
			require.NoError(t, err)
			assertContains(t, manifest.Annotations, wantAnnotations, "manifest annotations")

			files := layerFiles(t, img)
			assert.Equal(t, []string{"driverguard", "etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/", "tmp/"}, files.names)
			assert.Contains(t, files.content["etc/passwd"], "nonroot:x:65532:65532:")
			bin := files.content["driverguard"]
			require.NotEmpty(t, bin)

			if runtime.GOOS != m.Platform.OS || runtime.GOARCH != m.Platform.Architecture {
				return
			}
			ran = true
			got := runVersion(ctx, t, bin)
			assert.Equal(t, wantRevision, got.Revision, "driverguard version names the image's revision")
			assert.Equal(t, m.Platform.String(), got.Platform)
			assert.False(t, got.Modified, "built from a clean checkout of the commit")
			if wantRevision != "" {
				assert.Equal(t, built.Created.Format(time.RFC3339), got.Time, "the image's timestamps are the commit time")
			}
		})
	}
	if slices.ContainsFunc(platforms, func(p v1.Platform) bool { return p.OS == runtime.GOOS && p.Architecture == runtime.GOARCH }) {
		assert.True(t, ran, "the binary of this machine's platform was run")
	}
}

// headRevision is the commit the builder checks out, "" when root is not a git checkout
// (then the image has no revision).
func headRevision(t *testing.T, root string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("no git: expecting an image without a revision")
		return ""
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "HEAD^{commit}").Output()
	if err != nil {
		t.Logf("not a git checkout (%v): expecting an image without a revision", err)
		return ""
	}
	return strings.TrimSpace(string(out))
}

func mustDigest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	h, err := idx.Digest()
	require.NoError(t, err)
	return h
}

func assertContains(t *testing.T, got, want map[string]string, what string) {
	t.Helper()
	for k, v := range want {
		assert.Equal(t, v, got[k], "%s: %s", what, k)
	}
}

type layer struct {
	names   []string
	content map[string]string
}

// layerFiles reads the image's only layer.
func layerFiles(t *testing.T, img v1.Image) layer {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	out := layer{content: map[string]string{}}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out.names = append(out.names, hdr.Name)
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			out.content[hdr.Name] = string(data)
		}
	}
}

// runVersion runs `driverguard version -o json` with the binary taken from the image.
func runVersion(ctx context.Context, t *testing.T, bin string) app.BuildInfo {
	t.Helper()
	path := filepath.Join(t.TempDir(), "driverguard")
	require.NoError(t, os.WriteFile(path, []byte(bin), 0o755))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "version", "-o", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	var bi app.BuildInfo
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&bi), "output: %s", stdout.String())
	return bi
}

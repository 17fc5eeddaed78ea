package lifecycle

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/test/releasekey"
)

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// TestRelease (#46) runs `make release` against a loopback registry that wants basic auth,
// with only the credentials `helm registry login` stored (no Docker config), and consumes
// the release as users do: `helm pull --verify` of the chart (Helm 3 and 4), `helm show
// chart` with its Artifact Hub annotations, the image's manifest in the registry, `helm
// install` from the OCI chart on a real API server with the pushed image as the webhook's,
// and the signed plugin packages installed by Helm 4 with --keyring (no --verify=false), the
// Helm 3 one from its URL. A wrong key, a tampered package and no keyring are refused.
func TestRelease(t *testing.T) {
	requireEnv(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not found")
	}
	const version = "0.0.0-test"
	user, pass := "releaser", "rel-"+hex.EncodeToString(randomBytes(t, 8))
	reg := registrytest.New(t, user, pass, false)
	repo := reg.Host + "/driverguard-test"
	dir := t.TempDir()
	key := releasekey.New(t, "driverguard test releases", true)
	other := releasekey.New(t, "someone else", false)
	out := filepath.Join(dir, "out")
	platform := "linux/" + runtime.GOARCH

	h3, h4 := newHelm(t, "release-helm3", "helm"), newHelm(t, "release-helm4", "helm4")
	registryConfig := filepath.Join(dir, "registry.json") // Helm's registry config, shared by both helms
	for _, h := range []*helm{h3, h4} {
		// A cache of its own: Helm 3 caches a downloaded plugin under HELM_CACHE_HOME/plugins,
		// which newHelm's shared home makes HELM_PLUGINS.
		h.env = append(h.env, "HELM_REGISTRY_CONFIG="+registryConfig, "HOME="+h.home, "DOCKER_CONFIG="+filepath.Join(h.home, "docker"),
			"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"))
	}
	login := exec.Command(h3.bin, "registry", "login", reg.Host, "--username", user, "--password-stdin", "--plain-http")
	login.Env = append(os.Environ(), "HELM_REGISTRY_CONFIG="+registryConfig, "HOME="+h3.home)
	login.Stdin = strings.NewReader(pass)
	got, err := login.CombinedOutput()
	require.NoError(t, err, "helm registry login:\n%s", got)

	// The release.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	mk := exec.CommandContext(ctx, "make", "--no-print-directory", "release",
		"VERSION="+version, "REGISTRY="+repo, "SIGN_KEY="+key.Name, "SIGN_KEYRING="+key.Secring,
		"SIGN_PASSPHRASE_FILE="+key.Passphrase, "OUT="+out, "PLATFORMS="+platform, "IMAGE_PLATFORMS="+platform, "ALLOW_DIRTY=1")
	mk.Dir = suite.root
	// Only Helm's registry config holds the credentials: no Docker config to fall back on.
	mk.Env = append(os.Environ(), "HELM_REGISTRY_CONFIG="+registryConfig, "DOCKER_CONFIG="+filepath.Join(dir, "no-docker"))
	var stdout, stderr bytes.Buffer
	mk.Stdout, mk.Stderr = &stdout, &stderr
	require.NoError(t, mk.Run(), "make release:\n%s\n%s", stdout.String(), stderr.String())
	t.Logf("make release:\n%s", stdout.String())
	assert.Contains(t, stdout.String(), "released driverguard "+version)
	assert.NotContains(t, stdout.String()+stderr.String(), pass, "the registry password in make release's output")

	// OUT: the chart and its provenance, the plugins (Helm 4's with .prov), SBOMs, and
	// SHA256SUMS over all of them.
	goos := runtime.GOOS + "-" + runtime.GOARCH
	for _, f := range []string{
		"driverguard-" + version + ".tgz", "driverguard-" + version + ".tgz.prov",
		"driverguard-" + version + "-" + goos + ".tgz", "driverguard-" + version + "-" + goos + ".tgz.prov",
		"driverguard-check-" + version + "-" + goos + ".tgz", "driverguard-check-" + version + "-" + goos + ".tgz.prov",
		"driverguard-helm3-" + version + "-" + goos + ".tgz",
		"driverguard-" + version + "-" + goos + ".spdx.json", "driverguard-image-" + version + "-" + goos + ".spdx.json",
	} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	sums := checkSums(t, out)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, sums, len(entries)-1, "SHA256SUMS lists every other file of OUT")
	var sbom struct {
		SPDXVersion string
		Packages    []struct{ Name string }
	}
	data, err := os.ReadFile(filepath.Join(out, "driverguard-"+version+"-"+goos+".spdx.json"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &sbom))
	assert.Equal(t, "SPDX-2.3", sbom.SPDXVersion)
	assert.Greater(t, len(sbom.Packages), 10, "the plugin binary's SBOM lists its modules")

	chartRef := "oci://" + repo + "/charts/driverguard"
	image := repo + "/driverguard:" + version

	// helm pull --verify, under both Helms; another key is refused.
	for _, h := range []*helm{h3, h4} {
		dest, refused := filepath.Join(h.home, "pulled"), filepath.Join(h.home, "refused")
		require.NoError(t, os.Mkdir(dest, 0o755))
		require.NoError(t, os.Mkdir(refused, 0o755))
		got, err := h.run("pull", chartRef, "--version", version, "--verify", "--keyring", key.Pubring, "--plain-http", "-d", dest)
		require.NoError(t, err, "%s pull --verify:\n%s", h.name, got)
		assert.FileExists(t, filepath.Join(dest, "driverguard-"+version+".tgz.prov"))
		got, err = h.run("pull", chartRef, "--version", version, "--verify", "--keyring", other.Pubring, "--plain-http", "-d", refused)
		require.Error(t, err, "%s pull --verify with another key's keyring:\n%s", h.name, got)
		assert.Contains(t, got, "signature made by unknown entity", "%s pull --verify with another key's keyring", h.name)
	}

	// helm show chart: version, appVersion and the Artifact Hub annotations, the pushed image.
	got2, err := h4.run("show", "chart", chartRef, "--version", version, "--plain-http")
	require.NoError(t, err, "helm show chart:\n%s", got2)
	var shown struct {
		Version, AppVersion string
		Annotations         map[string]string
	}
	require.NoError(t, yaml.Unmarshal([]byte(got2), &shown))
	assert.Equal(t, version, shown.Version)
	assert.Equal(t, version, shown.AppVersion)
	for _, a := range []string{"artifacthub.io/images", "artifacthub.io/license", "artifacthub.io/crds"} {
		assert.NotEmpty(t, shown.Annotations[a], a)
	}
	assert.Contains(t, shown.Annotations["artifacthub.io/images"], "image: "+image)
	assert.Equal(t, "true", shown.Annotations["artifacthub.io/prerelease"])

	// The image: its index is in the registry, for the credentials only.
	ref, err := name.ParseReference(image)
	require.NoError(t, err)
	idx, err := remote.Index(ref, remote.WithContext(t.Context()), remote.WithAuth(&authn.Basic{Username: user, Password: pass}))
	require.NoError(t, err, "the image index %s", image)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	assert.Equal(t, platform, im.Manifests[0].Platform.OS+"/"+im.Manifests[0].Platform.Architecture)
	digest, err := idx.Digest()
	require.NoError(t, err)
	assert.Contains(t, stdout.String(), digest.String(), "make release names the image's digest")
	_, err = remote.Index(ref, remote.WithContext(t.Context()))
	require.Error(t, err, "the registry wants credentials")

	// The chart's manifest is the digest make release printed.
	chartTag, err := name.ParseReference(repo + "/charts/driverguard:" + version)
	require.NoError(t, err)
	head, err := remote.Head(chartTag, remote.WithContext(t.Context()), remote.WithAuth(&authn.Basic{Username: user, Password: pass}))
	require.NoError(t, err, "the chart's manifest")
	assert.Contains(t, stdout.String(), "charts/driverguard:"+version+"@"+head.Digest.String(), "make release names the chart's digest")

	// helm install from the OCI chart: the webhook runs the released image.
	c := newClient(t)
	for _, h := range []*helm{h3, h4} {
		ns, rel := "release-"+h.name, "rel-"+strings.TrimPrefix(h.name, "release-")
		got, err := h.run("install", rel, chartRef, "--version", version, "--plain-http", "--namespace", ns, "--create-namespace", "--timeout", "60s")
		require.NoError(t, err, "%s install from %s:\n%s", h.name, chartRef, got)
		var d appsv1.Deployment
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: rel + "-driverguard-webhook"}, &d))
		assert.Equal(t, image, d.Spec.Template.Spec.Containers[0].Image, "the released chart's default webhook image is the pushed one")
		got, err = h.run("uninstall", rel, "--namespace", ns, "--timeout", "60s")
		require.NoError(t, err, "%s uninstall:\n%s", h.name, got)
	}

	// The plugins. Helm 4 verifies each signed package with --keyring.
	for _, p := range []string{"driverguard", "driverguard-check"} {
		pkg := filepath.Join(out, p+"-"+version+"-"+goos+".tgz")
		got, err := h4.run("plugin", "install", pkg, "--keyring", key.Pubring)
		require.NoError(t, err, "helm4 plugin install %s --keyring:\n%s", filepath.Base(pkg), got)
	}
	got3, err := h4.run("plugin", "list")
	require.NoError(t, err)
	for _, line := range strings.Split(got3, "\n") {
		if strings.HasPrefix(line, "driverguard") {
			assert.Contains(t, line, "signed", "helm plugin list: %q", line)
			assert.NotContains(t, line, "unsigned", "helm plugin list: %q", line)
		}
	}
	got3, err = h4.run("driverguard", "--help")
	require.NoError(t, err, "helm4 driverguard --help:\n%s", got3)
	assert.Contains(t, got3, "driverguard")

	// Refused: another key, no keyring (HOME has no ~/.gnupg/pubring.gpg), a tampered package.
	pkg := filepath.Join(out, "driverguard-"+version+"-"+goos+".tgz")
	fresh := newHelm(t, "release-refused", "helm4")
	fresh.env = append(fresh.env, "HOME="+fresh.home)
	got4, err := fresh.run("plugin", "install", pkg, "--keyring", other.Pubring)
	require.Error(t, err, "another key's keyring:\n%s", got4)
	assert.Contains(t, got4, "signature made by unknown entity")
	got4, err = fresh.run("plugin", "install", pkg)
	require.Error(t, err, "no keyring:\n%s", got4)
	assert.Contains(t, got4, "pubring.gpg: no such file")
	tampered := filepath.Join(fresh.home, "tampered")
	require.NoError(t, os.Mkdir(tampered, 0o755))
	data, err = os.ReadFile(pkg)
	require.NoError(t, err)
	prov, err := os.ReadFile(pkg + ".prov")
	require.NoError(t, err)
	data[len(data)-1] ^= 0xff
	require.NoError(t, os.WriteFile(filepath.Join(tampered, filepath.Base(pkg)), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tampered, filepath.Base(pkg))+".prov", prov, 0o644))
	got4, err = fresh.run("plugin", "install", filepath.Join(tampered, filepath.Base(pkg)), "--keyring", key.Pubring)
	require.Error(t, err, "a tampered package:\n%s", got4)
	assert.Contains(t, got4, "sha256 sum does not match")
	got4, err = fresh.run("plugin", "list")
	require.NoError(t, err)
	assert.NotContains(t, got4, "driverguard", "nothing refused was installed")

	// Helm 3 (no plugin signatures) installs its tarball from the URL it is published at.
	url := serveDir(t, out) + "/driverguard-helm3-" + version + "-" + goos + ".tgz"
	got5, err := h3.run("plugin", "install", url)
	require.NoError(t, err, "helm plugin install %s:\n%s", url, got5)
	got5, err = h3.run("driverguard", "--help")
	require.NoError(t, err, "helm driverguard --help:\n%s", got5)
}

// checkSums checks OUT/SHA256SUMS as `sha256sum -c` does and returns the files it lists.
func checkSums(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	require.NoError(t, err)
	defer f.Close()
	var files []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, "SHA256SUMS line %q", sc.Text())
		data, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		h := sha256.Sum256(data)
		assert.Equal(t, hex.EncodeToString(h[:]), sum, file)
		files = append(files, file)
	}
	require.NoError(t, sc.Err())
	return files
}

// serveDir serves dir over HTTP on loopback until the test ends (a release's download page).
func serveDir(t *testing.T, dir string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	files := http.FileServer(http.Dir(dir))
	// Helm 3 tells an archive by its Content-Type (application/gzip), as web servers that
	// publish releases send it.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".tgz") {
			w.Header().Set("Content-Type", "application/gzip")
		}
		files.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

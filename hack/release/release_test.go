package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/provenance"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/test/releasekey"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func fullEnv(over map[string]string) map[string]string {
	m := map[string]string{"VERSION": "1.2.3", "REGISTRY": "registry.example:5000/platform", "SIGN_KEY": "k", "SIGN_KEYRING": "secring.gpg"}
	for k, v := range over {
		if v == "-" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// TestConfigFromEnv: each wrong input is wrong usage naming its variable and the fix.
func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // in the error; "" for none
	}{
		{"valid", nil, ""},
		{"valid loopback", map[string]string{"REGISTRY": "127.0.0.1:5000"}, ""},
		{"valid localhost", map[string]string{"REGISTRY": "localhost/charts-team"}, ""},
		{"prerelease and build", map[string]string{"VERSION": "1.2.3-rc.1+build.7"}, ""},
		{"missing", map[string]string{"VERSION": "-", "SIGN_KEY": "-"}, "VERSION, SIGN_KEY not set"},
		{"leading v", map[string]string{"VERSION": "v1.2.3"}, `VERSION="v1.2.3" is not a SemVer 2 version`},
		{"two parts", map[string]string{"VERSION": "1.2"}, "is not a SemVer 2 version"},
		{"scheme", map[string]string{"REGISTRY": "oci://registry.example/platform"}, "without a scheme"},
		{"tag", map[string]string{"REGISTRY": "registry.example/platform:1.0"}, "without a tag or digest"},
		{"digest", map[string]string{"REGISTRY": "registry.example/platform@sha256:00"}, "without a tag or digest"},
		{"upper case", map[string]string{"REGISTRY": "registry.example/Platform"}, "is not an image repository"},
		{"no host", map[string]string{"REGISTRY": "platform/charts"}, `"platform" is not a registry host`},
		{"image platform", map[string]string{"IMAGE_PLATFORMS": "darwin/arm64"}, "the image is Linux only"},
		{"port", map[string]string{"REGISTRY": "registry.example:99999/platform"}, `port "99999" is not a port number`},
		{"trailing slashes", map[string]string{"REGISTRY": "registry.example/platform//"}, ""},
		{"no image platform", map[string]string{"IMAGE_PLATFORMS": ","}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := configFromEnv(env(fullEnv(tt.env)), t.TempDir())
			if tt.want == "" {
				require.NoError(t, err)
				assert.NotEmpty(t, c.imagePlatforms)
				assert.True(t, filepath.IsAbs(c.out) && filepath.IsAbs(c.signKeyring))
				return
			}
			require.Error(t, err)
			assert.IsType(t, usageError{}, err, "wrong usage: exit code 2")
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestImageReference: the chart's webhook.image takes the registry host and the path apart;
// SemVer build metadata becomes "_" in tags, as Helm pushes charts.
func TestImageReference(t *testing.T) {
	for _, tt := range []struct{ registry, version, host, repo, image string }{
		{"registry.example:5000/platform/tools", "1.2.3", "registry.example:5000", "platform/tools/driverguard", "registry.example:5000/platform/tools/driverguard:1.2.3"},
		{"127.0.0.1:5000", "1.2.3+b.1", "127.0.0.1:5000", "driverguard", "127.0.0.1:5000/driverguard:1.2.3_b.1"},
	} {
		c := config{registry: tt.registry, version: tt.version}
		host, repo := c.imageRepository()
		assert.Equal(t, tt.host, host)
		assert.Equal(t, tt.repo, repo)
		assert.Equal(t, tt.image, c.image())
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:5000": true, "127.1.2.3": true, "localhost:5000": true, "localhost": true, "[::1]:5000": true,
		"10.0.0.1:5000": false, "registry.example": false, "localhost.example:5000": false, "[2001:db8::1]:5000": false,
	} {
		assert.Equal(t, want, loopback(host), host)
	}
}

// TestReleaseChart: the released chart is the repository's but for version, appVersion, the
// default webhook image (values.yaml keeps its comments) and Artifact Hub's images,
// prerelease and signKey; its values still pass the chart's schema.
func TestReleaseChart(t *testing.T) {
	root := filepath.Join("..", "..")
	c := config{registry: "registry.example:5000/platform", version: "2.0.0-rc.1", signKeyURL: "https://keys.example/driverguard.asc"}
	c.imagePlatforms = append(c.imagePlatforms, defaultImagePlatforms()...)
	ch, err := releaseChart(root, c, "ABCDEF")
	require.NoError(t, err)
	assert.Equal(t, "2.0.0-rc.1", ch.Metadata.Version)
	assert.Equal(t, "2.0.0-rc.1", ch.Metadata.AppVersion)
	assert.Contains(t, ch.Metadata.Annotations[annotationImages], "image: registry.example:5000/platform/driverguard:2.0.0-rc.1")
	assert.Equal(t, "true", ch.Metadata.Annotations[annotationPrerelease])
	var key map[string]string
	require.NoError(t, yaml.Unmarshal([]byte(ch.Metadata.Annotations[annotationSignKey]), &key))
	assert.Equal(t, map[string]string{"fingerprint": "ABCDEF", "url": "https://keys.example/driverguard.asc"}, key)

	img, err := chartutil.Values(ch.Values).Table("webhook.image")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"registry": "registry.example:5000", "repository": "platform/driverguard", "tag": "2.0.0-rc.1", "pullPolicy": "IfNotPresent"}, map[string]any(img))
	var raw []byte
	for _, f := range ch.Raw {
		if f.Name == chartutil.ValuesfileName {
			raw = f.Data
		}
	}
	orig, err := os.ReadFile(filepath.Join(root, "charts", "driverguard", "values.yaml"))
	require.NoError(t, err)
	assert.Equal(t, strings.Count(string(orig), "#"), strings.Count(string(raw), "#"), "values.yaml keeps its comments")

	final, err := releaseChart(root, config{registry: "registry.example", version: "2.0.0", imagePlatforms: defaultImagePlatforms()}, "ABCDEF")
	require.NoError(t, err)
	assert.NotContains(t, final.Metadata.Annotations, annotationPrerelease)
	assert.NotContains(t, final.Metadata.Annotations, annotationSignKey, "no SIGN_KEY_URL, no signKey (Artifact Hub needs both)")

	// A registry the chart's schema refuses (an IPv6 address, an empty path segment) is wrong
	// usage, found before anything is built.
	for _, registry := range []string{"[::1]:5000", "registry.example//platform", "registry.example/-platform"} {
		_, err = releaseChart(root, config{registry: registry, version: "2.0.0", imagePlatforms: defaultImagePlatforms()}, "ABCDEF")
		require.Error(t, err, registry)
		assert.IsType(t, usageError{}, err)
		assert.Contains(t, err.Error(), "REGISTRY=")
		assert.Contains(t, err.Error(), "values schema refuses")
	}
}

func TestReleaseValuesNeedsTheDefaultImage(t *testing.T) {
	_, err := releaseValues([]byte("webhook:\n  image:\n    registry: elsewhere\n"), config{registry: "r.example", version: "1.0.0"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "found the default webhook image")
}

func defaultImagePlatforms() []v1.Platform {
	c, _ := configFromEnv(env(fullEnv(nil)), ".")
	return c.imagePlatforms
}

// TestNewSigner: a release never prompts; each way the key cannot sign says why.
func TestNewSigner(t *testing.T) {
	k := releasekey.New(t, "driverguard releases", true)
	secring, pubring, passFile := k.Secring, k.Pubring, k.Passphrase
	pass, err := os.ReadFile(passFile)
	require.NoError(t, err)
	plain := releasekey.New(t, "plain key", false).Secring
	wrongPass := filepath.Join(t.TempDir(), "wrong")
	require.NoError(t, os.WriteFile(wrongPass, []byte("guess\n"), 0o600))

	s, err := newSigner(secring, "driverguard releases", passFile)
	require.NoError(t, err)
	assert.Len(t, s.fingerprint, 40)
	_, err = newSigner(plain, "plain key", "")
	require.NoError(t, err, "a key without a passphrase needs no file")

	for _, tt := range []struct{ keyring, key, pass, want string }{
		{secring, "someone else", passFile, `SIGN_KEY="someone else" names no key`},
		{pubring, "driverguard releases", passFile, "holds only the public part"},
		{secring, "driverguard releases", "", "set SIGN_PASSPHRASE_FILE"},
		{secring, "driverguard releases", wrongPass, "unlocking the key"},
		{filepath.Join(t.TempDir(), "absent.gpg"), "k", "", "SIGN_KEYRING"},
	} {
		_, err := newSigner(tt.keyring, tt.key, tt.pass)
		require.Error(t, err, tt.want)
		assert.Contains(t, err.Error(), tt.want)
		assert.NotContains(t, err.Error(), strings.TrimSpace(string(pass)))
	}
}

// TestSignPlugin: the .prov is clear-signed by the key and states the tarball's SHA-256
// under its published name and under the name Helm 4 keeps it as.
func TestSignPlugin(t *testing.T) {
	k := releasekey.New(t, "driverguard releases", false)
	s, err := newSigner(k.Secring, "driverguard releases", "")
	require.NoError(t, err)
	dir := t.TempDir()
	tgz := filepath.Join(dir, "driverguard-1.2.3-linux-arm64.tgz")
	require.NoError(t, os.WriteFile(tgz, tarball(t, map[string]string{
		"driverguard/plugin.yaml":     "apiVersion: v1\nname: driverguard\nversion: 1.2.3\n",
		"driverguard/bin/driverguard": "binary",
	}), 0o644))
	require.NoError(t, s.signPlugin(tgz))

	prov, err := os.ReadFile(tgz + ".prov")
	require.NoError(t, err)
	block, _ := clearsign.Decode(prov)
	require.NotNil(t, block, "a clear-signed message")
	pub, err := os.Open(k.Pubring)
	require.NoError(t, err)
	defer pub.Close()
	ring, err := openpgp.ReadKeyRing(pub)
	require.NoError(t, err)
	_, err = block.VerifySignature(ring, nil)
	require.NoError(t, err, "signed by the key")

	parts := bytes.SplitN(block.Plaintext, []byte("\n...\n"), 2)
	require.Len(t, parts, 2)
	assert.Contains(t, string(parts[0]), "name: driverguard", "the plugin's metadata")
	var sums provenance.SumCollection
	require.NoError(t, yaml.Unmarshal(parts[1], &sums))
	data, err := os.ReadFile(tgz)
	require.NoError(t, err)
	h := sha256.Sum256(data)
	want := "sha256:" + hex.EncodeToString(h[:])
	assert.Equal(t, map[string]string{"driverguard-1.2.3-linux-arm64.tgz": want, "driverguard-1.2.3.tgz": want}, sums.Files)

	bad := filepath.Join(dir, "bad.tgz")
	require.NoError(t, os.WriteFile(bad, tarball(t, map[string]string{"driverguard/bin/driverguard": "x"}), 0o644))
	err = s.signPlugin(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plugin.yaml")
	assert.NoFileExists(t, bad+".prov")
}

func TestEmptyDirAndSums(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, emptyDir(filepath.Join(dir, "new")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.tgz"), []byte("b"), 0o644))
	err := emptyDir(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not empty")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.tgz"), []byte("a"), 0o644))
	files, err := writeSums(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.tgz", "b.tgz", "SHA256SUMS"}, files, "files, not directories")
	got, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	require.NoError(t, err)
	ha, hb := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	assert.Equal(t, hex.EncodeToString(ha[:])+"  a.tgz\n"+hex.EncodeToString(hb[:])+"  b.tgz\n", string(got), "sha256sum -c reads it")
}

// tarball is a gzipped tarball of files (name → content).
func tarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, content := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// TestCheckPush: before anything is built, the registry is asked whether the credentials of
// helm registry login may push; without them the error says which login stores them, and
// where. A loopback registry is asked over plain HTTP, under any of its names.
func TestCheckPush(t *testing.T) {
	reg := registrytest.New(t, "releaser", "pa55-w0rd", false)
	_, port, err := net.SplitHostPort(reg.Host)
	require.NoError(t, err)
	dir := t.TempDir()
	none, err := loadHelmKeychain(filepath.Join(dir, "absent.json"))
	require.NoError(t, err)
	t.Setenv("DOCKER_CONFIG", filepath.Join(dir, "no-docker"))

	for _, host := range []string{reg.Host, "localhost:" + port} {
		refs := []string{host + "/team/driverguard:1.2.3", host + "/team/charts/driverguard:1.2.3"}
		err = checkPush(t.Context(), refs, none, true)
		require.Error(t, err, host)
		assert.Contains(t, err.Error(), "may not push to "+refs[0])
		assert.Contains(t, err.Error(), "helm registry login "+host+" --plain-http")
		assert.Contains(t, err.Error(), filepath.Join(dir, "absent.json"))

		cfg := filepath.Join(dir, strings.ReplaceAll(host, ":", "_")+".json")
		require.NoError(t, os.WriteFile(cfg, []byte(`{"auths":{"`+host+`":{"auth":"`+registrytest.BasicAuth("releaser", "pa55-w0rd")+`"}}}`), 0o600))
		kc, err := loadHelmKeychain(cfg)
		require.NoError(t, err)
		require.NoError(t, checkPush(t.Context(), refs, kc, true), host)
	}
}

// TestSourceIsTheCommit: a release refuses uncommitted changes and builds from a clean
// checkout of HEAD, so an untracked file (a local secret next to the chart) is never released.
func TestSourceIsTheCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	root := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "charts", "driverguard"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "charts", "driverguard", "Chart.yaml"), []byte("name: driverguard\n"), 0o644))
	git("add", ".")
	git("commit", "-qm", "chart")
	require.NoError(t, os.WriteFile(filepath.Join(root, "charts", "driverguard", "my-secrets.yaml"), []byte("password: hunter2\n"), 0o600))

	changes, err := dirty(root)
	require.NoError(t, err)
	assert.Empty(t, changes, "an untracked file is no change of the commit")
	r := &releaser{root: root}
	src, cleanup, err := r.source(t.Context())
	require.NoError(t, err)
	defer cleanup()
	assert.NotEqual(t, root, src)
	assert.FileExists(t, filepath.Join(src, "charts", "driverguard", "Chart.yaml"))
	assert.NoFileExists(t, filepath.Join(src, "charts", "driverguard", "my-secrets.yaml"), "untracked files are not released")

	require.NoError(t, os.WriteFile(filepath.Join(root, "charts", "driverguard", "Chart.yaml"), []byte("name: changed\n"), 0o644))
	changes, err = dirty(root)
	require.NoError(t, err)
	assert.Contains(t, changes, "charts/driverguard/Chart.yaml")
	r.cfg = config{out: filepath.Join(t.TempDir(), "out")}
	_, err = r.release(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "uncommitted changes")
}

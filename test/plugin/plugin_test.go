// Package plugin tests driverguard as Helm plugins (README.md "Helm plugin") with the real helm binaries:
// the tarballs `make plugin` writes (hack/plugin.sh, for this machine's platform), installed
// offline into empty Helm homes by bin/helm4 (Helm 4.3.1) and bin/helm (Helm 3.22.0), then
// `helm driverguard check|plan` and `helm template --post-renderer` through each.
package plugin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/test/controlplane"
	"github.com/driverguard/driverguard/test/releasekey"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

const releaseName = "dg"

// identicalSelectors renders two RBLNDrivers with the same nodeSelector: IdenticalNodeSelector.
const identicalSelectors = `driver:
  image:
    tag: "3.2.2"
  instances:
    a:
      image: {tag: "3.3.0"}
      nodeSelector: {rebellions.ai/npu.family: atom}
    b:
      image: {tag: "3.3.1"}
      nodeSelector: {rebellions.ai/npu.family: atom}
`

// twoClusters is a kubeconfig of two contexts whose API servers refuse connections at once.
const twoClusters = `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://127.0.0.1:1"}
- name: two
  cluster: {server: "https://127.0.0.1:2"}
users:
- name: u
  user: {token: t}
contexts:
- name: one
  context: {cluster: one, user: u}
- name: two
  context: {cluster: two, user: u}
current-context: one
`

// suite is what every subtest shares: the repository, the helm binaries, the tarballs.
type suite struct {
	root, helm3, helm4 string
	version            string
	dist               string // the tarballs
	chart              string
	good, identical    string // values files
	rollout            string // values that pass with a warning (examples/rollout.yaml)
	nodes              string
	pubring            string // the public key of the signed packages
}

// signer names the throwaway key of the signed packages.
const signer = "driverguard test signer"

func (s *suite) tarball(name string) string {
	return filepath.Join(s.dist, fmt.Sprintf("%s-%s-%s-%s.tgz", name, s.version, runtime.GOOS, runtime.GOARCH))
}

func TestHelmPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds driverguard and installs it into Helm 3 and Helm 4")
	}
	s := newSuite(t)
	t.Run("tarballs", s.testTarballs)
	t.Run("helm4", s.testHelm4)
	t.Run("helm3", s.testHelm3)
	t.Run("signed", s.testSigned)
	t.Run("live", s.testLive)
}

func newSuite(t *testing.T) *suite {
	root, err := controlplane.RepoRoot()
	require.NoError(t, err)
	s := &suite{root: root, helm3: filepath.Join(root, "bin", "helm"), helm4: filepath.Join(root, "bin", "helm4")}
	for _, b := range []string{s.helm3, s.helm4} {
		if _, err := os.Stat(b); err != nil {
			t.Skipf("%s is missing: run make tools (hack/tools.sh helm builds helm v3 and v4 from the Go module proxy; make test does)", b)
		}
	}
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	s.version = ch.AppVersion()
	s.chart = filepath.Join(root, "charts", "driverguard")
	s.good = filepath.Join(root, "examples", "multi-driver.yaml")
	s.rollout = filepath.Join(root, "examples", "rollout.yaml")
	s.nodes = filepath.Join(root, "examples", "nodes.yaml")
	s.identical = filepath.Join(t.TempDir(), "identical.yaml")
	require.NoError(t, os.WriteFile(s.identical, []byte(identicalSelectors), 0o600))

	// make plugin, for this platform only: the binary is built once for every tarball, and a
	// throwaway key signs the Helm 4 ones (make plugin SIGN_KEY=...).
	s.dist = t.TempDir()
	key := releasekey.New(t, signer, true)
	s.pubring = key.Pubring
	env := append(os.Environ(), "OUT="+s.dist, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "VERSION=",
		"SIGN_KEY="+signer, "SIGN_KEYRING="+key.Secring, "SIGN_PASSPHRASE_FILE="+key.Passphrase)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "plugin.sh"))
	cmd.Env = env
	started := time.Now()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "hack/plugin.sh:\n%s", out)
	t.Logf("hack/plugin.sh for %s/%s: %s\n%s", runtime.GOOS, runtime.GOARCH, time.Since(started).Round(time.Millisecond), out)
	return s
}

// helmHome is an empty Helm home, a cluster nowhere, and nothing of the user's environment
// that Helm or client-go would read.
type helmHome struct {
	dir string
	env []string
}

func newHelmHome(t *testing.T) *helmHome {
	t.Helper()
	dir := t.TempDir()
	h := &helmHome{dir: dir}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "HELM_") || name == "KUBECONFIG" || name == "HOME" || strings.HasPrefix(name, "KUBERNETES_") {
			continue
		}
		h.env = append(h.env, kv)
	}
	h.env = append(h.env,
		"HOME="+filepath.Join(dir, "home"),
		"HELM_DATA_HOME="+filepath.Join(dir, "data"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"),
		"HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"KUBECONFIG="+filepath.Join(dir, "no-kubeconfig"),
	)
	return h
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs bin args... with the home's environment and extra variables.
func (h *helmHome) run(t *testing.T, stdin string, extraEnv []string, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(slices.Clone(h.env), extraEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err, "%s %s", bin, strings.Join(args, " "))
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// entries lists a tarball: name -> mode.
func entries(t *testing.T, path string) map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	out := map[string]int64{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out[h.Name] = h.Mode
	}
}

func (s *suite) testTarballs(t *testing.T) {
	for _, name := range []string{"driverguard", "driverguard-check"} {
		assert.Equal(t, map[string]int64{
			name + "/": 0o755, name + "/bin/": 0o755, name + "/bin/driverguard": 0o755, name + "/plugin.yaml": 0o644,
		}, entries(t, s.tarball(name)), "a Helm 4 tarball holds the plugin's directory")
	}
	assert.Equal(t, map[string]int64{"bin/": 0o755, "bin/driverguard": 0o755, "plugin.yaml": 0o644},
		entries(t, s.tarball("driverguard-helm3")), "Helm 3's HTTP installer wants plugin.yaml at the root")
	sums, err := os.ReadFile(filepath.Join(s.dist, "SHA256SUMS"))
	require.NoError(t, err)
	assert.Len(t, strings.Split(strings.TrimSpace(string(sums)), "\n"), 5, "three tarballs and the .prov of the Helm 4 ones")
	for _, name := range []string{"driverguard", "driverguard-check", "driverguard-helm3"} {
		st, err := os.Stat(s.tarball(name))
		require.NoError(t, err)
		t.Logf("%s: %.1f MiB", filepath.Base(s.tarball(name)), float64(st.Size())/(1<<20))
	}
}

// plainTemplate is `helm template` of values without a post-renderer.
func (s *suite) plainTemplate(t *testing.T, h *helmHome, helm, values string) string {
	t.Helper()
	r := h.run(t, "", nil, helm, "template", releaseName, s.chart, "-f", values)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "kind: RBLNDriver")
	return r.stdout
}

func (s *suite) testHelm4(t *testing.T) {
	h := newHelmHome(t)
	dataPlugins := filepath.Join(h.dir, "data", "plugins")

	t.Run("a tarball without a .prov is refused by default", func(t *testing.T) {
		alone := filepath.Join(t.TempDir(), filepath.Base(s.tarball("driverguard")))
		copyFile(t, s.tarball("driverguard"), alone)
		r := h.run(t, "", nil, s.helm4, "plugin", "install", alone)
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stdout+r.stderr, "prov")
		assert.NoDirExists(t, filepath.Join(dataPlugins, "driverguard"))
	})

	for _, name := range []string{"driverguard", "driverguard-check"} {
		// HELM_PLUGINS points elsewhere: Helm 4 installs into $HELM_DATA_HOME/plugins anyway.
		r := h.run(t, "", []string{"HELM_PLUGINS=" + filepath.Join(h.dir, "elsewhere")}, s.helm4, "plugin", "install", s.tarball(name), "--verify=false")
		require.Equal(t, 0, r.code, "helm4 plugin install %s --verify=false: %s%s", name, r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "Installed plugin: "+name)
		assert.FileExists(t, filepath.Join(dataPlugins, name, "plugin.yaml"), "installed into $HELM_DATA_HOME/plugins")
	}
	r := h.run(t, "", nil, s.helm4, "plugin", "list")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `(?m)^driverguard\s+`+s.version+`\s+cli/v1\s+v1\s`, r.stdout)
	assert.Regexp(t, `(?m)^driverguard-check\s+`+s.version+`\s+postrenderer/v1\s+v1\s`, r.stdout)

	s.testCLI(t, h, s.helm4)

	t.Run("Helm's kubeconfig and context reach the plugin", func(t *testing.T) {
		kc := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, os.WriteFile(kc, []byte(twoClusters), 0o600))
		manifests := s.plainTemplate(t, h, s.helm4, s.good)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--kubeconfig", kc}, `context "one" (https://127.0.0.1:1)`},
			{[]string{"--kubeconfig", kc, "--kube-context", "two"}, `context "two" (https://127.0.0.1:2)`},
			{[]string{"--kubeconfig=" + kc, "--kube-context=two", "-n", "npu"}, `context "two" (https://127.0.0.1:2)`},
		} {
			r := h.run(t, manifests, nil, s.helm4, append(tc.args, "driverguard", "post-render", "--live")...)
			assert.Equal(t, 2, r.code, "the plugin's exit code is helm's")
			assert.Contains(t, r.stderr, "--live: reading the cluster of "+tc.want)
		}
	})

	t.Run("post-renderer", func(t *testing.T) {
		plain := s.plainTemplate(t, h, s.helm4, s.good)
		r := h.run(t, "", nil, s.helm4, "template", releaseName, s.chart, "-f", s.good, "--post-renderer", "driverguard-check")
		require.Equal(t, 0, r.code, r.stderr)
		// Helm 4 re-serializes the manifests around any post-renderer (kyaml: sequences are
		// indented differently, hooks included), so the bytes are those of a post-renderer
		// that changes nothing, and the objects those of plain helm template.
		installIdentity(t, h, s.helm4)
		identity := h.run(t, "", nil, s.helm4, "template", releaseName, s.chart, "-f", s.good, "--post-renderer", "identity")
		require.Equal(t, 0, identity.code, identity.stderr)
		assert.Equal(t, identity.stdout, r.stdout, "byte for byte what Helm 4 prints with a post-renderer that returns its input")
		assert.Equal(t, documents(t, plain), documents(t, r.stdout), "the objects of plain helm template")

		r = h.run(t, "", nil, s.helm4, "template", releaseName, s.chart, "-f", s.identical, "--post-renderer", "driverguard-check")
		assert.NotEqual(t, 0, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, `failed to invoke post-renderer plugin "driverguard-check"`)
		// Helm 4 drops the plugin's standard error; post-render --parent-stderr writes to Helm's.
		assert.Contains(t, r.stderr, "RBLNDriver/rbln-driver-b\n  FAIL  IdenticalNodeSelector: spec.nodeSelector:")
		assert.Contains(t, r.stderr, "judged against the rendered objects alone")

		r = h.run(t, "", nil, s.helm4, "template", releaseName, s.chart, "-f", s.identical, "--post-renderer", "driverguard-check", "--post-renderer-args", "--live=false")
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, "IdenticalNodeSelector")
		assert.Contains(t, r.stderr, "(--live=false)", "--post-renderer-args reach post-render")

		// "--live false" as the README writes it (#30), each word its own --post-renderer-args.
		r = h.run(t, "", nil, s.helm4, "template", releaseName, s.chart, "-f", s.identical, "--post-renderer", "driverguard-check",
			"--post-renderer-args", "--live", "--post-renderer-args", "false")
		assert.Contains(t, r.stderr, "(--live=false)")
		assert.NotContains(t, r.stderr, "unknown command")
		// An error before any judgement reaches the user through Helm 4 too.
		r = h.run(t, "", nil, s.helm4, "template", releaseName, s.chart, "-f", s.good, "--post-renderer", "driverguard-check",
			"--post-renderer-args", "--live-timeout=soon")
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, `driverguard post-render: Error: invalid argument "soon" for "--live-timeout" flag`)
		// Warnings of objects that pass are shown, though Helm discards a passing
		// post-renderer's standard error.
		r = h.run(t, "", nil, s.helm4, "template", releaseName, s.chart, "-f", s.good, "-f", s.rollout, "--post-renderer", "driverguard-check")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "WARN   RBLNClusterPolicy/rbln-cluster-policy: driverguard.lib.drain_empty_dir")
	})
}

func (s *suite) testHelm3(t *testing.T) {
	h := newHelmHome(t)

	t.Run("Helm 3 refuses the Helm 4 plugin.yaml", func(t *testing.T) {
		dir := t.TempDir()
		extract(t, s.tarball("driverguard"), dir)
		r := h.run(t, "", nil, s.helm3, "plugin", "install", filepath.Join(dir, "driverguard"))
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, `unknown field "apiVersion"`)
		// Linked in nonetheless, it breaks every plugin, helm plugin uninstall included.
		r = h.run(t, "", nil, s.helm3, "plugin", "list")
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, `failed to load plugins`)
		require.NoError(t, os.Remove(filepath.Join(h.dir, "data", "plugins", "driverguard")))
	})

	t.Run("from a URL", func(t *testing.T) {
		// Helm 3 installs a URL as a tarball only when its HEAD answers a gzip media type.
		files := http.FileServer(http.Dir(s.dist))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/gzip")
			files.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		other := newHelmHome(t)
		r := other.run(t, "", nil, s.helm3, "plugin", "install", srv.URL+"/"+filepath.Base(s.tarball("driverguard-helm3")))
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		r = other.run(t, "", nil, s.helm3, "driverguard", "version")
		assert.Equal(t, 0, r.code, r.stderr)
	})

	// Offline: the tarball extracted into a directory that stays, installed from there.
	dir := filepath.Join(t.TempDir(), "driverguard")
	extract(t, s.tarball("driverguard-helm3"), dir)
	r := h.run(t, "", nil, s.helm3, "plugin", "install", dir)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	r = h.run(t, "", nil, s.helm3, "plugin", "list")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `(?m)^driverguard\s+`+s.version+`\s`, r.stdout)

	s.testCLI(t, h, s.helm3)

	t.Run("post-renderer", func(t *testing.T) {
		bin := filepath.Join(dir, "bin", "driverguard")
		plain := s.plainTemplate(t, h, s.helm3, s.good)
		r := h.run(t, "", nil, s.helm3, "template", releaseName, s.chart, "-f", s.good, "--post-renderer", bin, "--post-renderer-args", "post-render")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, plain, r.stdout, "byte for byte")

		r = h.run(t, "", nil, s.helm3, "template", releaseName, s.chart, "-f", s.identical, "--post-renderer", bin, "--post-renderer-args", "post-render")
		assert.NotEqual(t, 0, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "RBLNDriver/rbln-driver-b\n  FAIL  IdenticalNodeSelector: spec.nodeSelector:")

		r = h.run(t, "", nil, s.helm3, "template", releaseName, s.chart, "-f", s.good, "-f", s.rollout, "--post-renderer", bin, "--post-renderer-args", "post-render")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "WARN   RBLNClusterPolicy/rbln-cluster-policy: driverguard.lib.drain_empty_dir", "warnings of a pass reach the user (#30)")
	})
}

// testSigned: the Helm 4 tarballs `make plugin SIGN_KEY=...` signs install verified with the
// key, and not without it, nor under another name.
func (s *suite) testSigned(t *testing.T) {
	h := newHelmHome(t)
	for _, name := range []string{"driverguard", "driverguard-check"} {
		pkg := s.tarball(name)
		require.FileExists(t, pkg+".prov")

		r := h.run(t, "", nil, s.helm4, "plugin", "install", pkg)
		assert.NotEqual(t, 0, r.code, "the default keyring (~/.gnupg/pubring.gpg) does not hold the key")

		renamed := filepath.Join(t.TempDir(), name+".tgz")
		copyFile(t, pkg, renamed)
		copyFile(t, pkg+".prov", renamed+".prov")
		r = h.run(t, "", nil, s.helm4, "plugin", "install", renamed, "--keyring", s.pubring)
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, "provenance does not contain a SHA for a file named", "the .prov signs the file's name")

		r = h.run(t, "", nil, s.helm4, "plugin", "install", pkg, "--keyring", s.pubring)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "Signed by: "+signer)
		assert.Contains(t, r.stdout, "Installed plugin: "+name)
	}
	r := h.run(t, "", nil, s.helm4, "plugin", "list")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `(?m)^driverguard\s+`+s.version+`\s+cli/v1\s+v1\s+signed\s`, r.stdout)
	assert.Regexp(t, `(?m)^driverguard-check\s+`+s.version+`\s+postrenderer/v1\s+v1\s+signed\s`, r.stdout)
	r = h.run(t, "", nil, s.helm4, "driverguard", "version")
	assert.Equal(t, 0, r.code, r.stderr)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

// testCLI runs the CLI plugin's commands through helm.
func (s *suite) testCLI(t *testing.T, h *helmHome, helm string) {
	t.Run("helm driverguard check", func(t *testing.T) {
		r := h.run(t, "", nil, helm, "driverguard", "check", "-f", s.good)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver-atom-canary\n  PASS\n")
		assert.Contains(t, r.stdout, "; passed\n")

		r = h.run(t, "", nil, helm, "driverguard", "check", "-f", s.identical)
		assert.Equal(t, 1, r.code, "driverguard's exit code is helm's")
		assert.Contains(t, r.stdout, "FAIL  IdenticalNodeSelector")
	})
	t.Run("helm driverguard plan", func(t *testing.T) {
		drivers := filepath.Join(filepath.Dir(s.nodes), "drivers.yaml")
		r := h.run(t, "", nil, helm, "driverguard", "plan", "-f", s.good, "--nodes", s.nodes, "--drivers", drivers)
		assert.Contains(t, []int{0, 1}, r.code, "plan ran: %s", r.stderr)
		assert.Contains(t, r.stdout, "RBLNDRIVER")
		assert.Contains(t, r.stdout, "rbln-driver-atom-canary")

		// Nodes that carry owner labels without the drivers that routed them: plan refuses
		// rather than guess, and helm hands on its exit code and its explanation.
		r = h.run(t, "", nil, helm, "driverguard", "plan", "-f", s.good, "--nodes", s.nodes)
		assert.Equal(t, 2, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, "--drivers was not given")
		assert.Empty(t, r.stdout)
	})
}

// testLive: post-render judges against the cluster when it answers — a driver the cluster
// already holds ties with a rendered one — and on the objects alone when it does not.
func (s *suite) testLive(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	plane, err := controlplane.Start(controlplane.Options{})
	if errors.Is(err, controlplane.ErrNoAssets) {
		t.Skipf("%v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = plane.Stop() })
	c, err := plane.Client(nil)
	require.NoError(t, err)
	ctx := t.Context()
	// Another team's driver, on the nodes the example's canary selects.
	require.NoError(t, c.Create(ctx, wt.Driver("team-atom", wt.Sel("rebellions.ai/npu.family", "atom", "env", "canary"))))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(plane.Env, envtest.User{Name: "helm-plugin", Groups: []string{"system:masters"}}, kubeconfig))

	h := newHelmHome(t)
	r := h.run(t, "", nil, s.helm4, "plugin", "install", s.tarball("driverguard-check"), "--verify=false")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	args := []string{"template", releaseName, s.chart, "-f", s.good, "--post-renderer", "driverguard-check"}

	r = h.run(t, "", nil, s.helm4, args...)
	require.Equal(t, 0, r.code, "without a cluster the rendered objects pass: %s", r.stderr)

	r = h.run(t, "", []string{"KUBECONFIG=" + kubeconfig}, s.helm4, args...)
	assert.NotEqual(t, 0, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "judged against the cluster of context")
	assert.Contains(t, r.stderr, "RBLNDriver/rbln-driver-atom-canary\n  FAIL  IdenticalNodeSelector: spec.nodeSelector: Invalid value: \"{env=canary,rebellions.ai/npu.family=atom}\": is identical to the nodeSelector of RBLNDriver \"team-atom\"")

	// A node whose owner label names an RBLNDriver the cluster does not hold runs no driver:
	// the release cannot take one away from it (#30). It passes, and says what it read.
	require.NoError(t, c.Delete(ctx, wt.Driver("team-atom", nil)))
	ghost := wt.CandidateLabels(operator.LabelFamily, "ghost")
	ghost[operator.LabelOwner] = "ghost-driver"
	require.NoError(t, c.Create(ctx, wt.Node("npu-ghost-01", ghost)))
	r = h.run(t, "", []string{"KUBECONFIG=" + kubeconfig}, s.helm4, append(args, "--set", "driver.deployDefault=false")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "would lose")
}

// installIdentity installs, from a directory, a Helm 4 post-renderer plugin that returns its
// input unchanged (cat).
func installIdentity(t *testing.T, h *helmHome, helm4 string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "identity")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(`apiVersion: v1
name: identity
type: postrenderer/v1
runtime: subprocess
version: 0.1.0
config: {}
runtimeConfig:
  platformCommand:
    - command: cat
`), 0o644))
	r := h.run(t, "", nil, helm4, "plugin", "install", dir)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
}

// documents are the YAML documents of a stream, decoded.
func documents(t *testing.T, stream string) []any {
	t.Helper()
	var docs []any
	dec := yaml.NewDecoder(strings.NewReader(stream))
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err)
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// extract unpacks a .tgz into dir.
func extract(t *testing.T, tgz, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	out, err := exec.Command("tar", "-xzf", tgz, "-C", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

package lifecycle

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestPlanFromRelease: `driverguard plan --release NAME` on a release installed by Helm 3 and by
// Helm 4, stored in Secrets (Helm's default) and in ConfigMaps (HELM_DRIVER=configmap), reads its
// values from the release's latest revision and plans exactly what `plan` plans when the same
// values are rendered and given by hand as the cluster's RBLNDrivers and RBLNClusterPolicy —
// with new values (an upgrade) and without (no change).
func TestPlanFromRelease(t *testing.T) {
	requireEnv(t)
	values := filepath.Join(suite.root, "examples", "multi-driver.yaml")
	nodes := filepath.Join(suite.root, "examples", "nodes.yaml")
	chart := filepath.Join(suite.root, "charts", "driverguard")
	for _, v := range []struct{ name, bin, storage string }{
		{"helm3", "helm", "secret"}, {"helm4", "helm4", "secret"},
		{"helm3-configmap", "helm", "configmap"}, {"helm4-configmap", "helm4", "configmap"},
	} {
		t.Run(v.name, func(t *testing.T) {
			h := newHelm(t, "plan-"+v.name, v.bin)
			h.env = []string{"HELM_DRIVER=" + v.storage}
			env := h.env
			release, ns := "planrel", "plan-release-"+v.name
			out, err := h.run("install", release, chart, "--namespace", ns, "--create-namespace", "-f", values,
				"--set", "webhook.enabled=false", "--set", "driver.instances.rebel.image.tag=3.2.3")
			require.NoError(t, err, "helm install:\n%s", out)
			t.Cleanup(func() {
				if out, err := h.run("uninstall", release, "--namespace", ns); err != nil {
					t.Logf("helm uninstall: %v\n%s", err, out)
				}
			})
			driverguard := func(t *testing.T, kubeconfig string, args ...string) ([]byte, []byte, int) {
				r := runDriverguard(t, kubeconfig, env, args...)
				return r.stdout, r.stderr, r.code
			}

			// By hand: the deployed values (the file and the --set) rendered.
			current := filepath.Join(t.TempDir(), "current.yaml")
			rendered, _, code := driverguard(t, h.kubeconfig, "render", "-f", values, "--set", "driver.instances.rebel.image.tag=3.2.3", "--release-name", release)
			require.Zero(t, code)
			require.NoError(t, os.WriteFile(current, rendered, 0o600))

			for _, change := range [][]string{
				{"-f", values, "--set", "driver.instances.rebel.image.tag=3.2.4"}, // an upgrade
				nil, // no change
			} {
				fromRelease, stderr, code := driverguard(t, h.kubeconfig, append([]string{"plan", "--release", release, "-n", ns, "--nodes", nodes, "-o", "json"}, change...)...)
				byHand, _, handCode := driverguard(t, h.kubeconfig, append([]string{"plan", "--drivers", current, "--cluster-policy", current,
					"--release-name", release, "--nodes", nodes, "-o", "json"}, change...)...)
				assert.Equal(t, handCode, code, "exit code; stderr: %s", stderr)
				// Without "inputs": the drivers were read from the release here, from a file by hand.
				assert.JSONEq(t, withoutInputs(t, byHand), withoutInputs(t, fromRelease), "plan --release %v", change)
				assert.Contains(t, string(fromRelease), `"from": "release planrel (revision 1 in namespace `+ns+`, --release)"`, "the RBLNDrivers are the release's")
				assert.Contains(t, string(stderr), "Planning from release planrel in namespace "+ns+" (revision 1, deployed)")
				if change != nil {
					assert.Contains(t, string(fromRelease), `"oldVersion": "3.2.3"`)
					assert.Contains(t, string(fromRelease), `"newVersion": "3.2.4"`)
				}
			}

			// Without -n the kubeconfig context's namespace ("default" here): a release that is not
			// there is exit 2 naming it.
			_, stderr, code := driverguard(t, h.kubeconfig, "plan", "--release", release, "--nodes", nodes)
			assert.Equal(t, 2, code)
			assert.Contains(t, string(stderr), "reading release planrel in namespace default")
			_, _, code = driverguard(t, h.kubeconfig, "plan", "--release", release, "--nodes", nodes, "--namespace", ns, "--drivers", current)
			assert.Equal(t, 2, code, "--release with --drivers")

			// A release of another chart is refused, not planned as "no change".
			other := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(other, "templates"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(other, "Chart.yaml"), []byte("apiVersion: v2\nname: other\nversion: 0.1.0\n"), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(other, "templates", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"), 0o600))
			out, err = h.run("install", "other", other, "--namespace", ns)
			require.NoError(t, err, "helm install:\n%s", out)
			t.Cleanup(func() { _, _ = h.run("uninstall", "other", "--namespace", ns) })
			_, stderr, code = driverguard(t, h.kubeconfig, "plan", "--release", "other", "-n", ns, "--nodes", nodes)
			assert.Equal(t, 2, code)
			assert.Contains(t, string(stderr), `release other in namespace `+ns+` is of chart "other", not driverguard's`)

			// The revision is read through --max-release-size: below this release's size, refused.
			_, stderr, code = driverguard(t, h.kubeconfig, "plan", "--release", release, "-n", ns, "--nodes", nodes, "--max-release-size", "1Ki")
			assert.Equal(t, 2, code)
			assert.Contains(t, string(stderr), "larger than 1Ki (1024 bytes) once decompressed, the limit of --max-release-size")

			// Another storage than the release's holds no such release.
			otherStorage := map[string]string{"secret": "configmap", "configmap": "secret"}[v.storage]
			r := runDriverguard(t, h.kubeconfig, []string{"HELM_DRIVER=" + otherStorage}, "plan", "--release", release, "-n", ns, "--nodes", nodes)
			assert.Equal(t, 2, r.code)
			assert.Contains(t, string(r.stderr), "reading release planrel in namespace "+ns+" (storage driver "+otherStorage+"): release: not found")
		})
	}
}

// TestPlanFromReleaseBomb: a release revision that inflates to 512 MiB of JSON from a few hundred
// KiB (a "gzip bomb" in the release Secret or ConfigMap) is refused (exit 2) naming the release,
// the limit and the flag, having read no more than the limit: the run stays within 300 MB. An
// older revision that is a bomb is never read at all (only the latest is decoded).
func TestPlanFromReleaseBomb(t *testing.T) {
	requireEnv(t)
	c := newClient(t)
	ns := "plan-release-bomb"
	require.NoError(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	kubeconfig := newHelm(t, "bomb", "helm").kubeconfig
	nodes := filepath.Join(suite.root, "examples", "nodes.yaml")

	bomb := helmStored(t, io.MultiReader(strings.NewReader(`{"name":"bomb","version":1,"info":{"status":"deployed"},"chart":{"metadata":{"name":"driverguard"}},"config":{"pad":"`),
		io.LimitReader(zeroes{}, 512<<20), strings.NewReader(`"}}`)))
	require.Less(t, len(bomb), 1<<20, "a Secret holds it")
	store := func(t *testing.T, kind, release string, version int, data []byte) {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, version), Namespace: ns,
			Labels: map[string]string{"owner": "helm", "name": release, "version": strconv.Itoa(version), "status": "deployed"}}
		var obj client.Object = &corev1.Secret{ObjectMeta: meta, Type: "helm.sh/release.v1", Data: map[string][]byte{"release": data}}
		if kind == "configmap" {
			obj = &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"release": string(data)}}
		}
		require.NoError(t, c.Create(t.Context(), obj))
	}
	for _, storage := range []string{"secret", "configmap"} {
		t.Run(storage, func(t *testing.T) {
			env := []string{"HELM_DRIVER=" + storage}
			store(t, storage, "bomb-"+storage, 1, bomb)
			r := runDriverguard(t, kubeconfig, env, "plan", "--release", "bomb-"+storage, "-n", ns, "--nodes", nodes)
			t.Logf("plan --release of a 512 MiB bomb in a %s (%d KiB): exit %d, peak RSS %d MiB", storage, len(bomb)>>10, r.code, r.maxRSS>>20)
			assert.Equal(t, 2, r.code)
			assert.Empty(t, r.stdout)
			kind := map[string]string{"secret": "Secret", "configmap": "ConfigMap"}[storage]
			assert.Contains(t, string(r.stderr), "release bomb-"+storage+" in namespace "+ns+": revision 1 ("+kind+" sh.helm.release.v1.bomb-"+storage+".v1) "+
				"is larger than 32Mi (33554432 bytes) once decompressed, the limit of --max-release-size")
			assert.Contains(t, string(r.stderr), "raise the limit with --max-release-size")
			assert.Less(t, r.maxRSS, int64(300<<20), "peak RSS")

			// A bomb in an older revision: only the latest is read.
			release := "hist-" + storage
			store(t, storage, release, 1, bomb)
			store(t, storage, release, 2, helmStored(t, strings.NewReader(`{"name":"`+release+`","version":2,"info":{"status":"deployed"},"chart":{"metadata":{"name":"driverguard"}},"config":{}}`)))
			r = runDriverguard(t, kubeconfig, env, "plan", "--release", release, "-n", ns, "--nodes", nodes, "-o", "json")
			t.Logf("plan --release with a bomb in revision 1 of 2: exit %d, peak RSS %d MiB", r.code, r.maxRSS>>20)
			assert.Contains(t, []int{0, 1}, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, string(r.stderr), "Planning from release "+release+" in namespace "+ns+" (revision 2, deployed)")
			assert.Less(t, r.maxRSS, int64(300<<20), "peak RSS")
		})
	}

	// Helm's SQL storage is not read (not through a limit): refused, with what to do instead.
	_, stderr, code := driverguard(t, kubeconfig, "plan", "--release", "bomb-secret", "-n", ns, "--nodes", nodes)
	assert.Equal(t, 2, code, "Secrets are the default storage: %s", stderr)
	r := runDriverguard(t, kubeconfig, []string{"HELM_DRIVER=sql"}, "plan", "--release", "bomb-secret", "-n", ns, "--nodes", nodes)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, string(r.stderr), "HELM_DRIVER=sql: plan --release reads releases stored in Secrets")
}

// helmStored is JSON as Helm's storage drivers store a revision: gzipped, then base64.
func helmStored(t *testing.T, json io.Reader) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	_, err = io.Copy(gz, json)
	require.NoError(t, err)
	require.NoError(t, gz.Close())
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// zeroes reads '0' forever.
type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// withoutInputs is a plan's JSON without its "inputs" record (what it was read from, and when).
func withoutInputs(t *testing.T, plan []byte) string {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(plan, &doc), "%s", plan)
	require.Contains(t, doc, "inputs")
	delete(doc, "inputs")
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	return string(out)
}

// run is one driverguard run: its output, exit code and peak resident memory.
type run struct {
	stdout, stderr []byte
	code           int
	// maxRSS is the process's peak resident set in bytes (the operating system's accounting).
	maxRSS int64
}

// runDriverguard runs the driverguard binary with KUBECONFIG set and env added.
func runDriverguard(t *testing.T, kubeconfig string, env []string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.bin, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig, "HELM_NAMESPACE="), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := run{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = ru.Maxrss * 1024 // kilobytes on Linux
		}
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return r
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
		return r
	}
	t.Fatalf("driverguard %v: %v", args, err)
	return r
}

// driverguard runs the driverguard binary with KUBECONFIG set; it returns stdout, stderr and
// the exit code.
func driverguard(t *testing.T, kubeconfig string, args ...string) ([]byte, []byte, int) {
	t.Helper()
	r := runDriverguard(t, kubeconfig, nil, args...)
	return r.stdout, r.stderr, r.code
}

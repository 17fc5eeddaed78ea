package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanFromRelease: `driverguard plan --release NAME` on a release installed by Helm 3 and by
// Helm 4 reads its values through Helm's SDK (the release Secret) and plans exactly what `plan`
// plans when the same values are rendered and given by hand as the cluster's RBLNDrivers and
// RBLNClusterPolicy — with new values (an upgrade) and without (no change).
func TestPlanFromRelease(t *testing.T) {
	requireEnv(t)
	values := filepath.Join(suite.root, "examples", "multi-driver.yaml")
	nodes := filepath.Join(suite.root, "examples", "nodes.yaml")
	chart := filepath.Join(suite.root, "charts", "driverguard")
	for _, v := range []struct{ name, bin string }{{"helm3", "helm"}, {"helm4", "helm4"}} {
		t.Run(v.name, func(t *testing.T) {
			h := newHelm(t, "plan-"+v.name, v.bin)
			release, ns := "planrel", "plan-release-"+v.name
			out, err := h.run("install", release, chart, "--namespace", ns, "--create-namespace", "-f", values,
				"--set", "webhook.enabled=false", "--set", "driver.instances.rebel.image.tag=3.2.3")
			require.NoError(t, err, "helm install:\n%s", out)
			t.Cleanup(func() {
				if out, err := h.run("uninstall", release, "--namespace", ns); err != nil {
					t.Logf("helm uninstall: %v\n%s", err, out)
				}
			})

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
				assert.JSONEq(t, string(byHand), string(fromRelease), "plan --release %v", change)
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
		})
	}
}

// driverguard runs the driverguard binary with KUBECONFIG set; it returns stdout, stderr and
// the exit code.
func driverguard(t *testing.T, kubeconfig string, args ...string) ([]byte, []byte, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HELM_NAMESPACE=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.Bytes(), stderr.Bytes(), 0
	case errors.As(err, &exit):
		return stdout.Bytes(), stderr.Bytes(), exit.ExitCode()
	}
	t.Fatalf("driverguard %v: %v", args, err)
	return nil, nil, -1
}

package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/registry/registrytest"
)

// TestCheckImagesWithCredentials (README.md "Private registries"): against a registry that wants a token, the
// commands that check images with files use the user's credentials — --registry-config, the
// Docker config — and then find the missing image (exit 1, naming the path) and the present
// one; without credentials every image is a warning that says none were given, with wrong
// ones that the file's credentials were refused, naming it. No output repeats a credential.
func TestCheckImagesWithCredentials(t *testing.T) {
	reg := registrytest.New(t, "robot", "s3cret-pa55", true)
	present := reg.Push(t, "rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04")
	missing := reg.Host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-45-generic-ubuntu24.04"
	dir := t.TempDir()
	values := filepath.Join(dir, "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte("driver:\n  image:\n    registry: "+reg.Host+"\n  imagePullSecrets: [drivercred]\n"), 0o600))
	nodes := filepath.Join(dir, "nodes.yaml")
	require.NoError(t, os.WriteFile(nodes, []byte(twoPoolNodes), 0o600))
	rendered := run(t, "", "render", "-f", values)
	require.Equal(t, ExitOK, rendered.code, rendered.stderr)
	drivers := filepath.Join(dir, "drivers.yaml")
	require.NoError(t, os.WriteFile(drivers, []byte(rendered.stdout), 0o600))
	config := func(pass string) string {
		f := filepath.Join(t.TempDir(), "config.json")
		require.NoError(t, os.WriteFile(f, fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, reg.Host, registrytest.BasicAuth("robot", pass)), 0o600))
		return f
	}
	right, wrong := config("s3cret-pa55"), config("expired-pa55")
	dockerDir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dockerDir)
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(dir, "no-helm-registry-config.json"))

	type image struct {
		Image, Status, Reason, Message string
		Credentials                    []string
	}
	preview := func(t *testing.T, extra ...string) (int, map[string]image, string) {
		t.Helper()
		r := run(t, "", slices.Concat([]string{"preview", "-f", values, "--nodes", nodes, "--check-images", "-o", "json"}, extra)...)
		require.Contains(t, []int{ExitOK, ExitInvalid}, r.code, r.stderr)
		var rep struct {
			Nodes struct{ Images []image }
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
		out := map[string]image{}
		for _, i := range rep.Nodes.Images {
			out[i.Image] = i
		}
		return r.code, out, r.stdout + r.stderr
	}
	var everything strings.Builder

	t.Run("no credentials", func(t *testing.T) {
		code, got, out := preview(t)
		everything.WriteString(out)
		assert.Equal(t, ExitOK, code, "a warning, never a missing image")
		for _, img := range []string{present, missing} {
			assert.Equal(t, "Warning", got[img].Status)
			assert.Equal(t, "unauthorized", got[img].Reason)
			assert.Contains(t, got[img].Message, "no credentials were given")
		}
	})
	t.Run("--registry-config", func(t *testing.T) {
		code, got, out := preview(t, "--registry-config", right)
		everything.WriteString(out)
		assert.Equal(t, ExitInvalid, code, "a missing image fails its pool")
		assert.Equal(t, "Found", got[present].Status, got[present].Message)
		assert.Equal(t, "NotFound", got[missing].Status, got[missing].Message)
		assert.Contains(t, got[missing].Message, missing)
		assert.Equal(t, []string{"--registry-config " + right}, got[present].Credentials)
	})
	t.Run("refused", func(t *testing.T) {
		code, got, out := preview(t, "--registry-config", wrong)
		everything.WriteString(out)
		assert.Equal(t, ExitOK, code)
		assert.Contains(t, got[present].Message, "the registry refused the credentials of --registry-config "+wrong+" (401 Unauthorized)")
		// plan's table and change ticket say it too, once per image.
		for _, format := range []string{"table", "markdown"} {
			r := run(t, "", "plan", "-f", values, "--nodes", nodes, "--drivers", drivers, "--check-images", "--registry-config", wrong, "-o", format)
			everything.WriteString(r.stdout + r.stderr)
			assert.Equal(t, 2, strings.Count(r.stdout, "refused the credentials of --registry-config "+wrong), "once for each of the two images (%s):\n%s", format, r.stdout)
		}
	})
	t.Run("Docker config", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(dockerDir, "config.json"), fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, reg.Host, registrytest.BasicAuth("robot", "s3cret-pa55")), 0o600))
		t.Cleanup(func() { _ = os.Remove(filepath.Join(dockerDir, "config.json")) })
		for _, cmd := range [][]string{
			{"route", "--drivers", drivers, "--nodes", nodes, "--check-images", "-o", "json"},
			{"plan", "-f", values, "--nodes", nodes, "--drivers", drivers, "--check-images", "-o", "json"},
			{"audit", "--nodes", nodes, "--drivers", drivers, "--check-images", "-o", "json"},
		} {
			r := run(t, "", cmd...)
			everything.WriteString(r.stdout + r.stderr)
			assert.Contains(t, []int{ExitOK, ExitInvalid}, r.code, "%s: %s", cmd[0], r.stderr)
			assert.Regexp(t, `"missing": ?1`, r.stdout, "%s finds the missing image with the Docker config's credentials", cmd[0])
			assert.Regexp(t, `"found": ?1`, r.stdout, cmd[0])
			assert.NotContains(t, r.stdout, "unauthorized", cmd[0])
		}
	})
	for _, s := range append([]string{"s3cret-pa55", "expired-pa55", registrytest.BasicAuth("robot", "s3cret-pa55"), registrytest.BasicAuth("robot", "expired-pa55")}, reg.Issued()...) {
		assert.NotContains(t, everything.String(), s, "a credential in the output")
	}
}

// TestRegistryFlagsRefused: the credential flags refuse what would change nothing.
func TestRegistryFlagsRefused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"auths":{}}`), 0o600))
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"preview", "-f", exampleValues, "--nodes", exampleNodes, "--registry-config", cfg}, "--registry-config only changes how images are checked: add --check-images"},
		{[]string{"route", "--drivers", exampleDrivers, "--nodes", exampleNodes, "--insecure-registry", "10.0.0.5:5000"}, "--insecure-registry only changes how images are checked"},
		{[]string{"plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "--check-images", "--pull-secret-namespace", "npu"}, "--pull-secret-namespace is where the drivers' pull Secrets are read in the live cluster"},
		{[]string{"audit", "--live", "--check-images", "--registry-config", cfg}, "--registry-config is for a cluster read from files"},
		{[]string{"preview", "-f", exampleValues, "--nodes", exampleNodes, "--check-images", "--registry-config", filepath.Join(t.TempDir(), "none.json")}, "--registry-config"},
		{[]string{"serve", "--pull-secret-namespace", "npu"}, "--pull-secret-namespace is for the audit's registry checks"},
		{[]string{"route", "--drivers", exampleDrivers, "--nodes", exampleNodes, "--registry-config", cfg, "--insecure-registry", "h:1"}, "--registry-config and --insecure-registry only change how images are checked"},
		{[]string{"preview", "-f", exampleValues, "--nodes", exampleNodes, "--check-images", "--registry-config="}, "needs a file"},
		{[]string{"serve", "--audit", "--audit-check-images", "--insecure-registry", "http://10.0.0.5:5000"}, `--insecure-registry "http://10.0.0.5:5000": give a registry as host`},
		{[]string{"plan", "-f", exampleValues, "--live", "--check-images", "--pull-secret-namespace", "Not_A_Namespace"}, "--pull-secret-namespace \"Not_A_Namespace\" is not a namespace name"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
			r := run(t, "", tc.args...)
			assert.Equal(t, ExitUsage, r.code, r.stdout+r.stderr)
			assert.Contains(t, r.stderr, tc.says)
			assert.Empty(t, r.stdout)
		})
	}
}

// twoPoolNodes are two atom nodes in two pools (Ubuntu 22.04 and 24.04 kernels).
const twoPoolNodes = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: present
    labels: {rebellions.ai/npu.deploy.driver: "true", rebellions.ai/npu.family: atom, feature.node.kubernetes.io/system-os_release.ID: ubuntu, feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04", feature.node.kubernetes.io/kernel-version.full: 6.8.0-90-generic}
- apiVersion: v1
  kind: Node
  metadata:
    name: missing
    labels: {rebellions.ai/npu.deploy.driver: "true", rebellions.ai/npu.family: atom, feature.node.kubernetes.io/system-os_release.ID: ubuntu, feature.node.kubernetes.io/system-os_release.VERSION_ID: "24.04", feature.node.kubernetes.io/kernel-version.full: 6.8.0-45-generic}
`

// TestInsecureRegistryValues: what --insecure-registry takes.
func TestInsecureRegistryValues(t *testing.T) {
	for _, ok := range []string{"10.0.0.5:5000", "10.0.0.5", "mirror.example.com", "mirror.example.com:5000", "fd00::2", "[fd00::2]", "[fd00::2]:5041", "localhost:5000"} {
		assert.NoError(t, registry.ValidateInsecureRegistry(ok), ok)
	}
	for _, bad := range []string{"", "*", "192.0.2.0/24", "host:5040/v2", "http://host:5000", "host:0", "host:99999", "bad host", "*.example.com"} {
		assert.Error(t, registry.ValidateInsecureRegistry(bad), bad)
	}
	r := run(t, "", "route", "--drivers", exampleDrivers, "--nodes", exampleNodes, "--check-images", "--insecure-registry", "192.0.2.0/24")
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, `--insecure-registry "192.0.2.0/24"`)
}

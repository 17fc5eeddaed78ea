package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/driverguard/driverguard/charts"
)

// helmRendered is what Helm hands a post-renderer for the embedded chart with valuesFile
// (Helm's install action, client-only, in-process, as `helm template` runs it).
func helmRendered(t *testing.T, valuesFile string, set ...string) string {
	t.Helper()
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	vals, err := chartutil.ReadValuesFile(valuesFile)
	require.NoError(t, err)
	inst := action.NewInstall(&action.Configuration{})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = "dg", "default"
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}
	rel, err := inst.Run(ch, vals.AsMap())
	require.NoError(t, err)
	require.NotEmpty(t, rel.Manifest)
	return rel.Manifest
}

// noCluster makes sure no kubeconfig and no in-cluster config is found.
func noCluster(t *testing.T) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("HOME", t.TempDir())
}

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

func TestPostRenderPassesTheManifestsThroughUnchanged(t *testing.T) {
	noCluster(t)
	rendered := helmRendered(t, exampleValues)
	require.Contains(t, rendered, "kind: RBLNDriver")
	// What Helm 4 sends: every document annotated with its template file (Helm removes the
	// annotation from the answer), written back by kyaml.
	helm4 := strings.ReplaceAll(rendered, "\nmetadata:\n", "\nmetadata:\n  annotations:\n    postrenderer.helm.sh/postrender-filename: driverguard/templates/x.yaml\n")
	for name, in := range map[string]string{
		"the chart's output":           rendered,
		"without a final newline":      strings.TrimSuffix(rendered, "\n"),
		"CRLF line ends":               strings.ReplaceAll(rendered, "\n", "\r\n"),
		"Helm 4's annotated stream":    helm4,
		"no driverguard objects":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: {a: \"1\"}\n",
		"nothing":                      "",
		"comments and empty documents": "---\n# Source: a.yaml\n---\n\n---\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, in, "post-render")
			require.Equal(t, ExitOK, r.code, r.stderr)
			assert.Equal(t, in, r.stdout, "byte for byte")
		})
	}
}

func TestPostRenderDeniesIdenticalSelectors(t *testing.T) {
	noCluster(t)
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte(identicalSelectors), 0o600))
	rendered := helmRendered(t, values)
	for name, args := range map[string][]string{
		"no cluster configured": {"post-render"},
		"--live=false":          {"post-render", "--live=false"},
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, rendered, args...)
			assert.Equal(t, ExitInvalid, r.code)
			assert.Empty(t, r.stdout, "nothing reaches Helm")
			assert.Contains(t, r.stderr, "driverguard post-render: the rendered objects fail the check, judged against the rendered objects alone")
			assert.Contains(t, r.stderr, "RBLNDriver/rbln-driver-b\n  FAIL  IdenticalNodeSelector: spec.nodeSelector: Invalid value: \"{rebellions.ai/npu.family=atom}\": is identical to the nodeSelector of RBLNDriver \"rbln-driver-a\"")
			assert.Contains(t, r.stderr, "4 resources, 8 policies: 1 failure, 0 warnings; FAILED")
		})
	}
}

// TestPostRenderJudgesWrappedDrivers: Helm and kubectl apply the items of any object whose
// items field is an array, and of lists inside lists: an RBLNDriver wrapped so is judged (a
// ConfigMap with items let a tie through to the cluster).
func TestPostRenderJudgesWrappedDrivers(t *testing.T) {
	noCluster(t)
	driver := func(name string) string {
		return `{apiVersion: rebellions.ai/v1alpha1, kind: RBLNDriver, metadata: {name: ` + name + `}, spec: {registry: r.example, image: org/drv, version: 3.2.2, nodeSelector: {rebellions.ai/npu.family: atom}}}`
	}
	plain := "---\napiVersion: rebellions.ai/v1alpha1\nkind: RBLNDriver\nmetadata: {name: rbln-driver-a}\nspec: {registry: r.example, image: org/drv, version: 3.2.2, nodeSelector: {rebellions.ai/npu.family: atom}}\n"
	for name, wrapped := range map[string]string{
		"in a ConfigMap with items": "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nitems: [" + driver("rbln-driver-b") + "]\n",
		"in a List in a List":       "---\napiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: List, items: [" + driver("rbln-driver-b") + "]}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, plain+wrapped, "post-render", "--live=false")
			assert.Equal(t, ExitInvalid, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, `is identical to the nodeSelector of RBLNDriver "rbln-driver-a"`)
		})
	}
}

// TestPostRenderDecidesAsCheck: post-render on Helm's output of each valid values file of the
// corpus reaches check's verdict on the same values, with the same findings.
func TestPostRenderDecidesAsCheck(t *testing.T) {
	noCluster(t)
	files, err := filepath.Glob("../../../test/testdata/values/ok-*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	files = append(files, exampleValues)
	// Values check denies: identical selectors, a moving tag (a policy of the bundled library).
	dir := t.TempDir()
	for name, values := range map[string]string{
		"identical.yaml": identicalSelectors,
		"latest.yaml":    "driver:\n  image:\n    tag: latest\n",
	} {
		files = append(files, filepath.Join(dir, name))
		require.NoError(t, os.WriteFile(files[len(files)-1], []byte(values), 0o600))
	}
	denied := 0
	finding := regexp.MustCompile(`(?m)^(RBLN\S+|  (FAIL|WARN|PASS).*)$`)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			check := run(t, "", "check", "-f", file, "--release-name", "dg")
			require.NotEqual(t, ExitUsage, check.code, check.stderr)
			pr := run(t, helmRendered(t, file), "post-render")
			assert.Equal(t, check.code, pr.code, "check:\n%s\npost-render:\n%s", check.stdout, pr.stderr)
			if check.code == ExitInvalid {
				denied++
				assert.Equal(t, finding.FindAllString(check.stdout, -1), finding.FindAllString(pr.stderr, -1))
			}
		})
	}
	assert.GreaterOrEqual(t, denied, 2, "denials compared")
}

func TestPostRenderPolicies(t *testing.T) {
	noCluster(t)
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte("driver:\n  image:\n    tag: \"3.3.0-rc1\"\n"), 0o600))
	rendered := helmRendered(t, values)
	r := run(t, rendered, "post-render")
	require.Equal(t, ExitOK, r.code, r.stderr)

	r = run(t, rendered, "post-render", "--policy", examplePolicy)
	assert.Equal(t, ExitInvalid, r.code)
	assert.Contains(t, r.stderr, "RBLNDriver/rbln-driver\n  FAIL  driverguard.platform: version \"3.3.0-rc1\" is a pre-release")
	assert.Empty(t, r.stdout)

	r = run(t, rendered, "post-render", "--policy", examplePolicy, "--disable", "platform")
	assert.Equal(t, ExitOK, r.code, r.stderr)
	assert.Equal(t, rendered, r.stdout)
}

func TestPostRenderUnusableInput(t *testing.T) {
	noCluster(t)
	rendered := helmRendered(t, exampleValues)
	for name, tc := range map[string]struct {
		stdin string
		args  []string
		want  string
	}{
		"larger than its limit": {
			stdin: rendered, args: []string{"--max-manifests-size", "1Ki"},
			want: "reading the rendered manifests: <stdin> is larger than the limit of 1Ki (1024 bytes); raise the limit with --max-manifests-size",
		},
		"not YAML": {
			stdin: "kind: RBLNDriver\n  x: [\n",
			want:  "the rendered manifests: document 1 is not valid YAML",
		},
		"a driver without a name": {
			stdin: "apiVersion: rebellions.ai/v1alpha1\nkind: RBLNDriver\nspec: {}\n",
			want:  "the RBLNDriver has no metadata.name",
		},
		"two cluster policies": {
			stdin: "apiVersion: rebellions.ai/v1alpha1\nkind: RBLNClusterPolicy\nmetadata: {name: a}\n---\napiVersion: rebellions.ai/v1alpha1\nkind: RBLNClusterPolicy\nmetadata: {name: b}\n",
			want:  "the rendered manifests hold 2 RBLNClusterPolicies",
		},
		"a document of millions of tiny values": {
			stdin: "kind: List\nitems: [" + strings.Repeat("{},", 400_000) + "{}]\n",
			want:  "document 1 could hold up to",
		},
		"JSON objects without ---": {
			stdin: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}`,
			want:  "several JSON objects follow one another",
		},
		"--live=true without a cluster": {
			stdin: rendered, args: []string{"--live"},
			want: "--live: no cluster to read",
		},
		"--live takes auto, true or false": {
			stdin: rendered, args: []string{"--live=maybe"},
			want: `"maybe" is not auto, true or false`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, tc.stdin, append([]string{"post-render"}, tc.args...)...)
			assert.Equal(t, ExitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.Empty(t, r.stdout)
		})
	}
}

// twoContexts is a kubeconfig of two clusters; its current context "one" sets namespace ns-one.
const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://one.example:6443"}
- name: two
  cluster: {server: "https://two.example:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: one
  context: {cluster: one, user: u, namespace: ns-one}
- name: two
  context: {cluster: two, user: u}
current-context: one
`

// TestPostRenderReadsTheClusterHelmWould: KUBECONFIG, HELM_KUBECONTEXT and the flags select the
// cluster (--live true reports the one that did not answer); --live auto falls back to the
// objects alone.
func TestPostRenderReadsTheClusterHelmWould(t *testing.T) {
	noCluster(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	refused := strings.NewReplacer("https://one.example:6443", "https://127.0.0.1:1", "https://two.example:6443", "https://127.0.0.1:2").Replace(twoContexts)
	require.NoError(t, os.WriteFile(kubeconfig, []byte(refused), 0o600))
	rendered := helmRendered(t, exampleValues)
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"KUBECONFIG":                        {env: map[string]string{"KUBECONFIG": kubeconfig}, want: `context "one" (https://127.0.0.1:1)`},
		"--kubeconfig":                      {args: []string{"--kubeconfig", kubeconfig}, want: `context "one" (https://127.0.0.1:1)`},
		"HELM_KUBECONTEXT":                  {env: map[string]string{"KUBECONFIG": kubeconfig, "HELM_KUBECONTEXT": "two"}, want: `context "two" (https://127.0.0.1:2)`},
		"--kube-context over the variable":  {env: map[string]string{"KUBECONFIG": kubeconfig, "HELM_KUBECONTEXT": "two"}, args: []string{"--kube-context", "one"}, want: `context "one" (https://127.0.0.1:1)`},
		"--kube-context without the plugin": {args: []string{"--kubeconfig", kubeconfig, "--kube-context=two"}, want: `context "two" (https://127.0.0.1:2)`},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r := run(t, rendered, append([]string{"post-render", "--live"}, tc.args...)...)
			assert.Equal(t, ExitUsage, r.code)
			assert.Contains(t, r.stderr, "--live: reading the cluster of "+tc.want+": listing RBLNDrivers:")
			assert.Empty(t, r.stdout)

			r = run(t, rendered, append([]string{"post-render"}, tc.args...)...)
			assert.Equal(t, ExitOK, r.code, r.stderr)
			assert.Equal(t, rendered, r.stdout)
			assert.Contains(t, r.stderr, "judged against the rendered objects alone (the cluster of "+tc.want+" did not answer:")
		})
	}
}

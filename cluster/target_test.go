package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestKubeTargetHelmPluginEnv(t *testing.T) {
	plugin := map[string]string{EnvHelmPluginDir: "/p", EnvHelmKubeContext: "two", EnvHelmNamespace: "npu"}
	for name, tc := range map[string]struct {
		flags Target
		env   map[string]string
		want  Target
	}{
		"outside Helm the environment is not read": {
			env:  map[string]string{EnvHelmKubeContext: "two", EnvHelmNamespace: "npu"},
			want: Target{},
		},
		"a plugin (HELM_PLUGIN_DIR) takes Helm's context and namespace": {
			env:  plugin,
			want: Target{Context: "two", Namespace: "npu"},
		},
		"a CLI plugin (HELM_BIN) too": {
			env:  map[string]string{EnvHelmBin: "helm", EnvHelmKubeContext: "two", EnvHelmNamespace: "npu"},
			want: Target{Context: "two", Namespace: "npu"},
		},
		"flags win over the environment": {
			flags: Target{Kubeconfig: "k", Context: "one", Namespace: "other"},
			env:   plugin,
			want:  Target{Kubeconfig: "k", Context: "one", Namespace: "other"},
		},
		"empty variables leave the kubeconfig's choice": {
			env:  map[string]string{EnvHelmBin: "helm", EnvHelmKubeContext: "", EnvHelmNamespace: ""},
			want: Target{},
		},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.flags.WithHelmPluginEnv(envOf(tc.env)))
		})
	}
	t.Run("WithHelmEnv reads the variables without the plugin's", func(t *testing.T) {
		env := envOf(map[string]string{EnvHelmKubeContext: "two", EnvHelmNamespace: "npu"})
		assert.Equal(t, Target{Context: "two", Namespace: "npu"}, Target{}.WithHelmEnv(env))
		assert.Equal(t, Target{Context: "one", Namespace: "npu"}, Target{Context: "one"}.WithHelmEnv(env))
	})
}

// TestKubeTargetClientConfig: the target selects the cluster and namespace as kubectl would,
// from KUBECONFIG or --kubeconfig, with the plugin environment as defaults.
func TestKubeTargetClientConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, []byte(twoContexts), 0o600))
	for name, tc := range map[string]struct {
		target     Target
		kubeconfig string // KUBECONFIG
		env        map[string]string
		host, ns   string
	}{
		"KUBECONFIG, current context":         {kubeconfig: path, host: "https://one.example:6443", ns: "ns-one"},
		"--kubeconfig, current context":       {target: Target{Kubeconfig: path}, host: "https://one.example:6443", ns: "ns-one"},
		"--kube-context":                      {target: Target{Context: "two"}, kubeconfig: path, host: "https://two.example:6443", ns: "default"},
		"HELM_KUBECONTEXT and HELM_NAMESPACE": {kubeconfig: path, env: map[string]string{EnvHelmPluginDir: "/p", EnvHelmKubeContext: "two", EnvHelmNamespace: "npu"}, host: "https://two.example:6443", ns: "npu"},
		"HELM_NAMESPACE over the context's":   {kubeconfig: path, env: map[string]string{EnvHelmBin: "helm", EnvHelmNamespace: "npu"}, host: "https://one.example:6443", ns: "npu"},
		"--kube-context over HELM_KUBECONTEXT": {
			target: Target{Context: "one"}, kubeconfig: path,
			env:  map[string]string{EnvHelmBin: "helm", EnvHelmKubeContext: "two"},
			host: "https://one.example:6443", ns: "ns-one",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			cc := tc.target.WithHelmPluginEnv(envOf(tc.env)).ClientConfig()
			cfg, err := cc.ClientConfig()
			require.NoError(t, err)
			assert.Equal(t, tc.host, cfg.Host)
			ns, _, err := cc.Namespace()
			require.NoError(t, err)
			assert.Equal(t, tc.ns, ns)
		})
	}

	t.Run("an unknown context is an error", func(t *testing.T) {
		t.Setenv("KUBECONFIG", path)
		_, err := Target{Context: "three"}.ClientConfig().ClientConfig()
		require.Error(t, err)
		assert.Contains(t, err.Error(), `context "three" does not exist`)
	})
}

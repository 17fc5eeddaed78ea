package cluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Helm's plugin environment (helm.sh/helm pkg/cli EnvSettings.EnvVars): what a Helm CLI plugin
// is started with. Helm takes its own --kube-context, -n/--namespace and --kubeconfig out of a
// plugin's arguments and passes them as HELM_KUBECONTEXT, HELM_NAMESPACE and KUBECONFIG.
const (
	EnvHelmPluginDir   = "HELM_PLUGIN_DIR"
	EnvHelmBin         = "HELM_BIN"
	EnvHelmKubeContext = "HELM_KUBECONTEXT"
	EnvHelmNamespace   = "HELM_NAMESPACE"
)

// Target is the cluster a command reaches: a kubeconfig file (empty: KUBECONFIG, else
// ~/.kube/config, else the in-cluster config), a context in it (empty: its current context)
// and a namespace (empty: the context's, else "default").
type Target struct {
	Kubeconfig string
	Context    string
	Namespace  string
}

// RunsAsHelmPlugin reports whether Helm started driverguard as a plugin: Helm 3 and 4 set
// HELM_PLUGIN_DIR (and HELM_BIN for a CLI plugin).
func RunsAsHelmPlugin(getenv func(string) string) bool {
	return getenv(EnvHelmPluginDir) != "" || getenv(EnvHelmBin) != ""
}

// WithHelmPluginEnv returns t with Helm's plugin environment as its defaults when driverguard
// runs as a Helm plugin (see WithHelmEnv); outside Helm, t is unchanged.
func (t Target) WithHelmPluginEnv(getenv func(string) string) Target {
	if !RunsAsHelmPlugin(getenv) {
		return t
	}
	return t.WithHelmEnv(getenv)
}

// WithHelmEnv returns t with HELM_KUBECONTEXT as its default context and HELM_NAMESPACE as its
// default namespace, as Helm itself reads them: a value t already has (a flag given) wins.
// KUBECONFIG needs nothing: client-go's loading rules read it, and Helm sets it for a plugin
// from its own --kubeconfig.
func (t Target) WithHelmEnv(getenv func(string) string) Target {
	if t.Context == "" {
		t.Context = getenv(EnvHelmKubeContext)
	}
	if t.Namespace == "" {
		t.Namespace = getenv(EnvHelmNamespace)
	}
	return t
}

// ClientConfig is the client configuration of t, as kubectl and Helm load it.
func (t Target) ClientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = t.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: t.Context}
	overrides.Context.Namespace = t.Namespace
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// Describe names the target in messages: the context and the API server of cfg.
func (t Target) Describe(cfg *rest.Config) string {
	ctx := t.Context
	if ctx == "" {
		if raw, err := t.ClientConfig().RawConfig(); err == nil {
			ctx = raw.CurrentContext
		}
	}
	if ctx == "" {
		return "the cluster at " + cfg.Host
	}
	return fmt.Sprintf("the cluster of context %q (%s)", ctx, cfg.Host)
}

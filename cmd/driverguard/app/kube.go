package app

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/routing"
)

// Helm's plugin environment (helm.sh/helm pkg/cli EnvSettings.EnvVars): what a Helm CLI plugin
// is started with. Helm takes its own --kube-context, -n/--namespace and --kubeconfig out of a
// plugin's arguments and passes them as HELM_KUBECONTEXT, HELM_NAMESPACE and KUBECONFIG.
const (
	envHelmPluginDir   = "HELM_PLUGIN_DIR"
	envHelmBin         = "HELM_BIN"
	envHelmKubeContext = "HELM_KUBECONTEXT"
	envHelmNamespace   = "HELM_NAMESPACE"
)

// kubeTarget is the cluster a command reaches: a kubeconfig file (empty: KUBECONFIG, else
// ~/.kube/config, else the in-cluster config), a context in it (empty: its current context)
// and a namespace (empty: the context's, else "default").
type kubeTarget struct {
	kubeconfig string
	context    string
	namespace  string
}

// runsAsHelmPlugin reports whether Helm started driverguard as a plugin: Helm 3 and 4 set
// HELM_PLUGIN_DIR (and HELM_BIN for a CLI plugin).
func runsAsHelmPlugin(getenv func(string) string) bool {
	return getenv(envHelmPluginDir) != "" || getenv(envHelmBin) != ""
}

// withHelmPluginEnv returns t with Helm's plugin environment as its defaults when driverguard
// runs as a Helm plugin (see withHelmEnv); outside Helm, t is unchanged.
func (t kubeTarget) withHelmPluginEnv(getenv func(string) string) kubeTarget {
	if !runsAsHelmPlugin(getenv) {
		return t
	}
	return t.withHelmEnv(getenv)
}

// withHelmEnv returns t with HELM_KUBECONTEXT as its default context and HELM_NAMESPACE as its
// default namespace, as Helm itself reads them: a value t already has (a flag given) wins.
// KUBECONFIG needs nothing: client-go's loading rules read it, and Helm sets it for a plugin
// from its own --kubeconfig.
func (t kubeTarget) withHelmEnv(getenv func(string) string) kubeTarget {
	if t.context == "" {
		t.context = getenv(envHelmKubeContext)
	}
	if t.namespace == "" {
		t.namespace = getenv(envHelmNamespace)
	}
	return t
}

// clientConfig is the client configuration of t, as kubectl and Helm load it.
func (t kubeTarget) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = t.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: t.context}
	overrides.Context.Namespace = t.namespace
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// describe names the target in messages: the context and the API server.
func (t kubeTarget) describe(cfg *rest.Config) string {
	ctx := t.context
	if ctx == "" {
		if raw, err := t.clientConfig().RawConfig(); err == nil {
			ctx = raw.CurrentContext
		}
	}
	if ctx == "" {
		return "the cluster at " + cfg.Host
	}
	return fmt.Sprintf("the cluster of context %q (%s)", ctx, cfg.Host)
}

// readClusterState lists what an admission decision reads from the cluster — Nodes,
// RBLNDrivers and the RBLNClusterPolicy — and nothing else (list only; no Pods, unlike
// `plan --live`). Without the CRDs the cluster holds no drivers and no cluster policy.
func readClusterState(ctx context.Context, cfg *rest.Config, userAgent string) (release.Cluster, error) {
	var cl release.Cluster
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return cl, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return cl, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return cl, fmt.Errorf("connecting: %w", err)
	}
	var (
		nodes    corev1.NodeList
		drivers  v1alpha1.RBLNDriverList
		policies v1alpha1.RBLNClusterPolicyList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"Nodes", &nodes}, {"RBLNDrivers", &drivers}, {"RBLNClusterPolicies", &policies}} {
		if err := c.List(ctx, l.list); err != nil {
			if meta.IsNoMatchError(err) {
				continue // the CRDs are not installed: no drivers, no cluster policy
			}
			return cl, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	cl.Nodes = routing.NodesFromCore(nodes.Items)
	cl.Drivers = drivers.Items
	for i := range policies.Items {
		if policies.Items[i].Name == v1alpha1.ClusterPolicyName {
			cl.ClusterPolicy = &policies.Items[i]
		}
	}
	return cl, nil
}

// defaultLiveTimeout bounds reading the cluster state for post-render.
const defaultLiveTimeout = 20 * time.Second

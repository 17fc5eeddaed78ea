package action

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driverguard/driverguard/cluster"
)

// Live selects the cluster a job reads instead of files: with Live, or a Target.Kubeconfig,
// the API server of Target (Helm's plugin environment as its defaults when driverguard runs as
// a Helm plugin) is listed, never written.
type Live struct {
	Live   bool
	Target cluster.Target
}

// enabled reports whether the cluster is read live.
func (l Live) enabled() bool { return l.Live || l.Target.Kubeconfig != "" }

// liveTimeout bounds reading the cluster for a one-shot job.
const liveTimeout = 2 * time.Minute

// check refuses a cluster given both live and as files, and a --kube-context that selects a
// cluster nothing reads (usesTarget: something else reads Target, e.g. plan's --release).
// --kube-context from Helm's plugin environment is not a flag given: it is never refused.
func (l Live) check(files cluster.Files, usesTarget bool) error {
	var given []string
	for _, f := range []stdinUser{{"--nodes", files.Nodes}, {"--drivers", files.Drivers}, {"--cluster-policy", files.ClusterPolicy}, {"--pods", files.Workloads}} {
		if f.value != "" {
			given = append(given, f.flag)
		}
	}
	if l.enabled() && len(given) > 0 {
		return fmt.Errorf("--live/--kubeconfig reads the cluster, and %s read files of it: use one or the other", strings.Join(given, ", "))
	}
	if l.Target.Context != "" && !l.enabled() && !usesTarget {
		return fmt.Errorf("--kube-context %q selects a cluster to read, but nothing is read from a cluster: the cluster is read with --live (or --kubeconfig); --nodes, --drivers and --cluster-policy read files",
			truncateValue(l.Target.Context))
	}
	return nil
}

// clusterSource is where a job reads the cluster: the files given, or live (list only) the API
// server of target.
type clusterSource struct {
	files  cluster.Files
	live   bool
	target cluster.Target
}

// source is the one "live or files" decision of the jobs that read a cluster (check, preview,
// audit, plan): live with --live or a --kubeconfig, through Target with Helm's plugin
// environment as its defaults; the files otherwise. It refuses nothing (see resolve).
func (l Live) source(files cluster.Files) clusterSource {
	return clusterSource{files: files, live: l.enabled(), target: l.Target.WithHelmPluginEnv(os.Getenv)}
}

// resolve is source after check: a cluster given both live and as files, or a --kube-context
// nothing reads, is refused.
func (l Live) resolve(files cluster.Files, usesTarget bool) (clusterSource, error) {
	if err := l.check(files, usesTarget); err != nil {
		return clusterSource{}, err
	}
	return l.source(files), nil
}

// clusterSources says, in "no cluster to ..." errors, where a cluster is looked for (client-go's
// loading rules, in their order).
const clusterSources = "--kubeconfig, KUBECONFIG, ~/.kube/config or the in-cluster config"

// apiServer is the one way a job reaches an API server: target's client configuration, loaded
// as kubectl and Helm load it.
type apiServer struct {
	target cluster.Target
	cc     clientcmd.ClientConfig
}

func apiServerOf(target cluster.Target) apiServer {
	return apiServer{target: target, cc: target.ClientConfig()}
}

// restConfig is a REST config of the caller's own (a copy) with userAgent and timeout (0: none
// but the context's); use says what the cluster was wanted for when there is none ("no cluster
// to <use> (...)").
func (a apiServer) restConfig(use, userAgent string, timeout time.Duration) (*rest.Config, error) {
	cfg, err := a.cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to %s (%s): %w", use, clusterSources, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent, cfg.Timeout = userAgent, timeout
	return cfg, nil
}

// namespace is the target's namespace, else its context's, else "default".
func (a apiServer) namespace() string {
	if a.target.Namespace != "" {
		return a.target.Namespace
	}
	if ns, _, err := a.cc.Namespace(); err == nil && ns != "" {
		return ns
	}
	return "default"
}

// readCluster reads the cluster of src: its files, or live its API server (list only).
func (c *Configuration) readCluster(ctx context.Context, src clusterSource, o cluster.LiveOptions) (*cluster.State, error) {
	if !src.live {
		return cluster.FromFiles(ctx, src.files, c.readOptions())
	}
	cfg, err := apiServerOf(src.target).restConfig("read", o.UserAgent, 0)
	if err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = src.target.Describe(cfg)
	}
	if o.Timeout == 0 {
		o.Timeout = liveTimeout
	}
	st, err := cluster.ReadLive(ctx, cfg, o)
	var le *cluster.LiveError
	switch {
	case errors.As(err, &le) && le.Op == "connecting":
		return nil, fmt.Errorf("connecting to %s: %w%s", o.Name, le.Err, refusalHint(le.Err))
	case errors.As(err, &le):
		return nil, fmt.Errorf("listing %s in %s: %w%s", le.ListType, o.Name, le.Err, refusalHint(le.Err))
	}
	return st, err
}

// refusalHint says what to fix when the cluster answered and refused the reader ("; ..."),
// "" for any other error.
func refusalHint(err error) string {
	var r *cluster.RefusedError
	switch {
	case !errors.As(err, &r):
		return ""
	case r.Code == http.StatusUnauthorized:
		return "; the kubeconfig's credentials were not accepted (an expired token or client certificate?)"
	}
	return "; the kubeconfig's user may not list what driverguard reads: grant it list (RBAC; driverguard never writes)"
}

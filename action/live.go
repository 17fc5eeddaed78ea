package action

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

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

// target is Target with Helm's plugin environment as its defaults.
func (l Live) target() cluster.Target { return l.Target.WithHelmPluginEnv(os.Getenv) }

// readCluster reads the cluster from files or, live, from target's cluster (list only).
func (c *Configuration) readCluster(ctx context.Context, files cluster.Files, target cluster.Target, live bool, o cluster.LiveOptions) (*cluster.State, error) {
	if !live {
		return cluster.FromFiles(ctx, files, c.readOptions())
	}
	cfg, err := target.ClientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to read (in-cluster config, --kubeconfig or KUBECONFIG): %w", err)
	}
	if o.Name == "" {
		o.Name = target.Describe(cfg)
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

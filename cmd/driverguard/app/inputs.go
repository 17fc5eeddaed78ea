package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/routing"
)

// readNodes reads a node inventory: `kubectl get nodes -o yaml` output or a Node stream.
func readNodes(path string, s Streams) ([]routing.Node, error) {
	docs, err := decode.File(path, s.In)
	if err != nil {
		return nil, usageError(fmt.Errorf("reading nodes: %w", err))
	}
	nodes, err := decode.Nodes(docs)
	if err != nil {
		return nil, usageError(fmt.Errorf("reading nodes: %w", err))
	}
	return routing.NodesFromCore(nodes), nil
}

// readDrivers reads RBLNDrivers from any stream (e.g. the output of render).
func readDrivers(path string, s Streams) ([]v1alpha1.RBLNDriver, error) {
	docs, err := decode.File(path, s.In)
	if err != nil {
		return nil, usageError(fmt.Errorf("reading drivers: %w", err))
	}
	drivers, err := decode.Drivers(docs)
	if err != nil {
		return nil, usageError(fmt.Errorf("reading drivers: %w", err))
	}
	return drivers, nil
}

// readClusterPolicy reads the RBLNClusterPolicy that applies from a stream of documents.
func readClusterPolicy(path string, s Streams) (*v1alpha1.RBLNClusterPolicy, error) {
	docs, err := decode.File(path, s.In)
	if err == nil {
		var cps []v1alpha1.RBLNClusterPolicy
		if cps, err = decode.ClusterPolicies(docs); err == nil {
			return pickClusterPolicy(cps), nil
		}
	}
	return nil, usageError(fmt.Errorf("reading the cluster policy: %w", err))
}

// pickClusterPolicy is the one that applies: rbln-cluster-policy, else the first by name.
func pickClusterPolicy(cps []v1alpha1.RBLNClusterPolicy) *v1alpha1.RBLNClusterPolicy {
	var best *v1alpha1.RBLNClusterPolicy
	for i := range cps {
		switch cp := &cps[i]; {
		case cp.Name == v1alpha1.ClusterPolicyName:
			return cp
		case best == nil || cp.Name < best.Name:
			best = cp
		}
	}
	return best
}

// clusterFlags describe the cluster a release is judged against (check, preview, policy
// input and data): the node inventory and, for an upgrade, the current drivers and policy.
type clusterFlags struct {
	nodesFile         string
	driversFile       string
	clusterPolicyFile string
}

func (f *clusterFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.nodesFile, "nodes", "", "node inventory: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin); without it conflicts are judged on the selectors alone")
	fs.StringVar(&f.driversFile, "drivers", "", "the RBLNDrivers in the cluster now ('kubectl get rblndrivers -o yaml'): rendered drivers of the same name are judged as UPDATEs, and those the release owns and no longer renders are deleted")
	fs.StringVar(&f.clusterPolicyFile, "cluster-policy", "", "the RBLNClusterPolicy in the cluster now ('kubectl get rblnclusterpolicies -o yaml')")
}

func (f *clusterFlags) stdinUsers() []stdinUser {
	return []stdinUser{{"--nodes", f.nodesFile}, {"--drivers", f.driversFile}, {"--cluster-policy", f.clusterPolicyFile}}
}

// read reads the files given.
func (f *clusterFlags) read(s Streams) (release.Cluster, error) {
	var (
		cl  release.Cluster
		err error
	)
	if f.nodesFile != "" {
		if cl.Nodes, err = readNodes(f.nodesFile, s); err != nil {
			return cl, err
		}
	}
	if f.driversFile != "" {
		if cl.Drivers, err = readDrivers(f.driversFile, s); err != nil {
			return cl, err
		}
	}
	if f.clusterPolicyFile != "" {
		if cl.ClusterPolicy, err = readClusterPolicy(f.clusterPolicyFile, s); err != nil {
			return cl, err
		}
	}
	return cl, nil
}

// stdinUser is a flag whose value may be "-" (standard input).
type stdinUser struct {
	flag, value string
}

// oneStdin fails when more than one input reads standard input: the second would read
// nothing.
func oneStdin(users ...stdinUser) error {
	var names []string
	for _, u := range users {
		if u.value == "-" {
			names = append(names, u.flag)
		}
	}
	if len(names) > 1 {
		return usageError(fmt.Errorf("%s all read standard input ('-'); only one input can: write the others to files", strings.Join(names, ", ")))
	}
	return nil
}

// imageCheckFlags configure the optional registry check.
type imageCheckFlags struct {
	enabled bool
	timeout time.Duration
}

// check HEADs every composed image of res once and marks pools whose image is missing.
func (f imageCheckFlags) check(ctx context.Context, res *routing.Result) []registry.ImageResult {
	return registry.Check(ctx, res, registry.Options{Timeout: f.timeout})
}

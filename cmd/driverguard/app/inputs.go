package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/routing"
)

// inventoryFile is a cluster-state file flag: what it must hold, and how to get it.
type inventoryFile struct {
	flag  string   // --nodes
	what  string   // "nodes", for "reading nodes"
	kinds []string // the kinds it must hold (one of)
	get   string   // the command that writes one
	// alone are other kinds a file may hold without any of kinds: it then holds none (the
	// output of render with driver.enabled false is an RBLNClusterPolicy and no RBLNDriver).
	alone []string
}

var (
	nodesFile         = inventoryFile{flag: "--nodes", what: "nodes", kinds: []string{"Node"}, get: "kubectl get nodes -o yaml"}
	driversFile       = inventoryFile{flag: "--drivers", what: "drivers", kinds: []string{"RBLNDriver"}, get: "kubectl get rblndrivers -o yaml", alone: []string{"RBLNClusterPolicy", "CustomResourceDefinition"}}
	clusterPolicyFile = inventoryFile{flag: "--cluster-policy", what: "the cluster policy", kinds: []string{"RBLNClusterPolicy"}, get: "kubectl get rblnclusterpolicies -o yaml"}
	podsFile          = inventoryFile{flag: "--pods", what: "--pods", kinds: decode.WorkloadKinds, get: "kubectl get pods,pdb,rs,deploy,sts -A -o json"}
)

// read reads the documents of path within --max-inventory-size, stopping when ctx is done.
// A file that holds objects but none of the kinds it must is unusable (exit 2), as is any
// problem reading it; an empty file holds none.
func (f inventoryFile) read(ctx context.Context, path string, s Streams) ([]decode.Document, error) {
	docs, err := decode.ReadDocuments(ctx, path, s.In, int64(limitsOf(s).inventory))
	if err != nil {
		return nil, usageError(fmt.Errorf("reading %s: %w", f.what, withLimitHint(err, flagMaxInventorySize)))
	}
	if err := decode.RequireKinds(docs, decode.Name(path), f.kinds...); err != nil {
		var ke *decode.KindsError
		if errors.As(err, &ke) && onlyKinds(ke.Found, f.alone) {
			return docs, nil
		}
		return nil, usageError(fmt.Errorf("%s %w: give it '%s' output", f.flag, err, f.get))
	}
	return docs, nil
}

// onlyKinds reports whether every kind found is one of kinds.
func onlyKinds(found map[string]int, kinds []string) bool {
	for k := range found {
		if !slices.Contains(kinds, k) {
			return false
		}
	}
	return len(kinds) > 0
}

// decodeError is a file's objects that do not decode: unusable input.
func (f inventoryFile) decodeError(err error) error {
	return usageError(fmt.Errorf("reading %s: %w", f.what, err))
}

// readNodes reads a node inventory: `kubectl get nodes -o yaml` output or a Node stream.
func readNodes(ctx context.Context, path string, s Streams) ([]routing.Node, error) {
	docs, err := nodesFile.read(ctx, path, s)
	if err != nil {
		return nil, err
	}
	nodes, err := decode.Nodes(docs)
	if err != nil {
		return nil, nodesFile.decodeError(err)
	}
	return routing.NodesFromCore(nodes), nil
}

// readDrivers reads RBLNDrivers from any stream (e.g. the output of render); other kinds are
// skipped, but a file without any RBLNDriver is refused.
func readDrivers(ctx context.Context, path string, s Streams) ([]v1alpha1.RBLNDriver, error) {
	docs, err := driversFile.read(ctx, path, s)
	if err != nil {
		return nil, err
	}
	drivers, err := decode.Drivers(docs)
	if err != nil {
		return nil, driversFile.decodeError(err)
	}
	return drivers, nil
}

// readClusterPolicy reads the RBLNClusterPolicy that applies from a stream of documents (nil
// for an empty file).
func readClusterPolicy(ctx context.Context, path string, s Streams) (*v1alpha1.RBLNClusterPolicy, error) {
	docs, err := clusterPolicyFile.read(ctx, path, s)
	if err != nil {
		return nil, err
	}
	cps, err := decode.ClusterPolicies(docs)
	if err != nil {
		return nil, clusterPolicyFile.decodeError(err)
	}
	return pickClusterPolicy(cps), nil
}

// readWorkloads reads the --pods stream.
func readWorkloads(ctx context.Context, path string, s Streams) (*decode.Workloads, error) {
	docs, err := podsFile.read(ctx, path, s)
	if err != nil {
		return nil, err
	}
	wl, err := decode.ReadWorkloads(docs)
	if err != nil {
		return nil, podsFile.decodeError(err)
	}
	return wl, nil
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
func (f *clusterFlags) read(ctx context.Context, s Streams) (release.Cluster, error) {
	var (
		cl  release.Cluster
		err error
	)
	if f.nodesFile != "" {
		if cl.Nodes, err = readNodes(ctx, f.nodesFile, s); err != nil {
			return cl, err
		}
	}
	if f.driversFile != "" {
		if cl.Drivers, err = readDrivers(ctx, f.driversFile, s); err != nil {
			return cl, err
		}
	}
	if f.clusterPolicyFile != "" {
		if cl.ClusterPolicy, err = readClusterPolicy(ctx, f.clusterPolicyFile, s); err != nil {
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

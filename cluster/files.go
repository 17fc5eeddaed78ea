package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/routing"
)

// Files name the files a State is read from, each optional (""): "-" is ReadOptions.Stdin.
// Messages name a file by the flag every command gives it with (--nodes, --drivers,
// --cluster-policy, --pods).
type Files struct {
	// Nodes is 'kubectl get nodes -o yaml' output or a Node stream.
	Nodes string
	// Drivers is any stream that holds RBLNDrivers (other kinds are skipped), e.g. the output
	// of render or 'kubectl get rblndrivers -o yaml'.
	Drivers string
	// ClusterPolicy is a stream of RBLNClusterPolicies.
	ClusterPolicy string
	// Workloads is one stream of Pods, PodDisruptionBudgets, ReplicaSets, Deployments and
	// StatefulSets ('kubectl get pods,pdb,rs,deploy,sts -A -o json').
	Workloads string
}

// ReadOptions say how files are read.
type ReadOptions struct {
	// Stdin is what "-" reads.
	Stdin io.Reader
	// MaxBytes bounds each file (0: decode.DefaultMaxInventoryBytes).
	MaxBytes int64
	// LimitFlag, when set, is the flag that raises MaxBytes: an error names it.
	LimitFlag string
}

// file is one kind of cluster file: what it must hold, and how to get one.
type file struct {
	flag  string   // --nodes
	what  string   // "nodes", for "reading nodes"
	kinds []string // the kinds it must hold (one of)
	get   string   // the command that writes one
	// alone are other kinds a file may hold without any of kinds: it then holds none (the
	// output of render with driver.enabled false is an RBLNClusterPolicy and no RBLNDriver).
	alone []string
}

var (
	nodesFile         = file{flag: "--nodes", what: "nodes", kinds: []string{"Node"}, get: "kubectl get nodes -o yaml"}
	driversFile       = file{flag: "--drivers", what: "drivers", kinds: []string{"RBLNDriver"}, get: "kubectl get rblndrivers -o yaml", alone: []string{"RBLNClusterPolicy", "CustomResourceDefinition"}}
	clusterPolicyFile = file{flag: "--cluster-policy", what: "the cluster policy", kinds: []string{"RBLNClusterPolicy"}, get: "kubectl get rblnclusterpolicies -o yaml"}
	workloadsFile     = file{flag: "--pods", what: "--pods", kinds: decode.WorkloadKinds, get: "kubectl get pods,pdb,rs,deploy,sts -A -o json"}
)

// FromFiles reads the files given, in the order nodes, drivers, cluster policy, workloads.
// A file that cannot be read or holds none of the kinds it must is an error.
func FromFiles(ctx context.Context, f Files, o ReadOptions) (*State, error) {
	s := &State{}
	var err error
	if f.Nodes != "" {
		if s.nodes, err = ReadNodes(ctx, f.Nodes, o); err != nil {
			return nil, err
		}
	}
	if f.Drivers != "" {
		if s.drivers, err = ReadDrivers(ctx, f.Drivers, o); err != nil {
			return nil, err
		}
	}
	if f.ClusterPolicy != "" {
		if s.policies, err = ReadClusterPolicies(ctx, f.ClusterPolicy, o); err != nil {
			return nil, err
		}
	}
	src := Sources{
		Nodes:         fileSource(nodesFile.flag, f.Nodes, len(s.nodes)),
		Drivers:       fileSource(driversFile.flag, f.Drivers, len(s.drivers)),
		ClusterPolicy: fileSource(clusterPolicyFile.flag, f.ClusterPolicy, len(s.policies)),
	}
	if f.Workloads != "" {
		if s.workloads, err = ReadWorkloads(ctx, f.Workloads, o); err != nil {
			return nil, err
		}
		src.Workloads = fileSource(workloadsFile.flag, f.Workloads, len(s.workloads.Pods))
	}
	s.SetSources(src)
	return s, nil
}

// ReadNodes reads a node inventory: 'kubectl get nodes -o yaml' output or a Node stream.
func ReadNodes(ctx context.Context, path string, o ReadOptions) ([]routing.Node, error) {
	nodes, err := readKind(ctx, nodesFile, path, o, decode.Nodes)
	if err != nil {
		return nil, err
	}
	return routing.NodesFromCore(nodes), nil
}

// ReadDrivers reads the RBLNDrivers of any stream (e.g. the output of render); other kinds are
// skipped, but a file without any RBLNDriver is refused unless it holds only kinds render
// writes besides them.
func ReadDrivers(ctx context.Context, path string, o ReadOptions) ([]v1alpha1.RBLNDriver, error) {
	return readKind(ctx, driversFile, path, o, decode.Drivers)
}

// ReadClusterPolicies reads a stream of RBLNClusterPolicies (none for an empty file).
func ReadClusterPolicies(ctx context.Context, path string, o ReadOptions) ([]v1alpha1.RBLNClusterPolicy, error) {
	return readKind(ctx, clusterPolicyFile, path, o, decode.ClusterPolicies)
}

// ReadWorkloads reads the --pods stream.
func ReadWorkloads(ctx context.Context, path string, o ReadOptions) (*Workloads, error) {
	return readKind(ctx, workloadsFile, path, o, decode.ReadWorkloads)
}

// readKind reads path as f and decodes its objects.
func readKind[T any](ctx context.Context, f file, path string, o ReadOptions, decodeDocs func([]decode.Document) (T, error)) (T, error) {
	var zero T
	docs, err := f.read(ctx, path, o)
	if err != nil {
		return zero, err
	}
	v, err := decodeDocs(docs)
	if err != nil {
		return zero, fmt.Errorf("reading %s: %w", f.what, err)
	}
	return v, nil
}

// Limit is the most bytes one file may hold: MaxBytes, else the default.
func (o ReadOptions) Limit() int64 {
	if o.MaxBytes <= 0 {
		return decode.DefaultMaxInventoryBytes
	}
	return o.MaxBytes
}

// read reads the documents of path within o.MaxBytes, stopping when ctx is done. A file that
// holds objects but none of the kinds it must is unusable, as is any problem reading it; an
// empty file holds none.
func (f file) read(ctx context.Context, path string, o ReadOptions) ([]decode.Document, error) {
	docs, err := decode.ReadDocuments(ctx, path, o.Stdin, o.Limit())
	if err != nil {
		var tl *decode.TooLargeError
		if errors.As(err, &tl) && o.LimitFlag != "" {
			err = fmt.Errorf("%w; raise the limit with --%s", err, o.LimitFlag)
		}
		return nil, fmt.Errorf("reading %s: %w", f.what, err)
	}
	if err := decode.RequireKinds(docs, decode.Name(path), f.kinds...); err != nil {
		var ke *decode.KindsError
		if errors.As(err, &ke) && onlyKinds(ke.Found, f.alone) {
			return docs, nil
		}
		return nil, fmt.Errorf("%s %w: give it '%s' output", f.flag, err, f.get)
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

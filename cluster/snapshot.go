package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"weak"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
)

// Snapshot is an immutable view of the cluster: the RBLNDrivers, the nodes (name and labels),
// the RBLNClusterPolicy that applies, and the routing index built from them once. Callers
// must not modify anything reachable from it.
type Snapshot struct {
	drivers       []v1alpha1.RBLNDriver // sorted by name
	nodes         []routing.Node        // sorted by name
	clusterPolicy *v1alpha1.RBLNClusterPolicy
	index         *routing.Index

	// route is the routing of the snapshot, kept while someone holds it (a pass of the
	// audit, the policies' cluster view being built): at 100,000 nodes it is ten megabytes
	// that a snapshot answering admission requests does not need.
	routeMu sync.Mutex
	route   weak.Pointer[routing.Result]
}

// Snapshot is the State's current view; it copies the lists, so later changes to the State do
// not reach it (the objects themselves are shared: change them only through Set*).
func (s *State) Snapshot() *Snapshot {
	return NewSnapshot(slices.Clone(s.drivers), slices.Clone(s.nodes), slices.Clone(s.policies))
}

// NewSnapshot builds a snapshot and its routing index. It takes ownership of the slices and
// of the objects they reference. clusterPolicies may hold any number of RBLNClusterPolicies;
// see [State.ClusterPolicy] for which one counts.
func NewSnapshot(drivers []v1alpha1.RBLNDriver, nodes []routing.Node, clusterPolicies []v1alpha1.RBLNClusterPolicy) *Snapshot {
	slices.SortStableFunc(drivers, func(a, b v1alpha1.RBLNDriver) int { return strings.Compare(a.Name, b.Name) })
	cp := (&State{policies: clusterPolicies}).ClusterPolicy()
	index := routing.NewIndexOwning(drivers, nodes, routing.OptionsFor(cp))
	return &Snapshot{
		drivers:       drivers,
		nodes:         index.Nodes(), // sorted by name: one slice for both
		clusterPolicy: cp,
		index:         index,
	}
}

// Drivers returns every RBLNDriver, sorted by name.
func (s *Snapshot) Drivers() []v1alpha1.RBLNDriver { return s.drivers }

// Nodes returns every node (name and labels), sorted by name.
func (s *Snapshot) Nodes() []routing.Node { return s.nodes }

// ClusterPolicy returns the RBLNClusterPolicy that applies, or nil when there is none.
func (s *Snapshot) ClusterPolicy() *v1alpha1.RBLNClusterPolicy { return s.clusterPolicy }

// Index returns the routing index of the snapshot's drivers and nodes.
func (s *Snapshot) Index() *routing.Index { return s.index }

// Driver returns the RBLNDriver named name.
func (s *Snapshot) Driver(name string) (*v1alpha1.RBLNDriver, bool) {
	i, ok := slices.BinarySearchFunc(s.drivers, name, func(d v1alpha1.RBLNDriver, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return nil, false
	}
	return &s.drivers[i], true
}

// AutoUpgrade reports the cluster policy's upgradePolicy.autoUpgrade (false without a policy).
func (s *Snapshot) AutoUpgrade() bool {
	return s.clusterPolicy != nil && s.clusterPolicy.Spec.Driver.UpgradePolicy.AutoUpgrade
}

// Route returns the routing of the snapshot: the same result to every caller while one holds
// it, computed again after the garbage collector freed it (the policies' cluster view and the
// audit need it; admission requests do not).
func (s *Snapshot) Route() *routing.Result {
	s.routeMu.Lock()
	defer s.routeMu.Unlock()
	if r := s.route.Value(); r != nil {
		return r
	}
	r := s.index.Route()
	s.route = weak.Make(r)
	return r
}

// ClusterView is the snapshot as policies read it (data.driverguard_cluster): every driver,
// the cluster policy, and every node with the owner and pool routing gives it.
func (s *Snapshot) ClusterView() *policy.ClusterView {
	v := &policy.ClusterView{ClusterPolicy: s.clusterPolicy, Drivers: make([]*v1alpha1.RBLNDriver, len(s.drivers)), Nodes: make([]policy.ClusterNode, len(s.nodes))}
	for i := range s.drivers {
		v.Drivers[i] = &s.drivers[i]
	}
	res := s.Route()
	for i, n := range s.nodes {
		v.Nodes[i] = policy.ClusterNode{Name: n.Name, Labels: n.Labels}
		if i < len(res.Nodes) && res.Nodes[i].Name == n.Name { // both sorted by name
			v.Nodes[i].Owner, v.Nodes[i].Pool = res.Nodes[i].Owner, res.Nodes[i].Pool
		}
	}
	return v
}

// Static serves one Snapshot that never changes: a cluster read from files (`driverguard
// review`) or built by tests. It is a webhook.State.
type Static struct {
	snap *Snapshot

	syncer   policy.ClusterSyncer
	syncOnce sync.Once
	syncErr  error
}

// NewStatic serves the snapshot of s as it is now.
func NewStatic(s *State) *Static { return &Static{snap: s.Snapshot()} }

// SyncTo makes syncer's cluster view (data.driverguard_cluster) the snapshot's, on first use.
func (s *Static) SyncTo(syncer policy.ClusterSyncer) { s.syncer = syncer }

// Snapshot returns the snapshot. The first call syncs the policies' cluster view; an error is
// a 503 Service Unavailable.
func (s *Static) Snapshot(ctx context.Context) (*Snapshot, error) {
	if s.syncer != nil {
		s.syncOnce.Do(func() { s.syncErr = s.syncer.SyncCluster(ctx, s.snap.ClusterView()) })
		if s.syncErr != nil {
			return nil, syncFailed(s.syncErr)
		}
	}
	return s.snap, nil
}

func syncFailed(err error) error {
	return apierrors.NewServiceUnavailable("loading the cluster view into the policy engine: " + err.Error())
}

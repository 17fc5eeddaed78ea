package webhook

import (
	"context"

	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/policy"
)

// State is the webhook's view of the cluster. The webhook asks it for one [cluster.Snapshot]
// per admission request, so a request sees drivers, nodes, the cluster policy and the routing
// index of the same moment.
//
// [cluster.Informed] (informer events of a live cluster, for `serve`) and [cluster.Static] (a
// cluster read from files, for `review` and tests) implement it.
type State interface {
	// Snapshot returns the current view. It fails with an error that maps to 503 Service
	// Unavailable when the view is not ready yet (caches not synced).
	Snapshot(ctx context.Context) (*cluster.Snapshot, error)
}

// labelKeyState is a State whose nodes keep only some labels (cluster.Informed): before a
// decision, the webhook has it keep the driver's selector keys and the labels the policies
// declare, so that the nodes a key no stored driver selects are known.
type labelKeyState interface {
	EnsureLabelKeys(ctx context.Context, keys []string) error
}

// syncingState is a State that keeps a policy engine's cluster view
// (data.driverguard_cluster) equal to its snapshots; New hands it the decisions' evaluator
// when that reads the cluster.
type syncingState interface {
	SyncTo(policy.ClusterSyncer)
}

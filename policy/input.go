package policy

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// InputSchemaVersion versions the input document and the cluster data document
// (docs/policy-authoring.md "1. Look at what a policy sees", docs/policy-input.schema.json). Changing their shape is a breaking change for every user
// policy: bump it and say so in the release notes.
//
// v2 moved the cluster out of the input: input.cluster (every other driver and every node,
// copied into every evaluation) became data.driverguard_cluster, held once and shared by all
// evaluations, and input.routing carries what routing says about the object itself.
const InputSchemaVersion = "v2"

// Source says where an evaluation runs.
type Source string

const (
	// SourceRender is `driverguard check` (and `policy input`) on rendered values.
	SourceRender Source = "render"
	// SourceAdmission is the admission webhook (and `driverguard review`).
	SourceAdmission Source = "admission"
	// SourceAudit is the audit of what is stored (serve's, `driverguard audit`): each object
	// judged as if created now against the current cluster.
	SourceAudit Source = "audit"
)

// Operations of Input.Operation.
const (
	OperationCreate = "CREATE"
	OperationUpdate = "UPDATE"
	OperationDelete = "DELETE"
)

// Input is the document every policy sees as `input`, built the same way at render and at
// admission time: the object and what is specific to it. The rest of the cluster is
// data.driverguard_cluster ([ClusterView]).
type Input struct {
	// Object is the object under evaluation: an RBLNDriver or an RBLNClusterPolicy, as a typed
	// object, its JSON map, or its JSON text (json.RawMessage, e.g. an admission request's
	// object, converted without decoding into Go types first).
	Object any `json:"object"`
	// OldObject is the stored object on UPDATE (same forms as Object).
	OldObject any `json:"oldObject,omitempty"`
	// Operation is CREATE or UPDATE.
	Operation string `json:"operation"`
	// UserInfo is the requesting user (admission only).
	UserInfo *authenticationv1.UserInfo `json:"userInfo,omitempty"`
	// Source is render, admission or audit.
	Source Source `json:"source"`
	// Routing is what the routing engine says the RBLNDriver under evaluation would do if it
	// were admitted now, in place of its stored version; absent for an RBLNClusterPolicy.
	Routing *Routing `json:"routing,omitempty"`
	// RoutingFunc, in place of Routing, computes it when a policy can read it: for an engine
	// whose only readers of input.routing are guarded rules ([RoutingGuard]), when a guard
	// holds on PoolTags. Not part of the document.
	RoutingFunc func() *Routing `json:"-"`
	// PoolTags are the image tags of the pools the driver would run (with RoutingFunc).
	PoolTags []string `json:"-"`
}

// Routing is the routing verdict on one RBLNDriver (docs/routing.md "Owner of a node", "Pools, DaemonSets, images"), computed from the nodes its
// selector matches only: policies iterate over its pools, never over the cluster's nodes.
type Routing struct {
	// Selected is the number of candidate nodes (rebellions.ai/npu.deploy.driver=true) the
	// driver's nodeSelector matches.
	Selected int `json:"selected"`
	// Nodes is the number of nodes that would run this driver: those it owns, plus tied
	// nodes it keeps as their current owner.
	Nodes int `json:"nodes"`
	// Pools are the driver DaemonSets it would run, sorted by name.
	Pools []Pool `json:"pools"`
	// Unpooled are nodes it would own that join no pool, sorted by name.
	Unpooled []UnpooledNode `json:"unpooled"`
	// Ties are existing nodes on which it would tie (no unique most specific driver), one
	// entry per tied set.
	Ties []Tie `json:"ties"`
	// PotentialTies are drivers it could tie with on some node, existing or future.
	PotentialTies []PotentialTie `json:"potentialTies"`
}

// Pool is one driver DaemonSet of the driver: the nodes that share family, OS and kernel.
type Pool struct {
	Name      string `json:"name"`
	DaemonSet string `json:"daemonSet"`
	// Family, OS, OSVersion and Kernel are the pool's raw node labels.
	Family    string `json:"family"`
	OS        string `json:"os"`
	OSVersion string `json:"osVersion"`
	Kernel    string `json:"kernel"`
	// Tag is the driver image tag <spec.version>-<kernel>-<os><osVersion>, composed from the
	// raw labels even when it is not a valid tag.
	Tag string `json:"tag"`
	// Image is the composed driver image, "" when it cannot be composed (see Reason).
	Image string `json:"image"`
	// Reason is "", DaemonSetNotCreated or InvalidImageTag.
	Reason string `json:"reason"`
	// Nodes are the pool's nodes, sorted.
	Nodes []string `json:"nodes"`
}

// UnpooledNode is a node the driver would own without a pool.
type UnpooledNode struct {
	Name string `json:"name"`
	// Reason is NFDLabelMissing, DriverFamilyLabelMissing, PoolNameCollision or
	// ConflictingNodeSelector (a tied node it keeps).
	Reason string `json:"reason"`
}

// Tie is a set of drivers tied on existing nodes.
type Tie struct {
	// Resources are the tied drivers, the object included, sorted.
	Resources []string `json:"resources"`
	// Nodes is a sorted sample of at most 10 tied nodes; Total counts them all.
	Nodes []string `json:"nodes"`
	Total int      `json:"total"`
}

// PotentialTie is another driver the object could tie with on some node.
type PotentialTie struct {
	Resource string `json:"resource"`
	// Identical is true when both selectors are the same.
	Identical bool `json:"identical"`
	// Labels are the labels of the smallest node on which the two would tie.
	Labels map[string]string `json:"labels"`
}

// Message is one deny or warn message with the rule that produced it.
type Message struct {
	// Package is the Rego package, e.g. driverguard.lib.versions.
	Package string `json:"package"`
	// Rule is deny or warn.
	Rule string `json:"rule"`
	Msg  string `json:"msg"`
	// Enforcement is set when the policy's is not deny: warn (a deny message that warns) or
	// audit (a message that changes no verdict).
	Enforcement Enforcement `json:"enforcement,omitempty"`
}

// Decision is the outcome of evaluating every policy on one input.
type Decision struct {
	Deny []Message `json:"deny"`
	Warn []Message `json:"warn"`
	// Audit are the messages of policies in audit enforcement: reported, never enforced.
	Audit []Message `json:"audit,omitempty"`
}

// Evaluator evaluates the policies on one input. Implementations are safe for concurrent use;
// the decision core (package decision) depends only on this interface.
type Evaluator interface {
	Evaluate(ctx context.Context, in *Input) (*Decision, error)
}

// ClusterSyncer is implemented by evaluators that read the cluster view
// (data.driverguard_cluster): the webhook hands them every new view of its informer caches.
type ClusterSyncer interface {
	// SyncCluster makes v the cluster view, writing only what changed since the last view.
	SyncCluster(ctx context.Context, v *ClusterView) error
}

// RoutingReader is implemented by evaluators that know whether their policies read
// input.routing; when they do not, callers may leave it out (it costs O(the nodes the object
// selects) to build).
type RoutingReader interface {
	ReadsRouting() bool
}

// RoutingGuard is implemented by evaluators that may read input.routing only for some pools
// (Engine: when every policy that reads it is a bundled rule with a Go guard on the pools'
// image tags). When GuardsRouting is true, callers give Input.RoutingFunc and Input.PoolTags
// instead of Input.Routing, and the evaluator builds input.routing only when a guard holds.
type RoutingGuard interface {
	GuardsRouting() bool
}

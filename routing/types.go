package routing

import (
	"slices"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Node reasons: the closed set of values of [NodeResult.Reason] (docs/routing.md "`route -o json` contract").
const (
	// ReasonOutOfScope: the node is not a candidate (rebellions.ai/npu.deploy.driver is not
	// "true") and must carry no owner label.
	ReasonOutOfScope = "OutOfScope"
	// ReasonConflictingNodeSelector: no unique most specific driver matches the node.
	ReasonConflictingNodeSelector = finding.RuleConflictingNodeSelector
	// ReasonNoMatchingDriver: no valid driver matches the candidate node.
	ReasonNoMatchingDriver = "NoMatchingDriver"
	// ReasonNFDLabelMissing: the node is owned but lacks a Node Feature Discovery label (OS
	// ID, VERSION_ID or kernel-version.full), so the operator puts it in no pool.
	ReasonNFDLabelMissing = finding.RuleNFDLabelMissing
	// ReasonDriverFamilyLabelMissing: the node is owned but its rebellions.ai/npu.family label
	// is absent, not a DNS-1123 label, or makes the pool name too long: the operator's
	// DriverFamilyLabelMissing, and no pool.
	ReasonDriverFamilyLabelMissing = finding.RuleDriverFamilyLabelMissing
	// ReasonPoolNameCollision: the node's labels compose a pool name that another node of the
	// same owner (the first by name) defines with other labels; the pool's DaemonSet does not
	// select the node.
	ReasonPoolNameCollision = finding.RulePoolNameCollision
	// ReasonDaemonSetNotCreated: the operator cannot create the pool's DaemonSet: its name or
	// pool label is refused by the API server, or another RBLNDriver's pool has the same
	// DaemonSet name.
	ReasonDaemonSetNotCreated = finding.RuleDaemonSetNotCreated
	// ReasonInvalidImageTag: no valid driver image can be composed for the node's pool: the
	// operator refuses the spec (a digest, no version) or composes a reference no registry
	// can serve (a tag that is not a valid OCI tag, an invalid repository path component).
	ReasonInvalidImageTag = finding.RuleInvalidImageTag
)

// Resource and pool reasons.
const (
	// ReasonInvalidSpec: the operator refuses the driver (a reserved selector key, a name over
	// 63 characters); it takes no part in routing.
	ReasonInvalidSpec = operator.ReasonInvalidSpec
	// ReasonBeingDeleted: the driver has a deletionTimestamp; it takes no part in routing.
	ReasonBeingDeleted = "BeingDeleted"
	// ReasonDriverImageNotFound: the registry answered 404 for the pool's composed image.
	// Set on a [Pool] by the registry check, never by [Route].
	ReasonDriverImageNotFound = finding.RuleDriverImageNotFound
)

// ConflictSampleSize is the largest number of node names a [Conflict] lists.
const ConflictSampleSize = 10

// Node is the part of a Kubernetes Node that routing reads.
type Node struct {
	Name   string
	Labels map[string]string
}

// NodesFromCore converts Kubernetes Nodes. The label maps are shared, not copied.
func NodesFromCore(nodes []corev1.Node) []Node {
	out := make([]Node, len(nodes))
	for i := range nodes {
		out[i] = Node{Name: nodes[i].Name, Labels: nodes[i].Labels}
	}
	return out
}

// Result is the routing of a set of nodes. Its JSON form is the `driverguard route -o json`
// contract; every list is sorted and never null.
type Result struct {
	// Nodes has one entry per input node, sorted by name.
	Nodes []NodeResult `json:"nodes"`
	// Conflicts has one entry per distinct tied set, sorted by its resources.
	Conflicts []Conflict `json:"conflicts"`
	// Invalid lists the drivers that take no part in routing, sorted by name.
	Invalid []Invalid `json:"invalid"`
	// Pools lists the driver DaemonSets, sorted by pool name, then owner.
	Pools []Pool `json:"pools"`
	// SMD lists the RSMD DaemonSet of every driver that runs at least one pool, sorted by
	// resource name.
	SMD []SMDDaemonSet `json:"smd"`
}

// NodeResult is the routing of one node.
type NodeResult struct {
	Name string `json:"name"`
	// Owner is the resulting value of the owner label; "" means the label is removed.
	Owner string `json:"owner"`
	// Pool is the pool name, "" when the node joins no pool.
	Pool string `json:"pool"`
	// Image is the composed driver image, "" when none can be composed.
	Image string `json:"image"`
	// Reason is "" or one of the Reason* node constants.
	Reason string `json:"reason"`
	// Detail explains Reason for humans (e.g. which labels are missing).
	Detail string `json:"detail,omitempty"`
	// CurrentOwner is the owner label the node carries now, if any.
	CurrentOwner string `json:"currentOwner,omitempty"`
}

// Conflict is a set of resources tied on some nodes.
type Conflict struct {
	// Resources are the tied (maximal matching) resources, sorted.
	Resources []string `json:"resources"`
	// Nodes is a sorted sample of at most ConflictSampleSize tied nodes.
	Nodes []string `json:"nodes"`
	// Total is the number of tied nodes.
	Total int `json:"total"`
}

// Invalid is a driver excluded from routing.
type Invalid struct {
	Resource string `json:"resource"`
	// Reason is ReasonInvalidSpec or ReasonBeingDeleted.
	Reason string `json:"reason"`
	// Message lists every problem found.
	Message string `json:"message"`
	// Errors are the structured validation errors behind Message.
	Errors field.ErrorList `json:"-"`
}

// Pool is one driver DaemonSet: the nodes of one owner that share family, OS and kernel.
type Pool struct {
	Name      string `json:"name"`
	DaemonSet string `json:"daemonSet"`
	Owner     string `json:"owner"`
	// Image is the composed driver image, "" when it is invalid (see Reason).
	Image string `json:"image"`
	// Nodes are the pool's nodes, sorted.
	Nodes []string `json:"nodes"`
	// Reason is "", ReasonDaemonSetNotCreated, ReasonInvalidImageTag, or (after a registry
	// check) ReasonDriverImageNotFound.
	Reason string `json:"reason,omitempty"`
	// Detail explains Reason, naming the exact image path.
	Detail string `json:"detail,omitempty"`
	// NodeSelector is the pod nodeSelector of the pool's DaemonSet: the scope and owner labels,
	// the raw NFD labels and the family (operator.Pool.NodeSelector).
	NodeSelector map[string]string `json:"nodeSelector"`
	// Labels is the pool as the operator composes it from its first node's labels.
	Labels operator.Pool `json:"-"`
}

// SMDDaemonSet is the RSMD DaemonSet of one driver: the operator creates it once a driver
// DaemonSet of the driver exists.
type SMDDaemonSet struct {
	Resource  string `json:"resource"`
	DaemonSet string `json:"daemonSet"`
	// Image is <smd.registry>/<smd.image>:<spec.version>, "" when it cannot be composed.
	Image string `json:"image"`
	// Detail explains an empty Image.
	Detail string `json:"detail,omitempty"`
}

// TiedNodes returns, for one resource, a sorted sample (at most ConflictSampleSize) of the
// nodes on which it is tied and their total count: what its ConflictingNodeSelector
// condition reports.
func (r *Result) TiedNodes(resource string) (sample []string, total int) {
	for _, c := range r.Conflicts {
		if !slices.Contains(c.Resources, resource) {
			continue
		}
		total += c.Total
		sample = append(sample, c.Nodes...)
	}
	slices.Sort(sample)
	if len(sample) > ConflictSampleSize {
		sample = sample[:ConflictSampleSize]
	}
	return sample, total
}

package release

import (
	"fmt"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/routing"
)

// Node actions: what a release does to one node's driver (docs/plan.md). `plan` adds held and
// blocked on top of these.
const (
	NodeNone        = "none"
	NodeUpgrade     = "upgrade"      // the driver pod restarts with a new image
	NodeChangeOwner = "change-owner" // another RBLNDriver's pod replaces the current one
	NodeLoseDriver  = "lose-driver"
	NodeGainDriver  = "gain-driver"
)

// Bases of a comparison: what a node's driver "now" is read from.
const (
	// BasisRouting: the current RBLNDrivers are known (a --drivers file, the live cluster, a
	// release's values) and route the nodes now; a node's owner label that disagrees is drift
	// (StaleOwnerLabel), never a change of this release.
	BasisRouting = "routing"
	// BasisOwnerLabels: the current RBLNDrivers are not known; a node's driver now is the one
	// its rebellions.ai/npu.driver.owner label names, and whether its image changes is unknown.
	BasisOwnerLabels = "ownerLabels"
)

// NodeChange is what the release does to one node: its driver, pool and image now and after,
// and the action that takes it from one to the other.
type NodeChange struct {
	Node   string `json:"node"`
	Action string `json:"action"`
	// From and To are the node's owner now and after ("" for none).
	From string `json:"from"`
	To   string `json:"to"`
	// OldImage and NewImage are the composed driver images ("" for none; OldImage is also ""
	// when the basis is BasisOwnerLabels: the current drivers' specs are not known).
	OldImage string `json:"oldImage"`
	NewImage string `json:"newImage"`
	OldPool  string `json:"oldPool"`
	Pool     string `json:"pool"`
	// Reason and Detail are the routing reason after the release (docs/routing.md "`route -o json` contract"), "" for none.
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// labelRouting is the routing now when the current drivers are not known: each candidate
// node's owner is the one its owner label names; images and pools are unknown. A label value
// no object can be named (not a DNS-1123 subdomain) names no driver: its node has none now,
// and the label is drift (StaleOwnerLabel) — the one drift known without the drivers.
func labelRouting(r *routing.Result) (*routing.Result, []routing.Drift) {
	out := &routing.Result{Nodes: make([]routing.NodeResult, len(r.Nodes))}
	var drift []routing.Drift
	for i, n := range r.Nodes {
		out.Nodes[i] = routing.NodeResult{Name: n.Name, CurrentOwner: n.CurrentOwner, Reason: n.Reason}
		if n.CurrentOwner != "" {
			if !CanNameADriver(n.CurrentOwner) {
				drift = append(drift, routing.Drift{Kind: routing.DriftStaleOwnerLabel, Node: n.Name,
					Detail: fmt.Sprintf("its %s label is %q, which no RBLNDriver can be named (not a DNS-1123 subdomain: lowercase letters, "+
						"digits, '-' and '.', at most 253 characters): it names no driver", operator.LabelOwner, validation.Truncate(n.CurrentOwner, maxLabelQuote))})
				continue
			}
		}
		if n.Reason != routing.ReasonOutOfScope {
			out.Nodes[i].Owner, out.Nodes[i].Reason = n.CurrentOwner, ""
		}
	}
	return out, drift
}

// CanNameADriver reports whether an owner label value can be an RBLNDriver's name: a DNS-1123
// subdomain, as every object's name. A value that is not names no driver, whatever the
// cluster holds.
func CanNameADriver(owner string) bool { return len(k8svalidation.IsDNS1123Subdomain(owner)) == 0 }

// maxLabelQuote bounds an owner label value quoted in a message.
const maxLabelQuote = 80

// changes compares the routing before and after, node by node (both sorted by name and
// holding the same nodes). imagesKnown is false when the images now are not known: a node
// that keeps its owner is then "none", whatever its image.
func changes(before, after *routing.Result, imagesKnown bool) []NodeChange {
	old := make(map[string]routing.NodeResult, len(before.Nodes))
	for _, n := range before.Nodes {
		old[n.Name] = n
	}
	out := make([]NodeChange, 0, len(after.Nodes))
	for _, a := range after.Nodes {
		b := old[a.Name]
		c := NodeChange{Node: a.Name, From: b.Owner, To: a.Owner, OldImage: b.Image, NewImage: a.Image, OldPool: b.Pool, Pool: a.Pool}
		switch {
		case b.Owner == "" && a.Owner == "":
			c.Action = NodeNone
		case b.Owner == "":
			c.Action = NodeGainDriver
		case a.Owner == "":
			c.Action = NodeLoseDriver
		case a.Owner != b.Owner:
			c.Action = NodeChangeOwner
		case imagesKnown && a.Image != b.Image:
			c.Action = NodeUpgrade
		default:
			c.Action = NodeNone
		}
		if a.Reason != "" && a.Reason != routing.ReasonOutOfScope {
			c.Reason, c.Detail = a.Reason, a.Detail
		}
		out = append(out, c)
	}
	return out
}

// lossesOf are the nodes of changes that lose their driver, and those that move to another.
func lossesOf(changes []NodeChange) ([]NodeLoss, []OwnerChange) {
	loss, moves := []NodeLoss{}, []OwnerChange{}
	for _, c := range changes {
		switch c.Action {
		case NodeLoseDriver:
			loss = append(loss, NodeLoss{Node: c.Node, From: c.From, Reason: c.Reason, Detail: c.Detail})
		case NodeChangeOwner:
			moves = append(moves, OwnerChange{Node: c.Node, From: c.From, To: c.To})
		}
	}
	return loss, moves
}

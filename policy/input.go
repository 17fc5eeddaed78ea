package policy

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// InputSchemaVersion versions the input document (SPEC §6). Changing its shape is a breaking
// change for every user policy: bump it and say so in the release notes.
const InputSchemaVersion = "v1"

// Source says where an evaluation runs.
type Source string

const (
	// SourceRender is `driverguard check` (and `policy input`) on rendered values.
	SourceRender Source = "render"
	// SourceAdmission is the admission webhook (and `driverguard review`).
	SourceAdmission Source = "admission"
)

// Input is the document every policy sees as `input`, identical at render and admission
// time. Object and OldObject are an RBLNDriver or an RBLNClusterPolicy (typed objects or
// their JSON maps).
type Input struct {
	// Object is the object under evaluation.
	Object any `json:"object"`
	// OldObject is the previous object (admission UPDATE only).
	OldObject any `json:"oldObject,omitempty"`
	// Operation is CREATE, UPDATE or DELETE; always CREATE at render time.
	Operation string `json:"operation"`
	// UserInfo is the requesting user (admission only).
	UserInfo *authenticationv1.UserInfo `json:"userInfo,omitempty"`
	// Source is render or admission.
	Source Source `json:"source"`
	// Cluster is what is known about the rest of the cluster.
	Cluster Cluster `json:"cluster"`
}

// Cluster is the cluster context of an evaluation.
type Cluster struct {
	// Drivers are the other RBLNDrivers (never the object under evaluation).
	Drivers []v1alpha1.RBLNDriver `json:"drivers"`
	// ClusterPolicy is the RBLNClusterPolicy, when known.
	ClusterPolicy *v1alpha1.RBLNClusterPolicy `json:"clusterPolicy,omitempty"`
	// Nodes are the known nodes (omitted when none are known).
	Nodes []Node `json:"nodes,omitempty"`
}

// Node is a node as policies see it: its labels and the routing engine's verdict.
type Node struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	// Owner is the RBLNDriver that owns the node ("" for none).
	Owner string `json:"owner"`
	// Pool is the node's driver pool ("" for none).
	Pool string `json:"pool"`
}

// Message is one deny or warn message with the rule that produced it.
type Message struct {
	// Package is the Rego package, e.g. driverguard.lib.versions.
	Package string `json:"package"`
	// Rule is deny or warn.
	Rule string `json:"rule"`
	Msg  string `json:"msg"`
}

// Decision is the outcome of evaluating every policy on one input.
type Decision struct {
	Deny []Message `json:"deny"`
	Warn []Message `json:"warn"`
}

// Evaluator evaluates the policies on one input. Implementations are safe for concurrent use;
// the webhook and the CLI depend only on this interface.
type Evaluator interface {
	Evaluate(ctx context.Context, in *Input) (*Decision, error)
}

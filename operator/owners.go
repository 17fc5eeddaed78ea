package operator

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxDriverNameLength is the longest RBLNDriver name the operator routes: the name is written
// onto nodes as the value of LabelOwner.
const MaxDriverNameLength = validation.LabelValueMaxLength

// Exclusion says why the operator's owner resolver leaves an RBLNDriver out of routing.
type Exclusion struct {
	// Deleting: the RBLNDriver has a deletionTimestamp.
	Deleting bool
	// Message is the operator's validation error (its condition InvalidSpec), "" when Deleting.
	Message string
}

// Excluded reports whether the owner resolver leaves the RBLNDriver out of routing, and why: it
// is being deleted, its nodeSelector holds a reserved key, or its name is longer than 63
// characters. Every other RBLNDriver takes part, whatever else is wrong with it. nil means it
// takes part.
func Excluded(name string, selector map[string]string, deleting bool) *Exclusion {
	if deleting {
		return &Exclusion{Deleting: true}
	}
	for _, k := range ReservedSelectorKeys {
		if _, ok := selector[k]; ok {
			return &Exclusion{Message: fmt.Sprintf("nodeSelector must not use reserved label key %q (the operator manages it itself)", k)}
		}
	}
	if len(name) > MaxDriverNameLength {
		return &Exclusion{Message: fmt.Sprintf("metadata.name %q exceeds %d characters and cannot be used as the %s label value", name, MaxDriverNameLength, LabelOwner)}
	}
	return nil
}

// InScope reports whether a node with these labels is routed (LabelDeployDriver is "true").
// An owner label on a node out of scope is removed by the operator.
func InScope(labels map[string]string) bool { return labels[LabelDeployDriver] == DeployDriverTrue }

// PolicyStateIgnored is the status.state of an RBLNClusterPolicy the operator does not read.
const PolicyStateIgnored = "ignored"

// PolicyMeta is what the operator reads of an RBLNClusterPolicy to choose the active one.
type PolicyMeta struct {
	Name    string
	Created time.Time
	// State is status.state.
	State string
}

// ActiveClusterPolicy is the index of the RBLNClusterPolicy the operator reads: the oldest
// whose status.state is not ignored, the smaller name on a tie; when every one is ignored, the
// first by name (the API's list order). -1 when there is none: the operator then reconciles no
// RBLNDriver (MissingClusterPolicy).
func ActiveClusterPolicy(ps []PolicyMeta) int {
	best := -1
	for i, p := range ps {
		if p.State == PolicyStateIgnored {
			continue
		}
		if best < 0 || p.Created.Before(ps[best].Created) || (p.Created.Equal(ps[best].Created) && p.Name < ps[best].Name) {
			best = i
		}
	}
	if best >= 0 || len(ps) == 0 {
		return best
	}
	first := 0
	for i := range ps {
		if ps[i].Name < ps[first].Name {
			first = i
		}
	}
	return first
}

// Package preview explains what a set of values will do before it is applied: per rendered
// RBLNDriver its version, selector and which fields the instance set versus inherited; with a
// node inventory, who owns each node, the pools and images, ties, unowned nodes, nodes
// without a family label, and the nodes that would lose (or change) their driver compared
// with their current owner labels; and the verdict `check` gives the same release. It only
// assembles results of render and release.
package preview

import (
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
)

// Report is the preview of one set of values.
type Report struct {
	Resources []Resource       `json:"resources"`
	Warnings  []render.Warning `json:"warnings,omitempty"`
	// Nodes is present when a node inventory was given.
	Nodes *NodeReport `json:"nodes,omitempty"`
	// Verdict is what `check` says of the same values and cluster.
	Verdict *release.Report `json:"verdict,omitempty"`
}

// Resource summarises one rendered RBLNDriver.
type Resource struct {
	Name        string            `json:"name"`
	InstanceKey string            `json:"instanceKey,omitempty"`
	Version     string            `json:"version"`
	Selector    map[string]string `json:"selector"`
	// Overridden are the fields set or cleared on the instance (all fields of the default
	// resource that the user's values set).
	Overridden []render.FieldOrigin `json:"overridden"`
	// Inherited are the fields taken from driver.* or the chart's defaults.
	Inherited []render.FieldOrigin `json:"inherited"`
}

// NodeReport is what the values do to a node inventory.
type NodeReport struct {
	Routing *routing.Result `json:"routing"`
	// Unowned are candidate nodes that get no driver.
	Unowned []routing.NodeResult `json:"unowned"`
	// FamilyLabelMissing are owned nodes that join no pool (reason DriverFamilyLabelMissing).
	FamilyLabelMissing []string `json:"familyLabelMissing"`
	// LosingDriver are nodes whose current owner label names a driver but that get none.
	LosingDriver []release.NodeLoss `json:"losingDriver"`
	// ChangingDriver are nodes that move from their current owner to another driver.
	ChangingDriver []release.OwnerChange `json:"changingDriver"`
	// Images are the registry check results (with --check-images).
	Images []registry.ImageResult `json:"images,omitempty"`
}

// Build summarises a render result.
func Build(r *render.Result) *Report {
	rep := &Report{Warnings: r.Warnings, Resources: make([]Resource, 0, len(r.Drivers))}
	for _, d := range r.Drivers {
		res := Resource{
			Name:        d.Name,
			InstanceKey: r.InstanceKeys[d.Name],
			Version:     d.Spec.Version,
			Selector:    d.Spec.NodeSelector,
			Overridden:  []render.FieldOrigin{},
			Inherited:   []render.FieldOrigin{},
		}
		if res.Selector == nil {
			res.Selector = map[string]string{}
		}
		for _, f := range r.ProvenanceOf(d.Name) {
			switch {
			case f.Inherited() && (res.InstanceKey != "" || f.Origin == render.OriginChartDefault):
				res.Inherited = append(res.Inherited, f)
			default:
				res.Overridden = append(res.Overridden, f)
			}
		}
		rep.Resources = append(rep.Resources, res)
	}
	return rep
}

// WithNodes adds the node report of a release applied to a node inventory.
func (rep *Report) WithNodes(res *release.Result) {
	nr := &NodeReport{
		Routing:            res.Routing,
		Unowned:            []routing.NodeResult{},
		FamilyLabelMissing: []string{},
		LosingDriver:       res.DriverLoss,
		ChangingDriver:     res.OwnerChanges,
	}
	for _, n := range res.Routing.Nodes {
		if n.Reason == routing.ReasonOutOfScope {
			continue
		}
		if n.Owner == "" {
			nr.Unowned = append(nr.Unowned, n)
		}
		if n.Reason == routing.ReasonDriverFamilyLabelMissing {
			nr.FamilyLabelMissing = append(nr.FamilyLabelMissing, n.Name)
		}
	}
	rep.Nodes = nr
}

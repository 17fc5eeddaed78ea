package release

import (
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
)

// PreviewReport is the preview of one set of values.
type PreviewReport struct {
	// Findings are Check's findings (the Verdict's) and, with --check-images, each image
	// missing (deny) or not verified (warn).
	Findings  []finding.Finding `json:"findings"`
	Resources []PreviewResource `json:"resources"`
	Warnings  []render.Warning  `json:"warnings,omitempty"`
	// Nodes is present when a node inventory was given.
	Nodes *NodeReport `json:"nodes,omitempty"`
	// Verdict is what Check says of the same values and cluster.
	Verdict *Report `json:"verdict,omitempty"`
	// Passed is the preview's own verdict, its exit code: Check's, and with --check-images no
	// image missing from its registry (a pool that pulls one cannot start its driver).
	Passed bool `json:"passed"`
}

// PreviewResource summarises one rendered RBLNDriver.
type PreviewResource struct {
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
	// NFDLabelMissing are owned nodes without a Node Feature Discovery label: no pool either
	// (reason NFDLabelMissing).
	NFDLabelMissing []string `json:"nfdLabelMissing"`
	// NotRunning are owned nodes in a pool whose DaemonSet does not run on them: a pool name
	// another node defines with other labels (PoolNameCollision), or a DaemonSet the operator
	// cannot create (DaemonSetNotCreated); each with its reason.
	NotRunning []routing.NodeResult `json:"notRunning"`
	// LosingDriver are nodes that have a driver now but get none.
	LosingDriver []NodeLoss `json:"losingDriver"`
	// ChangingDriver are nodes that move from their driver now to another.
	ChangingDriver []OwnerChange `json:"changingDriver"`
	// Changes are the nodes whose driver changes (every action but "none"), by name, in the
	// words of `driverguard plan` (which adds held and blocked).
	Changes []NodeChange `json:"changes"`
	// Basis is what a node's driver now is read from: "routing" (the current RBLNDrivers, as
	// plan compares) or "ownerLabels" (their owner labels: the current drivers were not given,
	// so upgrades are not known).
	Basis string `json:"basis"`
	// Images are the registry check results (with CheckImages).
	Images []registry.ImageResult `json:"images,omitempty"`
	// ImageCheck is what the registry check covered (checked false without CheckImages).
	ImageCheck registry.Summary `json:"imageCheck"`
}

// MissingImages is the number of images the registry check found missing (0 without one).
func (rep *PreviewReport) MissingImages() int {
	if rep.Nodes == nil {
		return 0
	}
	return rep.Nodes.ImageCheck.Missing
}

package action

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
)

// Preview explains what a set of values will do before it is applied (`driverguard
// preview`): per rendered RBLNDriver its version, selector and which fields the instance set
// versus inherited; with a node inventory, who owns each node, the pools and images, ties,
// unowned nodes, nodes without a family label, and what happens to each node's driver —
// compared, as plan compares, with the routing of the current RBLNDrivers, or with the nodes'
// owner labels when those are not given; and the verdict Check gives the same release. It only assembles results of render and release.
type Preview struct {
	cfg *Configuration
	Judge
	// RegistryCheck asks the registry for every composed image (needs the nodes).
	RegistryCheck
}

// NewPreview returns a Preview of the default release, with provenance.
func NewPreview(cfg *Configuration) *Preview {
	return &Preview{cfg: cfg, Judge: Judge{RenderOptions: RenderOptions{ReleaseName: DefaultReleaseName, Provenance: true}}}
}

// Run previews the values; the report's Verdict says whether they pass.
func (p *Preview) Run(ctx context.Context) (*PreviewReport, error) {
	src := p.Live.source(p.Cluster)
	withNodes := p.Cluster.Nodes != "" || src.live
	if p.CheckImages && !withNodes {
		return nil, errors.New("--check-images needs the nodes (--nodes or --live): images are composed per node pool")
	}
	if err := p.RegistryCheck.check(src.live); err != nil {
		return nil, err
	}
	creds, err := p.RegistryCheck.credentials(src)
	if err != nil {
		return nil, err
	}
	j, err := p.cfg.judge(ctx, &p.Judge)
	if err != nil {
		return nil, err
	}
	rep := buildPreview(j.rendered)
	rep.Verdict = j.report(false)
	if withNodes {
		addNodeReport(rep, j.result)
		if p.CheckImages {
			rep.Nodes.Images, rep.Nodes.ImageCheck = registry.Check(ctx, rep.Nodes.Routing, p.options(), creds.keys(ctx, registry.SecretsOf(j.result.Drivers), rep.Nodes.Routing))
		}
	}
	rep.Passed = rep.Verdict.Passed && rep.MissingImages() == 0
	rep.Findings = append(slices.Clone(rep.Verdict.Findings), imageFindings(rep.Nodes)...)
	return rep, nil
}

// imageFindings are the images of a registry check missing (deny) or not verified (warn).
func imageFindings(n *NodeReport) []finding.Finding {
	if n == nil {
		return nil
	}
	var out []finding.Finding
	for _, r := range n.Images {
		switch r.Status {
		case registry.NotFound:
			out = append(out, finding.Finding{Rule: finding.RuleDriverImageNotFound, Level: finding.Deny,
				Object: finding.Object{Kind: "Image", Name: r.Image}, Message: r.Message})
		case registry.Warning:
			out = append(out, finding.Finding{Rule: finding.RuleDriverImageNotVerified, Level: finding.Warn,
				Object: finding.Object{Kind: "Image", Name: r.Image}, Message: cmp.Or(r.Cause(), r.Message)})
		}
	}
	return out
}

// buildPreview summarises a render result.
func buildPreview(r *render.Result) *PreviewReport {
	rep := &PreviewReport{Warnings: r.Warnings, Resources: make([]PreviewResource, 0, len(r.Drivers))}
	for _, d := range r.Drivers {
		res := PreviewResource{
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

// addNodeReport adds the node report of a release applied to a node inventory.
func addNodeReport(rep *PreviewReport, res *release.Result) {
	nr := &NodeReport{
		Routing:            res.Routing,
		Unowned:            []routing.NodeResult{},
		FamilyLabelMissing: []string{},
		NFDLabelMissing:    []string{},
		NotRunning:         []routing.NodeResult{},
		LosingDriver:       res.DriverLoss,
		ChangingDriver:     res.OwnerChanges,
		Changes:            []release.NodeChange{},
		Basis:              res.Basis,
		ImageCheck:         registry.NotChecked(),
	}
	for _, c := range res.Changes {
		if c.Action != release.NodeNone {
			nr.Changes = append(nr.Changes, c)
		}
	}
	for _, n := range res.Routing.Nodes {
		if n.Reason == routing.ReasonOutOfScope {
			continue
		}
		if n.Owner == "" {
			nr.Unowned = append(nr.Unowned, n)
		}
		switch n.Reason {
		case routing.ReasonDriverFamilyLabelMissing:
			nr.FamilyLabelMissing = append(nr.FamilyLabelMissing, n.Name)
		case routing.ReasonNFDLabelMissing:
			nr.NFDLabelMissing = append(nr.NFDLabelMissing, n.Name)
		case routing.ReasonPoolNameCollision, routing.ReasonDaemonSetNotCreated:
			nr.NotRunning = append(nr.NotRunning, n)
		}
	}
	rep.Nodes = nr
}

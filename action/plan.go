package action

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
)

// Plan computes what applying values does to every node (`driverguard plan`, SPEC §8): it
// judges the values like Check against the cluster now — read from files or live — and
// reports the rollout; without values, "no change" and the drift.
type Plan struct {
	cfg *Configuration
	// Judge are the values (none: no change), the cluster files (Cluster.Workloads too) and
	// the decision.
	Judge
	// Release, when set, plans from that deployed Helm release: its values rendered are the
	// RBLNDrivers and RBLNClusterPolicy now (unless Live reads the cluster's own).
	Release string
	// ExplicitReleaseName says ReleaseName was given: with Release, they must agree.
	ExplicitReleaseName bool
	// MaxReleaseBytes bounds the release's latest revision, decompressed
	// (DefaultMaxReleaseBytes when 0).
	MaxReleaseBytes int64
	// CheckImages asks the registry for every image the plan needs.
	CheckImages  bool
	ImageTimeout time.Duration
	// OnRelease, when set, is told about the release read for Release (and whether the
	// cluster's own RBLNDrivers are read instead of its values) before anything else is read.
	OnRelease func(d *DeployedRelease, live bool)
}

// NewPlan returns a Plan of the default release.
func NewPlan(cfg *Configuration) *Plan {
	return &Plan{cfg: cfg, Judge: Judge{RenderOptions: RenderOptions{ReleaseName: DefaultReleaseName}}}
}

// PlanResult is a plan and what it was made from.
type PlanResult struct {
	Plan *plan.Plan
	// ReleaseName is the release planned (Release when given).
	ReleaseName string
	// RenderWarnings are the warnings of the new values.
	RenderWarnings []render.Warning
}

// Run makes the plan; the plan says whether it can proceed.
func (p *Plan) Run(ctx context.Context) (*PlanResult, error) {
	live := p.Live.enabled()
	files := p.Cluster
	if err := p.Live.check(files, p.Release != ""); err != nil {
		return nil, err
	}
	if err := oneStdin(append(p.stdinUsers(), stdinUser{"--pods", files.Workloads})...); err != nil {
		return nil, err
	}
	res := &PlanResult{ReleaseName: p.ReleaseName}
	target := p.Live.target()
	deployed, err := p.readRelease(ctx, target, live)
	if err != nil {
		return nil, err
	}
	if deployed != nil {
		res.ReleaseName = p.Release
	}
	var objs *release.Objects
	if p.given() {
		v := p.RenderOptions
		v.ReleaseName = res.ReleaseName
		r, err := p.cfg.render(ctx, &v)
		if err != nil {
			return nil, err
		}
		res.RenderWarnings = r.Warnings
		ro := release.FromRender(r, res.ReleaseName)
		objs = &ro
	}
	st, err := p.readCluster(ctx, target, live)
	if err != nil {
		return nil, err
	}
	if err := needDrivers(st, p.Cluster, live || deployed != nil); err != nil {
		return nil, err
	}
	cl := st
	if deployed != nil && !live {
		cl = cluster.FromLists(st.Nodes(), deployed.Drivers, []v1alpha1.RBLNClusterPolicy{deployed.ClusterPolicy}, nil)
	}
	engine, err := p.cfg.engine(ctx, p.Policy)
	if err != nil {
		return nil, err
	}
	in := plan.Inputs{Objects: objs, Cluster: cl, Workloads: st.Workloads(), AllowDriverLoss: p.AllowDriverLoss,
		Apply: release.Options{Decider: p.decider(engine), Data: engine}}
	if p.CheckImages {
		in.CheckImages = func(ctx context.Context, images []string) map[string]registry.ImageResult {
			return registry.NewChecker(registry.Options{Timeout: p.ImageTimeout}).Check(ctx, images)
		}
	}
	if res.Plan, err = plan.Make(ctx, in); err != nil {
		var u *decision.UnavailableError
		if errors.As(err, &u) {
			return nil, err
		}
		return nil, fmt.Errorf("planning: %w", withReleaseHint(err))
	}
	return res, nil
}

// needDrivers refuses a plan from files that lack the current RBLNDrivers while the nodes say
// the cluster runs some (an owner label): without their specs, whether a node's image changes
// — an upgrade — cannot be told, and a plan that calls it "none" would be wrong. A cluster
// without any owner label plans from the labels (nothing runs yet), saying so.
func needDrivers(st *cluster.State, files cluster.Files, known bool) error {
	if known || files.Drivers != "" {
		return nil
	}
	labelled := 0
	for _, n := range st.Nodes() {
		if n.Labels[v1alpha1.LabelOwner] != "" {
			labelled++
		}
	}
	if labelled == 0 {
		return nil
	}
	return fmt.Errorf("%d of the nodes of --nodes %s carry a %s label, so the cluster runs RBLNDrivers, but --drivers was not given: "+
		"a plan needs their specs to tell upgrades from unchanged nodes. Give --drivers (kubectl get rblndrivers -o yaml; "+
		"an empty file when there are none) or read the cluster with --live", labelled, files.Nodes, v1alpha1.LabelOwner)
}

// readRelease reads and renders the deployed release of p.Release (nil without one).
func (p *Plan) readRelease(ctx context.Context, target cluster.Target, live bool) (*render.Result, error) {
	if p.Release == "" {
		return nil, nil
	}
	if p.Cluster.Drivers != "" || p.Cluster.ClusterPolicy != "" {
		return nil, errors.New("--release reads the release's RBLNDrivers and RBLNClusterPolicy from its values; --drivers and --cluster-policy give them by hand: use one or the other")
	}
	if p.ExplicitReleaseName && p.ReleaseName != p.Release {
		return nil, fmt.Errorf("--release-name %q and --release %q differ: the release's name is the one its objects carry", p.ReleaseName, p.Release)
	}
	d, err := readRelease(ctx, p.Release, target, p.MaxReleaseBytes)
	if err != nil {
		return nil, err
	}
	r, err := renderDeployed(ctx, d)
	if err != nil {
		return nil, err
	}
	if p.OnRelease != nil {
		p.OnRelease(d, live)
	}
	return r, nil
}

// readCluster reads the cluster now: live, or from the files given.
func (p *Plan) readCluster(ctx context.Context, target cluster.Target, live bool) (*cluster.State, error) {
	return p.cfg.readCluster(ctx, p.Cluster, target, live, cluster.LiveOptions{UserAgent: "driverguard-plan", Timeout: liveTimeout, Workloads: true})
}

package action

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
)

// Plan computes what applying values does to every node (`driverguard plan`, docs/plan.md): it
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
	// RegistryCheck asks the registry for every image the plan needs: live, with the drivers'
	// pull Secrets.
	RegistryCheck
	// OnRelease, when set, is told about the release read for Release (and whether the
	// cluster's own RBLNDrivers are read instead of its values) before anything else is read.
	OnRelease func(d *DeployedRelease, live bool)
	// Version is the driverguard the plan records as its maker; Now its clock (nil:
	// time.Now).
	Version string
	Now     func() time.Time
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
	files := p.Cluster
	src, err := p.Live.resolve(files, p.Release != "")
	if err != nil {
		return nil, err
	}
	live := src.live
	if !live && files.Nodes == "" {
		return nil, errNoNodes
	}
	if err := oneStdin(append(p.stdinUsers(), stdinUser{"--pods", files.Workloads})...); err != nil {
		return nil, err
	}
	if err := p.RegistryCheck.check(live); err != nil {
		return nil, err
	}
	res := &PlanResult{ReleaseName: p.ReleaseName}
	creds, err := p.RegistryCheck.credentials(src)
	if err != nil {
		return nil, err
	}
	deployed, rel, err := p.readRelease(ctx, src.target, live)
	if err != nil {
		return nil, err
	}
	if deployed != nil {
		res.ReleaseName = p.Release
	}
	var (
		objs     *release.Objects
		rendered *render.Result
		vals     map[string]any
	)
	if p.given() {
		v := p.RenderOptions
		v.ReleaseName = res.ReleaseName
		if rendered, vals, err = p.cfg.renderValues(ctx, &v); err != nil {
			return nil, err
		}
		res.RenderWarnings = rendered.Warnings
		ro := release.FromRender(rendered, res.ReleaseName)
		objs = &ro
	}
	st, err := p.readCluster(ctx, src)
	if err != nil {
		return nil, err
	}
	if err := needDrivers(st, p.Cluster, live || deployed != nil); err != nil {
		return nil, err
	}
	cl := st
	if deployed != nil && !live {
		cl = cluster.FromLists(st.Nodes(), deployed.Drivers, []v1alpha1.RBLNClusterPolicy{deployed.ClusterPolicy}, nil)
		src := st.Sources()
		from := fmt.Sprintf("release %s (revision %d in namespace %s, --release)", rel.Name, rel.Revision, rel.Namespace)
		src.Drivers = cluster.Source{Given: true, From: from, Count: len(deployed.Drivers)}
		src.ClusterPolicy = cluster.Source{Given: true, From: from, Count: 1}
		cl.SetSources(src)
	}
	engine, err := p.cfg.engine(ctx, p.Policy)
	if err != nil {
		return nil, err
	}
	in := plan.Inputs{Objects: objs, Cluster: cl, Workloads: st.Workloads(), AllowDriverLoss: p.AllowDriverLoss,
		Apply: release.Options{Decider: p.decider(engine), Data: engine}}
	if p.CheckImages {
		in.CheckImages = func(ctx context.Context, images []string, after *release.Result) map[string]registry.ImageResult {
			return p.run(ctx, creds, images, registry.SecretsOf(after.Drivers), after.Routing)
		}
	}
	if res.Plan, err = plan.Make(ctx, in); err != nil {
		var u *decision.UnavailableError
		if errors.As(err, &u) {
			return nil, err
		}
		return nil, fmt.Errorf("planning: %w", withReleaseHint(err))
	}
	res.Plan.Inputs = p.inputs(res.Plan.Inputs, res.ReleaseName)
	if rendered != nil {
		if res.Plan.Rollback, err = rollback(ctx, vals, rendered, cl, res.Plan, res.ReleaseName); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// errNoNodes: a plan says what happens to every node, so it needs them; planned over no
// nodes it would say "can proceed" about nothing.
var errNoNodes = errors.New("no nodes to plan for: read the cluster with --live (or --kubeconfig FILE), or give it as files with " +
	"--nodes nodes.yaml (kubectl get nodes -o yaml) and --drivers current.yaml (kubectl get rblndrivers -o yaml; --release NAME reads them " +
	"from a deployed release instead); without -f the plan is an audit of those nodes")

// inputs completes the record of what the plan was made from (Make records the cluster's
// sources).
func (p *Plan) inputs(in plan.InputRecord, releaseName string) plan.InputRecord {
	in.ValuesFiles = append(in.ValuesFiles, p.ValueFiles...)
	for _, f := range []struct {
		flag   string
		values []string
	}{{"--set-json", p.JSONValues}, {"--set", p.Values}, {"--set-string", p.StringValues}, {"--set-file", p.FileValues}} {
		for _, v := range f.values {
			in.Set = append(in.Set, f.flag+" "+v)
		}
	}
	in.PolicyDirs = append(in.PolicyDirs, p.Policy.Dirs...)
	in.Disable = append(in.Disable, p.Policy.Disable...)
	if in.Enforcement == nil {
		in.Enforcement = map[string]string{}
	}
	maps.Copy(in.Enforcement, p.Policy.Enforcement)
	in.PolicyFailOpen, in.AllowDriverLoss = p.PolicyFailOpen, p.AllowDriverLoss
	in.Release, in.ReleaseName, in.Version = p.Release, releaseName, p.Version
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	in.Time = now().UTC().Format(time.RFC3339)
	return in
}

// rollback makes the values that give the current RBLNDrivers back once the values rendered
// are applied: the drivers the release renders or deletes, as they are now, and those it
// creates gone; and the RBLNClusterPolicy as it is now, when it is known.
func rollback(ctx context.Context, vals map[string]any, rendered *render.Result, cl *cluster.State, p *plan.Plan, releaseName string) (*render.Rollback, error) {
	if !cl.DriversKnown() {
		return &render.Rollback{Restores: []string{}, Removes: []string{}, DeleteFromValues: []string{},
			Problems: []string{"the current RBLNDrivers were not given (--drivers, --live or --release): the values that give them back are not known"}}, nil
	}
	current := map[string]*v1alpha1.RBLNDriver{}
	for i := range cl.Drivers() {
		current[cl.Drivers()[i].Name] = &cl.Drivers()[i]
	}
	var want render.RollbackTarget
	seen := map[string]bool{}
	for _, d := range rendered.Drivers {
		seen[d.Name] = true
		if c := current[d.Name]; c != nil {
			want.Drivers = append(want.Drivers, *c)
		} else {
			want.Absent = append(want.Absent, d.Name)
		}
	}
	for _, d := range p.Drivers {
		if c := current[d.Name]; d.Action == plan.DriverDelete && c != nil && !seen[d.Name] {
			want.Drivers = append(want.Drivers, *c)
		}
	}
	if cp := cl.ClusterPolicy(); cp != nil && cp.Name == rendered.ClusterPolicy.Name {
		want.ClusterPolicy = cp
	}
	ch, err := charts.Driverguard()
	if err != nil {
		return nil, fmt.Errorf("the embedded chart is broken: %w", err)
	}
	return render.MakeRollback(ctx, ch, vals, render.Options{ReleaseName: releaseName}, want)
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
		if owner := n.Labels[operator.LabelOwner]; owner != "" && release.CanNameADriver(owner) {
			labelled++
		}
	}
	if labelled == 0 {
		return nil
	}
	return fmt.Errorf("%d of the nodes of --nodes %s carry a %s label, so the cluster runs RBLNDrivers, but --drivers was not given: "+
		"a plan needs their specs to tell upgrades from unchanged nodes. Give --drivers (kubectl get rblndrivers -o yaml; "+
		"an empty file when there are none) or read the cluster with --live", labelled, files.Nodes, operator.LabelOwner)
}

// readRelease reads and renders the deployed release of p.Release (nil without one).
func (p *Plan) readRelease(ctx context.Context, target cluster.Target, live bool) (*render.Result, *DeployedRelease, error) {
	if p.Release == "" {
		return nil, nil, nil
	}
	if p.Cluster.Drivers != "" || p.Cluster.ClusterPolicy != "" {
		return nil, nil, errors.New("--release reads the release's RBLNDrivers and RBLNClusterPolicy from its values; --drivers and --cluster-policy give them by hand: use one or the other")
	}
	if p.ExplicitReleaseName && p.ReleaseName != p.Release {
		return nil, nil, fmt.Errorf("--release-name %q and --release %q differ: the release's name is the one its objects carry", p.ReleaseName, p.Release)
	}
	d, err := readRelease(ctx, p.Release, target, p.MaxReleaseBytes)
	if err != nil {
		return nil, nil, err
	}
	r, err := renderDeployed(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	if p.OnRelease != nil {
		p.OnRelease(d, live)
	}
	return r, d, nil
}

// readCluster reads the cluster now: live, or from the files given.
func (p *Plan) readCluster(ctx context.Context, src clusterSource) (*cluster.State, error) {
	return p.cfg.readCluster(ctx, src, cluster.LiveOptions{UserAgent: "driverguard-plan", Timeout: liveTimeout, Workloads: true})
}

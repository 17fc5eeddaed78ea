package action

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
)

// Policy selects and configures the policies: the bundled library plus Dirs.
type Policy struct {
	// Dirs are directories of Rego policies and data documents.
	Dirs []string
	// Disable turns policies off by name (e.g. lib.max_parallel_upgrades).
	Disable []string
	// Enforcement overrides what policies' messages do, by name: deny, warn or audit
	// (policy.Enforcement).
	Enforcement map[string]string
	// Timeout is the deadline of one evaluation (every policy on one object).
	Timeout time.Duration
}

// engine loads the policies once, each file within MaxValuesBytes; nothing serves metrics in
// a one-shot job.
func (c *Configuration) engine(ctx context.Context, p Policy) (*policy.Engine, error) {
	return p.newEngine(ctx, policy.Options{Metrics: prometheus.NewRegistry(), MaxFileBytes: c.maxValuesBytes()})
}

// newEngine loads the policies with p applied to opts.
func (p Policy) newEngine(ctx context.Context, opts policy.Options) (*policy.Engine, error) {
	opts.Dirs, opts.Disable, opts.Timeout = p.Dirs, p.Disable, p.Timeout
	if len(p.Enforcement) > 0 {
		opts.Enforcement = make(map[string]policy.Enforcement, len(p.Enforcement))
		for name, mode := range p.Enforcement {
			opts.Enforcement[name] = policy.Enforcement(mode)
		}
	}
	e, err := policy.New(ctx, opts)
	if err != nil {
		return nil, loadError(err)
	}
	return e, nil
}

// loadError reports policies that do not load, in the same words for every job.
func loadError(err error) error {
	var le *policy.LoadError
	if errors.As(err, &le) {
		return fmt.Errorf("loading policies: %w", err)
	}
	return err
}

// Decision configures the decision every object of a release gets, as the webhook makes it.
type Decision struct {
	Policy Policy
	// PolicyFailOpen judges an object whose policy evaluation fails without its policies (with
	// a warning), as serve --policy-fail-open admits it.
	PolicyFailOpen bool
	// AllowDriverLoss acknowledges the nodes that would lose their driver: they are reported
	// as warnings instead of failing.
	AllowDriverLoss bool
}

// decider is the decision with engine as its policies.
func (d *Decision) decider(engine policy.Evaluator) *decision.Decider {
	return &decision.Decider{Policy: engine, PolicyFailOpen: d.PolicyFailOpen}
}

// Judge are the inputs of a release judged as the webhook would judge it: the values, the
// cluster (files; none is a cluster without nodes, drivers or policy) and the decision.
type Judge struct {
	RenderOptions
	// Cluster are the cluster files (Nodes, Drivers, ClusterPolicy); Live reads the cluster
	// instead.
	Cluster cluster.Files
	Live
	Decision
}

// judged is a release judged: the render result, the policy set and what applying it does.
type judged struct {
	rendered *render.Result
	status   policy.Status
	// rules are the rule bodies of the policies evaluated (the registry's Rego rules).
	rules    []finding.Rule
	result   *release.Result
	decision *Decision
}

// stdinUsers are the inputs of j that can read standard input.
func (j *Judge) stdinUsers() []stdinUser {
	return append(j.RenderOptions.stdinUsers(), clusterStdinUsers(j.Cluster)...)
}

// judge renders the values, reads the cluster and applies the release with the webhook's
// decisions.
func (c *Configuration) judge(ctx context.Context, j *Judge) (*judged, error) {
	if err := oneStdin(j.stdinUsers()...); err != nil {
		return nil, err
	}
	r, err := c.render(ctx, &j.RenderOptions)
	if err != nil {
		return nil, err
	}
	src, err := j.Live.resolve(j.Cluster, false)
	if err != nil {
		return nil, err
	}
	st, err := c.readCluster(ctx, src, cluster.LiveOptions{UserAgent: "driverguard"})
	if err != nil {
		return nil, err
	}
	engine, err := c.engine(ctx, j.Policy)
	if err != nil {
		return nil, err
	}
	return j.Decision.apply(ctx, release.FromRender(r, j.ReleaseName), r, st, engine)
}

// apply applies objs to st with the webhook's decisions; r holds the render warnings the
// report lists (none for objects Helm rendered).
func (d *Decision) apply(ctx context.Context, objs release.Objects, r *render.Result, st *cluster.State, engine *policy.Engine) (*judged, error) {
	res, err := release.Apply(ctx, objs, st, release.Options{Decider: d.decider(engine), Data: engine})
	if err != nil {
		return nil, judgeError(err)
	}
	return &judged{rendered: r, status: engine.Status(), rules: engine.Rules(), result: res, decision: d}, nil
}

// judgeError is the error of a release that could not be judged.
func judgeError(err error) error {
	var u *decision.UnavailableError
	if errors.As(err, &u) {
		return err
	}
	return fmt.Errorf("judging the release: %w", withReleaseHint(err))
}

// withReleaseHint adds to a release judged under a name that does not own the objects it
// renders the flag that names the release.
func withReleaseHint(err error) error {
	var fe *release.ForeignObjectsError
	if !errors.As(err, &fe) {
		return err
	}
	if len(fe.Owners) == 1 {
		return fmt.Errorf("%w; to judge release %q, say so: --release-name %s", err, fe.Owners[0], fe.Owners[0])
	}
	return fmt.Errorf("%w; name the release to judge with --release-name", err)
}

// report is the check report of j.
func (j *judged) report(failOnWarn bool) *release.Report {
	rep := j.result.Report(release.ReportOptions{
		RenderWarnings:  j.rendered.Warnings,
		Policies:        j.status.Policies,
		Disabled:        j.status.Disabled,
		AllowDriverLoss: j.decision.AllowDriverLoss,
		FailOnWarn:      failOnWarn,
	})
	locate(rep, j.rendered)
	return rep
}

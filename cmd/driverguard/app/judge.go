package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
)

// judgeFlags are the inputs of a release judged as the webhook would (check, preview, policy
// input and data): the values, the cluster and the policies.
type judgeFlags struct {
	valuesFlags
	cluster         clusterFlags
	policy          policyFlags
	failOpen        bool
	allowDriverLoss bool
}

func (f *judgeFlags) addFlags(fs *pflag.FlagSet) {
	f.valuesFlags.addFlags(fs)
	f.cluster.addFlags(fs)
	f.addDecisionFlags(fs)
}

// addDecisionFlags registers the flags of the decision alone (the policies, --policy-fail-open,
// --allow-driver-loss), without the values and the cluster files: post-render judges objects
// Helm rendered.
func (f *judgeFlags) addDecisionFlags(fs *pflag.FlagSet) {
	f.policy.addFlags(fs, "policy")
	fs.BoolVar(&f.failOpen, "policy-fail-open", false, "judge an object whose policy evaluation fails without its policies (with a warning), as serve --policy-fail-open admits it")
	fs.BoolVar(&f.allowDriverLoss, "allow-driver-loss", false, "acknowledge the nodes that would lose their driver: report them as warnings instead of failing")
}

// judged is a release judged: the render result, the policy set and the release's result.
type judged struct {
	rendered *render.Result
	status   policy.Status
	result   *release.Result
	opts     *judgeFlags
}

// judge renders the values, reads the cluster and applies the release with the webhook's
// decisions. opts.Decider and opts.Data are set here; opts.Before is the caller's. Render
// warnings are the caller's to print: they are part of the report.
func (f *judgeFlags) judge(ctx context.Context, s Streams, opts release.Options) (*judged, error) {
	if err := oneStdin(append(f.valuesFlags.stdinUsers(), f.cluster.stdinUsers()...)...); err != nil {
		return nil, err
	}
	r, err := f.render(ctx, s)
	if err != nil {
		return nil, err
	}
	cl, err := f.cluster.read(ctx, s)
	if err != nil {
		return nil, err
	}
	engine, err := f.policy.engine(ctx, s)
	if err != nil {
		return nil, err
	}
	return f.judgeWith(ctx, r, cl, engine, opts)
}

func (f *judgeFlags) judgeWith(ctx context.Context, r *render.Result, cl release.Cluster, engine *policy.Engine, opts release.Options) (*judged, error) {
	return f.judgeObjects(ctx, release.FromRender(r, f.releaseName), r, cl, engine, opts)
}

// judgeObjects applies objs to cl with the webhook's decisions; r holds the render warnings
// the report lists (none for objects Helm rendered).
func (f *judgeFlags) judgeObjects(ctx context.Context, objs release.Objects, r *render.Result, cl release.Cluster, engine *policy.Engine, opts release.Options) (*judged, error) {
	if opts.Decider == nil {
		opts.Decider = &decision.Decider{Policy: engine, PolicyFailOpen: f.failOpen}
	}
	opts.Data = engine
	res, err := release.Apply(ctx, objs, cl, opts)
	if err != nil {
		var u *decision.UnavailableError
		if errors.As(err, &u) {
			return nil, usageError(err)
		}
		return nil, fmt.Errorf("judging the release: %w", err)
	}
	return &judged{rendered: r, status: engine.Status(), result: res, opts: f}, nil
}

func (j *judged) report(failOnWarn bool) *release.Report {
	return j.result.Report(release.ReportOptions{
		RenderWarnings:  j.rendered.Warnings,
		Policies:        j.status.Policies,
		Disabled:        j.status.Disabled,
		AllowDriverLoss: j.opts.allowDriverLoss,
		FailOnWarn:      failOnWarn,
	})
}

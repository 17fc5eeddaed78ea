package action

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
)

// PolicyTest runs the Rego unit tests of policy directories together with the bundled
// library's (`driverguard policy test`).
type PolicyTest struct {
	cfg *Configuration
	// Dirs are the policy directories.
	Dirs []string
	// Match, when set, runs only the tests whose package.name matches this regular expression.
	Match string
	// Timeout is the deadline of one test.
	Timeout time.Duration
}

// NewPolicyTest returns a PolicyTest.
func NewPolicyTest(cfg *Configuration) *PolicyTest { return &PolicyTest{cfg: cfg} }

// PolicyTestResult is every test's outcome and how many failed or errored.
type PolicyTestResult struct {
	Tests  []TestResult `json:"tests"`
	Failed int          `json:"failed"`
}

// Yours counts the tests of Dirs (not the bundled library's).
func (r *PolicyTestResult) Yours() int {
	n := 0
	for _, t := range r.Tests {
		if !t.Bundled {
			n++
		}
	}
	return n
}

// Run runs the tests. A module that does not parse or compile is an error.
func (p *PolicyTest) Run(ctx context.Context) (*PolicyTestResult, error) {
	results, err := policy.RunTests(ctx, policy.TestOptions{Dirs: p.Dirs, Run: p.Match, Timeout: p.Timeout, MaxFileBytes: p.cfg.maxValuesBytes()})
	if err != nil {
		return nil, loadError(err)
	}
	res := &PolicyTestResult{Tests: results}
	if res.Tests == nil {
		res.Tests = []TestResult{}
	}
	for _, r := range results {
		if r.Outcome == policy.TestFail || r.Outcome == policy.TestError {
			res.Failed++
		}
	}
	return res, nil
}

// PolicyList lists the policies Check and the webhook evaluate (`driverguard policy list`).
type PolicyList struct {
	cfg    *Configuration
	Policy Policy
}

// NewPolicyList returns a PolicyList.
func NewPolicyList(cfg *Configuration) *PolicyList { return &PolicyList{cfg: cfg} }

// PolicyListResult is every policy loaded and every rule of the registry (docs/rules.md).
type PolicyListResult struct {
	// Policies are the Rego packages with deny or warn rules, by package.
	Policies []PolicyInfo `json:"policies"`
	// Rules are every rule that can fire: each Rego rule body (<package>.deny,
	// <package>.warn) of the policies, then the built-in rules.
	Rules []finding.Rule `json:"rules"`
}

// ListedRule is one rule as `policy list` lists it, in every format: the registry's rule
// (finding.Rule) of a Rego rule body, with its policy.
type ListedRule struct {
	// Name is the policy's name, what --disable and --enforcement take (lib.pinned_version):
	// a script that turns the policies off reads it, as it did when the list was one entry
	// per policy.
	Name string `json:"name"`
	Rule
	// Package is the Rego package of the rule body (driverguard.lib.pinned_version).
	Package string `json:"package"`
	// Policy is Name.
	Policy string `json:"policy"`
	// Mode is the enforcement configured for the rule body (its METADATA, the policy's
	// config, --enforcement): deny, warn or audit; Enforcement is what it makes of the body's
	// Level (a warn body in mode deny still warns).
	Mode policy.Enforcement `json:"mode"`
}

// Listed are the rules as `policy list` lists them: the Rego rule bodies of Rules, in their
// order, each with its package, policy name and configured mode. The built-in rules, which
// no policy holds and --disable cannot turn off, are in `policy rules`.
func (r *PolicyListResult) Listed() []ListedRule {
	byPackage := make(map[string]PolicyInfo, len(r.Policies))
	for _, p := range r.Policies {
		byPackage[p.Package] = p
	}
	out := make([]ListedRule, 0, len(r.Rules))
	for _, rule := range r.Rules {
		if rule.Source == finding.SourceBuiltin {
			continue
		}
		l := ListedRule{Rule: rule, Package: finding.PolicyOf(rule.ID)}
		p := byPackage[l.Package]
		l.Policy = cmp.Or(p.Name, strings.TrimPrefix(l.Package, "driverguard."))
		l.Name = l.Policy
		l.Mode = p.RuleEnforcement[finding.BodyOf(rule.ID)]
		out = append(out, l)
	}
	return out
}

// Run loads the policies and describes them and their rules.
func (p *PolicyList) Run(ctx context.Context) (*PolicyListResult, error) {
	engine, err := p.cfg.engine(ctx, p.Policy)
	if err != nil {
		return nil, err
	}
	return &PolicyListResult{Policies: engine.Policies(), Rules: finding.NewRegistry(engine.Rules()...).Rules()}, nil
}

// PolicyInput judges a release exactly as Check does and gives the input document of every
// object as the policies saw it (`driverguard policy input`).
type PolicyInput struct {
	cfg *Configuration
	Judge
	// Name, when set, stops the release at the first input of the object of that name: Run
	// returns that input alone, neither evaluated nor followed by the objects after it.
	Name string
	// OnInput, when set (and Name is not), is given every input as it is evaluated, instead of
	// Run collecting them; an error stops the release.
	OnInput func(*Input) error
	// OnRenderWarnings, when set, is given the render warnings once the values rendered.
	OnRenderWarnings func([]Warning)
}

// NewPolicyInput returns a PolicyInput of the default release.
func NewPolicyInput(cfg *Configuration) *PolicyInput {
	return &PolicyInput{cfg: cfg, Judge: Judge{RenderOptions: RenderOptions{ReleaseName: DefaultReleaseName}}}
}

// Run judges the release and returns the inputs: every one in the order evaluated (none when
// OnInput took them), or with Name the one of that object.
func (p *PolicyInput) Run(ctx context.Context) ([]*Input, error) {
	engine, err := p.cfg.engine(ctx, p.Policy)
	if err != nil {
		return nil, err
	}
	rec := &recorder{Evaluator: engine, only: p.Name, onInput: p.OnInput}
	if err := oneStdin(p.stdinUsers()...); err != nil {
		return nil, err
	}
	r, st, err := p.cfg.renderAndRead(ctx, &p.Judge, p.OnRenderWarnings)
	if err != nil {
		return nil, err
	}
	objs := release.FromRender(r, p.ReleaseName)
	rp, err := release.NewReplay(ctx, objs, st, release.Options{Decider: p.decider(rec), Data: engine})
	if err != nil {
		return nil, judgeError(err)
	}
	for _, o := range rp.Objects() {
		_, err := rp.Judge(ctx, o)
		if rec.found != nil {
			return []*Input{rec.found}, nil
		}
		if err != nil {
			return nil, judgeError(err)
		}
	}
	if _, err := rp.Finish(ctx); err != nil {
		return nil, judgeError(err)
	}
	if p.Name != "" {
		return nil, fmt.Errorf("no rendered object is named %q; the objects are %s", truncateValue(p.Name), capList(rec.names))
	}
	return rec.inputs, nil
}

// renderAndRead renders the values, gives their warnings to warn and reads the cluster files.
func (c *Configuration) renderAndRead(ctx context.Context, j *Judge, warn func([]Warning)) (*render.Result, *cluster.State, error) {
	r, err := c.render(ctx, &j.RenderOptions)
	if err != nil {
		return nil, nil, err
	}
	if warn != nil {
		warn(r.Warnings)
	}
	st, err := cluster.FromFiles(ctx, j.Cluster, c.readOptions())
	if err != nil {
		return nil, nil, err
	}
	return r, st, nil
}

// recorder sees every input before it is evaluated: it keeps (or hands to onInput) each, or,
// looking for only one object's, keeps that one and answers it without evaluating it.
type recorder struct {
	policy.Evaluator
	only    string
	onInput func(*Input) error
	names   []string // the objects of the inputs seen, in order
	inputs  []*Input
	found   *Input
}

func (r *recorder) Evaluate(ctx context.Context, in *policy.Input) (*policy.Decision, error) {
	name := inputName(in)
	r.names = append(r.names, name)
	switch {
	case r.only != "":
		if name == r.only && r.found == nil {
			r.found = in
			return nil, nil // no decision: the replay stops after this object
		}
	case r.onInput != nil:
		if err := r.onInput(in); err != nil {
			return nil, err
		}
	default:
		r.inputs = append(r.inputs, in)
	}
	return r.Evaluator.Evaluate(ctx, in)
}

// InputName is the name of an input's object.
func InputName(in *Input) string { return inputName(in) }

func inputName(in *policy.Input) string {
	switch o := in.Object.(type) {
	case *v1alpha1.RBLNDriver:
		return o.Name
	case *v1alpha1.RBLNClusterPolicy:
		return o.Name
	}
	return ""
}

// PolicyData judges a release exactly as Check does and gives the cluster view the policies
// read at data.driverguard_cluster (`driverguard policy data`).
type PolicyData struct {
	cfg *Configuration
	Judge
	// Name, when set, gives the view the object of that name was judged against (the objects
	// before it applied) and judges nothing after; otherwise the view after the release.
	Name string
	// OnRenderWarnings, when set, is given the render warnings once the values rendered.
	OnRenderWarnings func([]Warning)
}

// NewPolicyData returns a PolicyData of the default release.
func NewPolicyData(cfg *Configuration) *PolicyData {
	return &PolicyData{cfg: cfg, Judge: Judge{RenderOptions: RenderOptions{ReleaseName: DefaultReleaseName}}}
}

// Run judges the release and returns the data document {"driverguard_cluster": view}.
func (p *PolicyData) Run(ctx context.Context) (map[string]any, error) {
	if err := oneStdin(p.stdinUsers()...); err != nil {
		return nil, err
	}
	r, st, err := p.cfg.renderAndRead(ctx, &p.Judge, p.OnRenderWarnings)
	if err != nil {
		return nil, err
	}
	engine, err := p.cfg.engine(ctx, p.Policy)
	if err != nil {
		return nil, err
	}
	view := func() (map[string]any, error) {
		doc, err := engine.ClusterDocument()
		if err != nil {
			return nil, err
		}
		return map[string]any{policy.ClusterKey: doc}, nil
	}
	rp, err := release.NewReplay(ctx, release.FromRender(r, p.ReleaseName), st, release.Options{Decider: p.decider(engine), Data: engine})
	if err != nil {
		return nil, judgeError(err)
	}
	var names []string
	for _, o := range rp.Objects() {
		if p.Name != "" {
			names = append(names, o.Name)
			if o.Name == p.Name {
				return view()
			}
		}
		if _, err := rp.Judge(ctx, o); err != nil {
			return nil, judgeError(err)
		}
	}
	if _, err := rp.Finish(ctx); err != nil {
		return nil, judgeError(err)
	}
	if p.Name != "" {
		return nil, fmt.Errorf("no rendered object is named %q; the objects are %s", truncateValue(p.Name), capList(names))
	}
	return view()
}

package action

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/suite"
	"github.com/driverguard/driverguard/webhook"
)

// Test runs declarative test suites (`driverguard test`, SPEC §10): every case judged by the
// decision core as Check would judge it, its expectations compared, rule coverage collected.
type Test struct {
	cfg *Configuration
	// Paths are suite files or folders searched for *.dgtest.yaml (none: the current folder).
	Paths []string
	// Select picks the cases whose "<suite file>/<case name>" matches (nil: every case).
	Select *regexp.Regexp
	// MinCoverage fails the run when fewer rules than this share (percent) fired.
	MinCoverage float64
	// CoverageOf, when set, are the rules coverage counts (--coverage-of): globs on rule IDs
	// (path.Match; a Rego package matches both its bodies). Each must match a rule of the
	// run.
	CoverageOf []string
}

// NewTest returns a Test.
func NewTest(cfg *Configuration) *Test { return &Test{cfg: cfg} }

// The types of a test run's result.
type (
	// TestCaseResult is one case: its expectations missed (none: it passed) or the error
	// that kept it from being judged.
	TestCaseResult struct {
		Suite    string           `json:"suite"`
		Name     string           `json:"name"`
		Line     int              `json:"line"`
		Passed   bool             `json:"passed"`
		Mismatch []suite.Mismatch `json:"mismatches,omitempty"`
		Error    string           `json:"error,omitempty"`
		Results  []suite.Result   `json:"results"`
		Duration time.Duration    `json:"durationNs"`
	}
	// TestRunResult is every case of every suite with the rule coverage.
	TestRunResult struct {
		// Findings are the run's findings: a TestCaseFailed per expectation a case missed (at
		// its line), a TestCaseError per case that could not be judged, a RuleNeverFired (audit)
		// per rule coverage counts that no case made fire.
		Findings    []finding.Finding    `json:"findings"`
		Cases       []TestCaseResult     `json:"cases"`
		Coverage    []suite.RuleCoverage `json:"coverage"`
		CoveragePct float64              `json:"coveragePercent"`
		MinCoverage float64              `json:"minCoverage,omitempty"`
		// CoverageOf are the patterns of --coverage-of that scoped the coverage (suites may
		// scope theirs too, with coverageOf).
		CoverageOf []string `json:"coverageOf,omitempty"`
		Passed     bool     `json:"passed"`
		Failed     int      `json:"failed"`
	}
)

// Run loads every suite (an unreadable one is an error naming its line, before any case
// runs) and judges its cases.
func (t *Test) Run(ctx context.Context) (*TestRunResult, error) {
	files, err := suite.Find(t.Paths)
	if err != nil {
		return nil, err
	}
	suites := make([]*suite.Suite, 0, len(files))
	for _, f := range files {
		s, err := suite.Load(f)
		if err != nil {
			return nil, err
		}
		suites = append(suites, s)
	}
	for _, p := range t.CoverageOf {
		if err := suite.CheckPattern(p); err != nil {
			return nil, fmt.Errorf("--coverage-of: %w", err)
		}
	}
	res := &TestRunResult{Cases: []TestCaseResult{}, MinCoverage: t.MinCoverage, CoverageOf: t.CoverageOf}
	cov := suite.NewCoverage()
	known := map[string]bool{} // the IDs of every rule coverage could count
	for _, s := range suites {
		if err := t.runSuite(ctx, s, cov, known, res); err != nil {
			return nil, err
		}
	}
	if err := checkCoverageOf("--coverage-of", t.CoverageOf, ruleIDs(known)); err != nil {
		return nil, err
	}
	if t.Select != nil && len(res.Cases) == 0 {
		n := 0
		for _, s := range suites {
			n += len(s.Tests)
		}
		return nil, fmt.Errorf("--run %q matches none of the %d cases found (it matches <suite file>/<case name>)", t.Select, n)
	}
	res.Coverage, res.CoveragePct = cov.Report()
	res.Findings = testFindings(res)
	res.Passed = res.Failed == 0 && res.CoveragePct >= t.MinCoverage
	return res, nil
}

// testFindings are the findings of a test run.
func testFindings(res *TestRunResult) []finding.Finding {
	out := []finding.Finding{}
	for _, c := range res.Cases {
		obj := finding.Object{Kind: finding.KindTestCase, Name: c.Name}
		if c.Error != "" {
			out = append(out, finding.Finding{Rule: finding.RuleTestCaseError, Level: finding.Deny, Object: obj, Message: c.Error,
				Location: &finding.Location{File: c.Suite, Line: max(c.Line, 1)}})
		}
		for _, m := range c.Mismatch {
			out = append(out, finding.Finding{Rule: finding.RuleTestCaseFailed, Level: finding.Deny, Object: obj, Message: m.String(),
				Location: &finding.Location{File: c.Suite, Line: max(cmp.Or(m.Line, c.Line), 1)}})
		}
	}
	for _, r := range res.Coverage { // only the rules coverage counts (--coverage-of, coverageOf)
		if r.Covered() {
			continue
		}
		f := finding.Finding{Rule: finding.RuleNeverFired, Level: finding.Audit,
			Object: finding.Object{Kind: "Rule", Name: r.Rule}, Message: "no case makes " + r.Rule + " fire"}
		if r.Title != "" && !strings.HasPrefix(r.Title, "Rego policy ") { // a title of its own
			f.Message += " (" + r.Title + ")"
		}
		if file, line, ok := ruleHome(r); ok { // a policy's rule body, at its line
			f.Location = &finding.Location{File: file, Line: line}
		}
		out = append(out, f)
	}
	return out
}

// ruleHome is the file and line of a policy's rule body (its Home, file:line).
func ruleHome(r suite.RuleCoverage) (string, int, bool) {
	if r.Source != finding.SourcePolicy {
		return "", 0, false
	}
	i := strings.LastIndexByte(r.Home, ':')
	if i <= 0 {
		return "", 0, false
	}
	line, err := strconv.Atoi(r.Home[i+1:])
	if err != nil || line < 1 {
		return "", 0, false
	}
	return r.Home[:i], line, true
}

// BuiltInRules are the rules of the decision core a suite's coverage counts (syntax findings
// carry field error types, which a case may expect but coverage does not list).
var BuiltInRules = []string{
	finding.RuleIdenticalNodeSelector, finding.RuleConflictingNodeSelector, finding.RulePotentialConflict,
	finding.RuleUpgradePolicy, finding.RuleClusterPolicyName, finding.RuleDriverLoss,
}

// builtInRules are the registry's BuiltInRules.
func builtInRules() []finding.Rule {
	reg := finding.NewRegistry()
	out := make([]finding.Rule, 0, len(BuiltInRules))
	for _, id := range BuiltInRules {
		r, ok := reg.Rule(id)
		if !ok {
			r = finding.Rule{ID: id, Title: id, Source: finding.SourceBuiltin}
		}
		out = append(out, r)
	}
	return out
}

// Rules of results beyond the decision's.
const (
	// RuleDriverLoss: a node that carries a driver now would get none.
	RuleDriverLoss = finding.RuleDriverLoss
	// RuleInvalidValues: the values do not render (the field errors of `render`).
	RuleInvalidValues = finding.RuleInvalidValues
	// RuleRenderWarning: legal but suspicious values (a render warning).
	RuleRenderWarning = finding.RuleRenderWarning
	// RuleOmittedFindings: findings beyond what the decision lists for one object, counted.
	RuleOmittedFindings = finding.RuleOmittedFindings
	// RuleInputWarning: an input that looks like a failed read (a node inventory without
	// nodes, ...), not a cluster.
	RuleInputWarning = finding.RuleInputWarning
)

// suiteRun is one suite ready to judge its cases: its policies compiled once, its inventory
// read once.
type suiteRun struct {
	s      *suite.Suite
	engine *policy.Engine
	// rules are the IDs of the rule bodies of the suite's enabled policies; judgedBy those
	// and the built-in rules, which every judged object passes unless a result says
	// otherwise.
	rules, judgedBy []string
	inventory       inventory
}

// inventory is a cluster read from a suite.
type inventory struct {
	nodes     []routing.Node
	drivers   []v1alpha1.RBLNDriver
	policies  []v1alpha1.RBLNClusterPolicy
	workloads *cluster.Workloads
	// sources say which parts the suite gave (a part not given is unknown, as for check).
	sources cluster.Sources
}

// ruleIDs are the IDs of known: the policies' rule bodies first, then the built-in rules.
func ruleIDs(known map[string]bool) []string {
	builtIn := func(id string) int {
		if finding.PolicyOf(id) == "" {
			return 1
		}
		return 0
	}
	return slices.SortedFunc(maps.Keys(known), func(a, b string) int {
		return cmp.Or(cmp.Compare(builtIn(a), builtIn(b)), cmp.Compare(a, b))
	})
}

// checkCoverageOf reports the first of patterns (of where) that matches none of the rules.
func checkCoverageOf(where string, patterns, rules []string) error {
	for _, p := range patterns {
		if !slices.ContainsFunc(rules, func(r string) bool { return suite.MatchRule(p, r) }) {
			return fmt.Errorf("%s %q matches no rule coverage counts; the rules are %s (a glob on rule IDs such as driverguard.team.*, or a policy package for its deny and warn; driverguard policy list shows them)",
				where, truncateValue(p), capList(rules))
		}
	}
	return nil
}

// runSuite judges the selected cases of s, registering the rules coverage counts (those its
// coverageOf and --coverage-of name) and adding every rule it could count to known.
func (t *Test) runSuite(ctx context.Context, s *suite.Suite, cov *suite.Coverage, known map[string]bool, res *TestRunResult) error {
	var selected []*suite.Case
	for i := range s.Tests {
		if t.Select == nil || t.Select.MatchString(s.File+"/"+s.Tests[i].Name) {
			selected = append(selected, &s.Tests[i])
		}
	}
	dirs := make([]string, 0, len(s.Policies))
	for _, p := range s.Policies {
		dirs = append(dirs, s.Resolve(p))
	}
	engine, err := Policy{Dirs: dirs}.newEngine(ctx, policy.Options{Metrics: prometheus.NewRegistry(),
		MaxFileBytes: t.cfg.maxValuesBytes(), ExcludeLibrary: !s.WithLibrary()})
	if err != nil {
		return fmt.Errorf("%s: %w", s.File, err)
	}
	run := &suiteRun{s: s, engine: engine}
	var rules []finding.Rule
	for _, r := range engine.Rules() {
		if !r.Disabled {
			rules = append(rules, r)
			run.rules = append(run.rules, r.ID)
		}
	}
	run.judgedBy = append(slices.Clone(run.rules), BuiltInRules...)
	counted := append(rules, builtInRules()...)
	ids := map[string]bool{}
	for _, r := range counted {
		ids[r.ID] = true
		known[r.ID] = true
	}
	scope := make([]string, 0, len(s.CoverageOf))
	for _, p := range s.CoverageOf {
		if err := checkCoverageOf("coverageOf", []string{p.Value}, ruleIDs(ids)); err != nil {
			return &suite.Error{File: s.File, Line: p.Line, Msg: err.Error()}
		}
		scope = append(scope, p.Value)
	}
	for _, r := range counted {
		if suite.MatchAny(scope, r.ID) && suite.MatchAny(t.CoverageOf, r.ID) {
			cov.Rules([]finding.Rule{r})
		}
	}
	if run.inventory, err = t.readInventory(ctx, s, &s.Inventory, inventory{}); err != nil {
		return err
	}
	for _, c := range selected {
		start := time.Now()
		cr := TestCaseResult{Suite: s.File, Name: c.Name, Line: c.Line, Results: []suite.Result{}}
		out, err := t.judgeCase(ctx, run, c)
		if ctx.Err() != nil { // interrupted: no case after this one was judged, report none
			return ctx.Err()
		}
		switch {
		case err != nil:
			cr.Error = err.Error()
		default:
			cr.Results = out.Results
			cr.Mismatch = suite.Match(c, out)
			cr.Passed = len(cr.Mismatch) == 0
			cov.Add(s.File+"/"+c.Name, out)
		}
		cr.Duration = time.Since(start)
		if !cr.Passed {
			res.Failed++
		}
		res.Cases = append(res.Cases, cr)
	}
	return nil
}

// readInventory reads inv over base, kind by kind.
func (t *Test) readInventory(ctx context.Context, s *suite.Suite, inv *suite.Inventory, base inventory) (inventory, error) {
	out := base
	var err error
	source := func(o *suite.Objects, what string, n int) cluster.Source {
		return cluster.Source{Given: true, From: fmt.Sprintf("the inventory's %s (%s:%d)", what, s.File, o.Line), Count: n}
	}
	if !inv.Nodes.Empty() {
		if out.nodes, err = readObjects(ctx, t.cfg, s, inv.Nodes, "nodes", cluster.ReadNodes); err != nil {
			return out, err
		}
		out.sources.Nodes = source(inv.Nodes, "nodes", len(out.nodes))
	}
	if !inv.Drivers.Empty() {
		if out.drivers, err = readObjects(ctx, t.cfg, s, inv.Drivers, "drivers", cluster.ReadDrivers); err != nil {
			return out, err
		}
		out.sources.Drivers = source(inv.Drivers, "drivers", len(out.drivers))
	}
	if !inv.ClusterPolicy.Empty() {
		if out.policies, err = readObjects(ctx, t.cfg, s, inv.ClusterPolicy, "clusterPolicy", cluster.ReadClusterPolicies); err != nil {
			return out, err
		}
		out.sources.ClusterPolicy = source(inv.ClusterPolicy, "clusterPolicy", len(out.policies))
	}
	if !inv.Pods.Empty() {
		if out.workloads, err = readObjects(ctx, t.cfg, s, inv.Pods, "pods", cluster.ReadWorkloads); err != nil {
			return out, err
		}
		out.sources.Workloads = source(inv.Pods, "pods", len(out.workloads.Pods))
	}
	return out, nil
}

// readObjects reads the files and inline objects of o as one stream with read.
func readObjects[T any](ctx context.Context, cfg *Configuration, s *suite.Suite, o *suite.Objects, what string,
	read func(context.Context, string, cluster.ReadOptions) (T, error)) (T, error) {
	var zero T
	stream, err := objectStream(ctx, cfg, s, o)
	if err != nil {
		return zero, err
	}
	v, err := read(ctx, "-", cluster.ReadOptions{Stdin: bytes.NewReader(stream)})
	if err != nil {
		return zero, &suite.Error{File: s.File, Line: o.Line, Msg: fmt.Sprintf("%s: %v", what, err)}
	}
	return v, nil
}

// objectStream is the files of o then its inline objects as one YAML stream, within the
// inventory limit in all. Files must be YAML or JSON (a NUL byte stops the reading); inline
// objects are written as JSON, which is no larger than the suite that held them.
func objectStream(ctx context.Context, cfg *Configuration, s *suite.Suite, o *suite.Objects) ([]byte, error) {
	limit := cfg.readOptions().Limit()
	var buf bytes.Buffer
	tooLarge := func(line int) error {
		return &suite.Error{File: s.File, Line: line, Msg: withLimitHint(&decode.TooLargeError{Name: "the objects given here", Limit: limit}, FlagMaxInventorySize).Error()}
	}
	for _, p := range o.Files {
		if int64(buf.Len()) >= limit {
			return nil, tooLarge(p.Line)
		}
		data, err := decode.ReadText(ctx, s.Resolve(p), nil, limit-int64(buf.Len()))
		if err != nil {
			return nil, &suite.Error{File: s.File, Line: p.Line, Msg: withLimitHint(err, FlagMaxInventorySize).Error()}
		}
		separate(&buf)
		buf.Write(data)
	}
	for _, m := range o.Inline {
		data, err := json.Marshal(m)
		if err != nil {
			return nil, &suite.Error{File: s.File, Line: o.Line, Msg: err.Error()}
		}
		separate(&buf)
		buf.Write(data)
		if int64(buf.Len()) > limit {
			return nil, tooLarge(o.Line)
		}
	}
	return buf.Bytes(), nil
}

// separate ends the document in buf, if any, so that the next starts a document of its own
// (the first is document 1 in messages).
func separate(buf *bytes.Buffer) {
	if buf.Len() > 0 {
		buf.WriteString("\n---\n")
	}
}

// judgeCase judges one case against its cluster.
func (t *Test) judgeCase(ctx context.Context, run *suiteRun, c *suite.Case) (*suite.Outcome, error) {
	inv := run.inventory
	if c.Inventory != nil {
		var err error
		if inv, err = t.readInventory(ctx, run.s, c.Inventory, inv); err != nil {
			return nil, err
		}
	}
	switch {
	case !c.Review.Empty():
		return t.judgeReview(ctx, run, c, inv)
	case len(c.Values) > 0:
		opts := RenderOptions{ReleaseName: DefaultReleaseName}
		for _, p := range c.Values {
			opts.ValueFiles = append(opts.ValueFiles, run.s.Resolve(p))
		}
		opts.Values = c.Set
		r, err := t.cfg.render(ctx, &opts)
		var invalid *InvalidError
		if errors.As(err, &invalid) {
			return invalidOutcome(invalid, run), nil
		}
		if err != nil {
			return nil, err
		}
		return t.judgeObjects(ctx, run, c, inv, release.FromRender(r, DefaultReleaseName), r)
	default:
		objs, daemonSets, err := t.caseObjects(ctx, run.s, c.Objects)
		if err != nil {
			return nil, err
		}
		var oldDaemonSets []decode.Document
		if !c.OldObjects.Empty() {
			var old release.Objects
			if old, oldDaemonSets, err = t.caseObjects(ctx, run.s, c.OldObjects); err != nil {
				return nil, err
			}
			inv.drivers = append(slices.Clone(inv.drivers), old.Drivers...)
			if old.ClusterPolicy != nil {
				inv.policies = append(slices.Clone(inv.policies), *old.ClusterPolicy)
			}
		}
		if err := checkOperation(c, objs, inv); err != nil {
			return nil, err
		}
		out := &suite.Outcome{Allowed: true, Results: []suite.Result{}}
		if objs.ClusterPolicy != nil || len(objs.Drivers) > 0 {
			if out, err = t.judgeObjects(ctx, run, c, inv, objs, &render.Result{}); err != nil {
				return nil, err
			}
		}
		if len(daemonSets) == 0 {
			return out, nil
		}
		// Driver DaemonSets come after the drivers they name, as the operator creates them:
		// the case's drivers are stored by then.
		inv.drivers = append(slices.Clone(inv.drivers), objs.Drivers...)
		return judgeDaemonSets(ctx, run, c, inv, daemonSets, oldDaemonSets, out)
	}
}

// caseObjects reads the objects of a case: the RBLNDrivers and RBLNClusterPolicy, and the
// driver DaemonSets apart.
func (t *Test) caseObjects(ctx context.Context, s *suite.Suite, o *suite.Objects) (release.Objects, []decode.Document, error) {
	stream, err := objectStream(ctx, t.cfg, s, o)
	if err != nil {
		return release.Objects{}, nil, err
	}
	const source = "the objects"
	docs, err := renderedDocuments(stream, source)
	if err != nil {
		return release.Objects{}, nil, &suite.Error{File: s.File, Line: o.Line, Msg: err.Error()}
	}
	var daemonSets []decode.Document
	for _, d := range docs {
		switch {
		case d.Kind == "DaemonSet" && d.APIVersion == "apps/v1":
			daemonSets = append(daemonSets, d)
		case d.Kind == "RBLNDriver" || d.Kind == "RBLNClusterPolicy":
		default:
			return release.Objects{}, nil, &suite.Error{File: s.File, Line: o.Line, Msg: fmt.Sprintf(
				"a %s %s among the objects: a case judges RBLNDrivers, the RBLNClusterPolicy and driver DaemonSets (apps/v1) only",
				validation.Truncate(d.APIVersion, 80), validation.Truncate(d.Kind, 80))}
		}
	}
	objs, err := objectsOf(docs, source)
	if err != nil {
		return objs, nil, &suite.Error{File: s.File, Line: o.Line, Msg: err.Error()}
	}
	if objs.ClusterPolicy == nil && len(objs.Drivers) == 0 && len(daemonSets) == 0 {
		return objs, nil, &suite.Error{File: s.File, Line: o.Line, Msg: "no RBLNDriver, RBLNClusterPolicy or driver DaemonSet (apps/v1) among the objects"}
	}
	// Objects are applied one by one, as kubectl apply would: no release owns them, so none
	// of the stored drivers is deleted for not being among them.
	objs.ReleaseName = ""
	return objs, daemonSets, nil
}

// judgeDaemonSets answers each driver DaemonSet as the webhook answers its admission (an
// UPDATE when oldObjects hold a DaemonSet of the same name), adding to out.
func judgeDaemonSets(ctx context.Context, run *suiteRun, c *suite.Case, inv inventory, daemonSets, old []decode.Document, out *suite.Outcome) (*suite.Outcome, error) {
	bad := func(d decode.Document, err error) error {
		return &suite.Error{File: run.s.File, Line: c.Objects.Line, Msg: fmt.Sprintf("%s: %v", d.Source, err)}
	}
	stored := map[string][]byte{} // the old DaemonSets by name
	for _, d := range old {
		meta, err := documentMeta(d)
		if err != nil {
			return nil, bad(d, err)
		}
		stored[meta.Name] = d.Data
	}
	for _, ds := range daemonSets {
		meta, err := documentMeta(ds)
		if err != nil {
			return nil, bad(ds, err)
		}
		req := &admissionv1.AdmissionRequest{
			UID:       "driverguard-test",
			Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"},
			Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
			Name:      meta.Name,
			Namespace: meta.Namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: ds.Data},
		}
		if data, ok := stored[meta.Name]; ok {
			req.Operation, req.OldObject = admissionv1.Update, runtime.RawExtension{Raw: data}
		}
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
			Request:  req,
		})
		if err != nil {
			return nil, err
		}
		got, err := reviewOutcome(ctx, run, body, inv)
		if err != nil {
			return nil, err
		}
		out.Allowed = out.Allowed && got.Allowed
		out.Objects = append(out.Objects, got.Objects...)
		out.Results = append(out.Results, got.Results...)
		if out.Images == nil {
			out.Images = map[string]string{}
		}
		maps.Copy(out.Images, got.Images)
	}
	return out, nil
}

// documentMeta is the metadata of a document.
func documentMeta(d decode.Document) (metav1.ObjectMeta, error) {
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	err := json.Unmarshal(d.Data, &obj)
	return obj.Metadata, err
}

// mutatedImage is the image of a driver DaemonSet's driver or RSMD container once the
// webhook's patch is applied ("" when the webhook sets none).
func mutatedImage(object, patch []byte) (string, error) {
	if len(patch) == 0 {
		return "", nil
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return "", fmt.Errorf("the webhook's patch: %w", err)
	}
	patched, err := p.Apply(object)
	if err != nil {
		return "", fmt.Errorf("applying the webhook's patch: %w", err)
	}
	var ds appsv1.DaemonSet
	if err := json.Unmarshal(patched, &ds); err != nil {
		return "", fmt.Errorf("the patched DaemonSet: %w", err)
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == operator.ContainerDriver || c.Name == operator.ContainerSMD {
			return c.Image, nil
		}
	}
	return "", nil
}

// checkOperation holds a case to its operation: UPDATE needs every object stored already,
// CREATE none.
func checkOperation(c *suite.Case, objs release.Objects, inv inventory) error {
	stored := func(name string) bool {
		return slices.ContainsFunc(inv.drivers, func(d v1alpha1.RBLNDriver) bool { return d.Name == name })
	}
	if cp := objs.ClusterPolicy; cp != nil {
		storedPolicy := slices.ContainsFunc(inv.policies, func(p v1alpha1.RBLNClusterPolicy) bool { return p.Name == cp.Name })
		switch {
		case c.Operation == "UPDATE" && !storedPolicy:
			return fmt.Errorf("operation UPDATE: RBLNClusterPolicy %s is not stored (give it in oldObjects or the inventory's clusterPolicy)", cp.Name)
		case c.Operation != "UPDATE" && storedPolicy:
			return fmt.Errorf("operation CREATE: RBLNClusterPolicy %s is stored already (oldObjects or the inventory's clusterPolicy): say operation: UPDATE", cp.Name)
		}
	}
	for _, d := range objs.Drivers {
		switch {
		case c.Operation == "UPDATE" && !stored(d.Name):
			return fmt.Errorf("operation UPDATE: RBLNDriver %s is not stored (give it in oldObjects or the inventory's drivers)", d.Name)
		case c.Operation != "UPDATE" && stored(d.Name):
			return fmt.Errorf("operation CREATE: RBLNDriver %s is stored already (oldObjects or the inventory's drivers): say operation: UPDATE", d.Name)
		}
	}
	return nil
}

// judgeObjects applies objs to the case's cluster as Check does, and plans when the case
// expects a plan.
func (t *Test) judgeObjects(ctx context.Context, run *suiteRun, c *suite.Case, inv inventory, objs release.Objects, r *render.Result) (*suite.Outcome, error) {
	st := inv.state()
	d := &Decision{}
	j, err := d.apply(ctx, objs, r, st, run.engine)
	if err != nil {
		return nil, err
	}
	rep := j.report(false)
	out := &suite.Outcome{Allowed: rep.Passed, Rules: run.judgedBy, Results: []suite.Result{}}
	for _, o := range rep.Resources {
		out.Objects = append(out.Objects, o.Kind+"/"+o.Name)
	}
	// The nodes that carry a driver now are judged by DriverLoss.
	for _, n := range inv.nodes {
		if n.Labels[operator.LabelOwner] != "" {
			out.Objects = append(out.Objects, "Node/"+n.Name)
		}
	}
	out.Results = suiteResults(rep.Findings)
	if c.Expect.Plan != nil {
		p, err := plan.Make(ctx, plan.Inputs{Objects: &objs, Cluster: inv.state(), Workloads: inv.workloads,
			Apply: release.Options{Decider: d.decider(run.engine), Data: run.engine}})
		if err != nil {
			return nil, fmt.Errorf("planning: %w", err)
		}
		out.Plan = map[string]string{}
		for _, n := range p.Nodes {
			out.Plan[n.Name] = n.Action
		}
	}
	return out, nil
}

// suiteResults are the findings a case's expectations are about: those of the objects
// judged (each rule body its own rule) and the nodes that would lose their driver. Render
// warnings, input warnings and the drift now are not results of a case.
func suiteResults(fs []finding.Finding) []suite.Result {
	out := []suite.Result{}
	for _, f := range fs {
		switch {
		case f.Rule == finding.RuleRenderWarning, f.Rule == finding.RuleInputWarning, f.Object.Kind == finding.KindNode && f.Rule != finding.RuleDriverLoss:
			continue
		case f.Object.Kind == "": // the count of what a report does not list (driver losses)
			continue
		}
		out = append(out, suite.Result{Object: f.Object.String(), Rule: f.Rule, Result: suite.ResultOf(f.Level), Message: f.Text()})
	}
	return out
}

// invalidOutcome is values that do not render: denied, one InvalidValues result.
func invalidOutcome(err *InvalidError, run *suiteRun) *suite.Outcome {
	return &suite.Outcome{Allowed: false, Objects: []string{"Values/values"}, Rules: run.rules,
		Results: []suite.Result{{Object: "Values/values", Rule: RuleInvalidValues, Result: suite.ResultFail, Message: err.Error()}}}
}

// state is a cluster.State of its own for one case (applying objects changes it).
func (inv inventory) state() *cluster.State {
	st := cluster.FromLists(slices.Clone(inv.nodes), slices.Clone(inv.drivers), slices.Clone(inv.policies), inv.workloads)
	st.SetSources(inv.sources)
	return st
}

// judgeReview answers the case's AdmissionReview through the webhook's handler.
func (t *Test) judgeReview(ctx context.Context, run *suiteRun, c *suite.Case, inv inventory) (*suite.Outcome, error) {
	body, err := objectBody(ctx, t.cfg, run.s, c.Review)
	if err != nil {
		return nil, err
	}
	return reviewOutcome(ctx, run, body, inv)
}

// objectBody is the one object of o as JSON.
func objectBody(ctx context.Context, cfg *Configuration, s *suite.Suite, o *suite.Objects) ([]byte, error) {
	if len(o.Inline) == 1 {
		data, err := json.Marshal(o.Inline[0])
		if err == nil && len(data) > webhook.MaxReviewBytes {
			err = fmt.Errorf("the review is larger than the limit of %s, the webhook's: it would refuse the request (413) unread", decode.FormatBytes(webhook.MaxReviewBytes))
		}
		if err != nil {
			return nil, &suite.Error{File: s.File, Line: o.Line, Msg: err.Error()}
		}
		return data, nil
	}
	data, err := decode.ReadText(ctx, s.Resolve(o.Files[0]), nil, webhook.MaxReviewBytes)
	var tl *decode.TooLargeError
	if errors.As(err, &tl) {
		return nil, &suite.Error{File: s.File, Line: o.Files[0].Line, Msg: err.Error() + ", the webhook's: it would refuse the request (413) unread"}
	}
	if err != nil {
		return nil, &suite.Error{File: s.File, Line: o.Files[0].Line, Msg: err.Error()}
	}
	return data, nil
}

// reviewOutcome answers body through the webhook's handler with inv as the cluster.
func reviewOutcome(ctx context.Context, run *suiteRun, body []byte, inv inventory) (*suite.Outcome, error) {
	js, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, fmt.Errorf("the review is not YAML or JSON: %w", err)
	}
	review, verdict, err := webhook.New(cluster.NewStatic(inv.state()), webhook.Options{Policy: run.engine}).Decide(ctx, js)
	if err != nil {
		return nil, err
	}
	req, resp := review.Request, review.Response
	name := req.Kind.Kind + "/" + req.Name
	out := &suite.Outcome{Allowed: resp.Allowed, Objects: []string{name}, Rules: run.judgedBy,
		Results: []suite.Result{}}
	if req.Kind.Kind == "DaemonSet" { // mutated, not judged by the rules
		out.Rules = nil
		image, err := mutatedImage(req.Object.Raw, resp.Patch)
		if err != nil {
			return nil, err
		}
		out.Images = map[string]string{req.Name: image}
	}
	switch {
	case verdict != nil: // the findings the response words, as the decision made them
		out.Results = suiteResults(append(verdict.Findings(), verdict.OmittedFindings()...))
		for i := range out.Results {
			out.Results[i].Object = name // as the request names it (a DaemonSet without its namespace)
		}
	case !resp.Allowed && resp.Result != nil: // a request the webhook could not decide on
		out.Results = append(out.Results, suite.Result{Object: name, Rule: string(resp.Result.Reason), Result: suite.ResultFail, Message: resp.Result.Message})
	}
	return out, nil
}

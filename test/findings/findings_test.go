package findings

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/test/controlplane"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// releaseName is the release every front end renders and judges as: the release that
// installed examples/drivers.yaml (so a rendered driver of a stored name is an UPDATE, a
// stored driver no longer rendered is deleted) and the test runner's default.
const releaseName = "driverguard"

// ownPolicy is the package of testdata/policy: rules that read the object alone.
const ownPolicy = "driverguard.findingstest"

var env struct {
	root, bin, policy string
	err               error
}

func TestMain(m *testing.M) {
	env.err = setup()
	os.Exit(m.Run())
}

func setup() error {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	env.root = root
	env.policy = filepath.Join(root, "test", "findings", "testdata", "policy")
	env.bin, err = controlplane.DriverguardBinary(root, "findings")
	return err
}

func requireSetup(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the driverguard binary over the corpus")
	}
	require.NoError(t, env.err, "setting up: building driverguard (or set DRIVERGUARD_BIN)")
}

// result is one run of a command.
type result struct {
	code           int
	stdout, stderr string
}

// run runs a command line with stdin and the environment plus extra, within a minute.
func run(t *testing.T, extra []string, stdin []byte, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = env.root
	cmd.Env = append(os.Environ(), extra...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s %s: %s", name, strings.Join(args, " "), errOut.String())
		code = exit.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func dg(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, nil, nil, env.bin, args...)
}

// key is what every front end must agree on for a finding.
type key struct {
	Rule    string
	Level   finding.Level
	Object  string
	Field   string
	Message string
}

func (k key) String() string {
	return fmt.Sprintf("%s %s %s field=%q: %s", k.Level, k.Object, k.Rule, k.Field, k.Message)
}

func keyOf(f finding.Finding) key {
	return key{Rule: f.Rule, Level: f.Level, Object: f.Object.String(), Field: f.Field, Message: f.Message}
}

// ofObject are the findings an admission of the object has, as keys, sorted: every level,
// without the render warnings (of the values, not an object's admission), the input
// warnings (of the cluster files), the count of findings a verdict does not list, and the
// nodes' (drift, driver loss).
func ofObject(fs []finding.Finding, object string) []key {
	out := []key{}
	for _, f := range fs {
		switch f.Rule {
		case finding.RuleRenderWarning, finding.RuleInputWarning, finding.RuleOmittedFindings:
			continue
		}
		if f.Object.String() == object {
			out = append(out, keyOf(f))
		}
	}
	slices.SortFunc(out, func(a, b key) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// keep are the keys rule accepts.
func keep(ks []key, rule func(string) bool) []key {
	return slices.DeleteFunc(slices.Clone(ks), func(k key) bool { return !rule(k.Rule) })
}

func lines(ks []key) string {
	if len(ks) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, k := range ks {
		b.WriteString("  " + k.String() + "\n")
	}
	return b.String()
}

// cluster is what the values are judged against: the example nodes, with or without the
// drivers stored now.
type cluster struct {
	name, nodes, drivers string
}

// valuesCase is a values file that renders, with its rendered objects in Helm's order.
type valuesCase struct {
	name, file string
	objects    []object
}

// object is a rendered RBLNClusterPolicy or RBLNDriver.
type object struct {
	kind, name string
	driver     *v1alpha1.RBLNDriver
	policy     *v1alpha1.RBLNClusterPolicy
}

func (o object) title() string { return o.kind + "/" + o.name }

func (o object) runtime() runtime.Object {
	if o.driver != nil {
		return o.driver.WithTypeMeta()
	}
	return o.policy.WithTypeMeta()
}

// corpus are the values files of test/testdata/values that render, and the example.
func corpus(t *testing.T) (cases []valuesCase, rejected int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.root, "test", "testdata", "values", "*.yaml"))
	require.NoError(t, err)
	files = append(files, filepath.Join(env.root, "examples", "multi-driver.yaml"))
	for _, f := range files {
		r := dg(t, "render", "-f", f, "--release-name", releaseName, "-o", "yaml")
		if r.code != 0 {
			require.Contains(t, r.stderr, "invalid values", "%s: render", f)
			rejected++
			continue
		}
		docs, err := decode.Documents(strings.NewReader(r.stdout), f)
		require.NoError(t, err)
		vc := valuesCase{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), file: f}
		for _, d := range docs {
			switch d.Kind {
			case "RBLNDriver":
				ds, err := decode.Drivers([]decode.Document{d})
				require.NoError(t, err)
				vc.objects = append(vc.objects, object{kind: d.Kind, name: ds[0].Name, driver: &ds[0]})
			case "RBLNClusterPolicy":
				ps, err := decode.ClusterPolicies([]decode.Document{d})
				require.NoError(t, err)
				vc.objects = append(vc.objects, object{kind: d.Kind, name: ps[0].Name, policy: &ps[0]})
			default:
				t.Fatalf("%s: render printed a %s", f, d.Kind)
			}
		}
		cases = append(cases, vc)
	}
	require.NotEmpty(t, cases)
	return cases, rejected
}

// checkDoc is `check -o json`, as much as the comparisons read.
type checkDoc struct {
	Findings  []finding.Finding `json:"findings"`
	Resources []struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Operation string `json:"operation"`
		Allowed   bool   `json:"allowed"`
	} `json:"resources"`
	Deleted []string `json:"deleted"`
	Passed  bool     `json:"passed"`
}

func check(t *testing.T, values string, args ...string) checkDoc {
	t.Helper()
	r := dg(t, append([]string{"check", "-f", values, "--release-name", releaseName, "--policy", env.policy, "-o", "json"}, args...)...)
	require.Contains(t, []int{0, 1}, r.code, "check %s: %s", values, r.stderr)
	var doc checkDoc
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Equal(t, r.code == 0, doc.Passed, "check %s: exit code and passed", values)
	return doc
}

// state is the cluster as check sees it at one point of the release: the stored drivers in
// order, the stored cluster policy.
type state struct {
	drivers []v1alpha1.RBLNDriver
	policy  *v1alpha1.RBLNClusterPolicy
}

func (s *state) driver(name string) *v1alpha1.RBLNDriver {
	for i := range s.drivers {
		if s.drivers[i].Name == name {
			return &s.drivers[i]
		}
	}
	return nil
}

// apply stores o as the API server would after admitting it.
func (s *state) apply(o object) {
	if o.policy != nil {
		s.policy = o.policy.DeepCopy()
		return
	}
	if d := s.driver(o.name); d != nil {
		*d = *o.driver.DeepCopy()
		return
	}
	s.drivers = append(s.drivers, *o.driver.DeepCopy())
}

// files writes the stored objects ("" for a kind with none).
func (s *state) files(t *testing.T, dir string) (drivers, policy string) {
	t.Helper()
	var objs []any
	for i := range s.drivers {
		objs = append(objs, s.drivers[i].WithTypeMeta())
	}
	drivers = writeStream(t, filepath.Join(dir, "stored-drivers.yaml"), objs)
	if s.policy != nil {
		policy = writeStream(t, filepath.Join(dir, "stored-policy.yaml"), []any{s.policy.WithTypeMeta()})
	}
	return drivers, policy
}

func writeStream(t *testing.T, path string, objs []any) string {
	t.Helper()
	if len(objs) == 0 {
		return ""
	}
	var b bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o)
		require.NoError(t, err)
		b.WriteString("---\n")
		b.Write(data)
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	return path
}

// counts are what the acceptance test compared.
type counts struct {
	runs, rejected, objects, admitted           int
	reviewed, tested, audited, auditDiffers     int
	findings, reviewFindings, auditComparedKeys int
	auditShape                                  int
	rules                                       map[string]int
}

// text is a finding's field and message on one line, as an admission response words it.
func text(k key) string {
	if k.Field != "" {
		return k.Field + ": " + k.Message
	}
	return k.Message
}

// TestSameFindingsAcrossFrontEnds: for every values file of the corpus that renders and
// examples/multi-driver.yaml, against examples/nodes.yaml with and without
// examples/drivers.yaml, and with testdata/policy (a deny and two warn rules), check, review,
// test and audit report the same findings for each rendered object (see each comparison).
func TestSameFindingsAcrossFrontEnds(t *testing.T) {
	requireSetup(t)
	nodes := filepath.Join(env.root, "examples", "nodes.yaml")
	clusters := []cluster{
		{name: "nodes", nodes: nodes},
		{name: "nodes+drivers", nodes: nodes, drivers: filepath.Join(env.root, "examples", "drivers.yaml")},
	}
	cases, rejected := corpus(t)
	c := counts{rejected: rejected, rules: map[string]int{}}
	for _, cl := range clusters {
		dir := t.TempDir()
		var suiteCases []suiteCase
		for _, vc := range cases {
			sc := compareCase(t, dir, cl, vc, &c)
			suiteCases = append(suiteCases, sc)
		}
		compareTestRun(t, dir, cl, suiteCases, &c)
	}
	t.Logf("%d values files render (%d of the corpus rejected by render, skipped) x %d clusters = %d check runs: "+
		"%d objects judged (%d admitted), %d check findings of objects; review: %d objects compared (%d findings); "+
		"test: %d objects compared; audit: %d admitted objects compared on %d findings (%d with other rules differing, logged; %d findings shaped differently); check's findings by level and rule: %v",
		len(cases), c.rejected, len(clusters), c.runs, c.objects, c.admitted, c.findings, c.reviewed, c.reviewFindings,
		c.tested, c.audited, c.auditComparedKeys, c.auditDiffers, c.auditShape, c.rules)
	require.Positive(t, c.findings, "the corpus must give findings to compare")
}

// suiteCase is a values file as a case of the generated suite, with what check found.
type suiteCase struct {
	name, file string
	allowed    bool
	// results are check's findings as the test runner's results (object, rule, result,
	// message), sorted.
	results []string
	objects []string
}

// compareCase compares check with review and audit for one values file and cluster, and
// returns the test case it makes.
func compareCase(t *testing.T, dir string, cl cluster, vc valuesCase, c *counts) suiteCase {
	t.Helper()
	name := cl.name + "/" + vc.name
	args := []string{"--nodes", cl.nodes}
	if cl.drivers != "" {
		args = append(args, "--drivers", cl.drivers)
	}
	rep := check(t, vc.file, args...)
	c.runs++
	require.Len(t, rep.Resources, len(vc.objects), "%s: check judged every rendered object", name)

	// The cluster before the release: the drivers stored now.
	st := &state{}
	if cl.drivers != "" {
		docs, err := decode.File(cl.drivers, nil)
		require.NoError(t, err)
		st.drivers, err = decode.Drivers(docs)
		require.NoError(t, err)
	}
	sc := suiteCase{name: vc.name, file: vc.file, allowed: rep.Passed, results: testResults(rep.Findings)}
	for i, o := range vc.objects {
		res := rep.Resources[i]
		require.Equal(t, o.title(), res.Kind+"/"+res.Name, "%s: Helm's order", name)
		sc.objects = append(sc.objects, o.title())
		c.objects++
		want := ofObject(rep.Findings, o.title())
		c.findings += len(want)
		for _, k := range want {
			c.rules[string(k.Level)+" "+k.Rule]++
		}

		// review: the same request, against the cluster check judged it against.
		var old runtime.Object
		switch {
		case o.driver != nil && st.driver(o.name) != nil:
			old = st.driver(o.name).WithTypeMeta()
		case o.policy != nil && st.policy != nil:
			old = st.policy.WithTypeMeta()
		}
		op := admissionv1.Create
		if old != nil {
			op = admissionv1.Update
		}
		require.Equal(t, string(op), res.Operation, "%s %s: check's operation is the one the stored objects make", name, o.title())
		allowed, got := review(t, dir, cl, st, op, o, old)
		c.reviewed++
		c.reviewFindings += len(got)
		assert.Equal(t, res.Allowed, allowed, "%s %s: check and review disagree on the verdict", name, o.title())
		if !assert.Equal(t, want, got, "%s %s (%s): check and review disagree", name, o.title(), op) {
			t.Logf("check:\n%sreview:\n%s", lines(want), lines(got))
		}
		if res.Allowed {
			st.apply(o)
			c.admitted++
		}
	}
	// Helm deletes what the release no longer renders, after the rest.
	st.drivers = slices.DeleteFunc(st.drivers, func(d v1alpha1.RBLNDriver) bool { return slices.Contains(rep.Deleted, d.Name) })
	compareAudit(t, dir, cl, st, vc, rep, c)
	return sc
}

// reviewDoc is `review -o json`: the AdmissionReview and the decision's findings.
type reviewDoc struct {
	Response *admissionv1.AdmissionResponse `json:"response"`
	Findings []finding.Finding              `json:"findings"`
}

func review(t *testing.T, dir string, cl cluster, st *state, op admissionv1.Operation, o object, old runtime.Object) (bool, []key) {
	t.Helper()
	req := filepath.Join(dir, "request.json")
	require.NoError(t, os.WriteFile(req, wt.MustJSON(wt.Review(wt.Request(op, o.runtime(), old))), 0o600))
	args := []string{"review", "-f", req, "--nodes", cl.nodes, "--policy", env.policy, "-o", "json"}
	drivers, policy := st.files(t, dir)
	if drivers != "" {
		args = append(args, "--drivers", drivers)
	}
	if policy != "" {
		args = append(args, "--cluster-policy", policy)
	}
	r := dg(t, args...)
	require.Contains(t, []int{0, 1}, r.code, "review %s: %s", o.title(), r.stderr)
	var doc reviewDoc
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.NotNil(t, doc.Response)
	require.NotNil(t, doc.Findings, "review -o json has a top-level findings list")
	return doc.Response.Allowed, ofObject(doc.Findings, o.title())
}

// compareAudit audits the drivers and cluster policy check would store (st, after the
// release) and compares, for each object check admitted, the findings whose rules judge the
// object alone: the policy of testdata/policy (it reads the object only), the object syntax
// (the field error types) and the built-in UpgradePolicy and ClusterPolicyName. Those must be
// equal. The audit judges every stored object as if created now against the whole set,
// while check judged it against the objects applied before it (and as an UPDATE of a stored
// driver): the selector rules (IdenticalNodeSelector, ConflictingNodeSelector,
// PotentialConflict: a tie is reported on the later driver by check, on both by the audit)
// and the bundled library's policies (which read data.driverguard_cluster and the operation)
// may differ for a true reason; their differences are logged, not asserted. The drift the
// audit files under a driver's report (StaleOwnerLabel, ...) is the nodes', not compared.
func compareAudit(t *testing.T, dir string, cl cluster, st *state, vc valuesCase, rep checkDoc, c *counts) {
	t.Helper()
	name := cl.name + "/" + vc.name
	drivers, policy := st.files(t, dir)
	if drivers == "" {
		return // nothing stored: audit needs --drivers
	}
	args := []string{"audit", "--nodes", cl.nodes, "--drivers", drivers, "--policy", env.policy, "-o", "json"}
	if policy != "" {
		args = append(args, "--cluster-policy", policy)
	}
	r := dg(t, args...)
	require.Contains(t, []int{0, 1}, r.code, "audit %s: %s", name, r.stderr)
	var doc struct {
		Findings []finding.Finding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.NotNil(t, doc.Findings, "audit -o json has a top-level findings list")
	for i, o := range vc.objects {
		if !rep.Resources[i].Allowed {
			continue
		}
		want, got := ofObject(rep.Findings, o.title()), ofObject(doc.Findings, o.title())
		c.audited++
		wantSame, gotSame := keep(want, objectAlone), keep(got, objectAlone)
		c.auditComparedKeys += len(wantSame)
		if !assert.Equal(t, wantSame, gotSame, "%s %s: check and audit disagree on the rules that judge the object alone", name, o.title()) {
			t.Logf("check:\n%saudit:\n%s", lines(wantSame), lines(gotSame))
		}
		// The drift now is the nodes' (check: on each Node, level audit); the audit files it
		// in the report of the driver the nodes belong to: not the object's admission.
		// A finding both report must have the same shape (docs/output.md "A finding": the field where known,
		// the message without it), whatever rule it is of.
		for _, w := range want {
			for _, g := range got {
				if w != g && w.Rule == g.Rule && w.Level == g.Level && w.Object == g.Object && text(w) == text(g) {
					c.auditShape++
					t.Errorf("%s %s: check and audit report the same %s finding shaped differently (audit -o json loses the field into the message)\ncheck: %s\naudit: %s",
						name, o.title(), w.Rule, w, g)
				}
			}
		}
		notAlone := func(rule string) bool { return !objectAlone(rule) && !finding.Drift(rule) }
		if w, g := keep(want, notAlone), keep(got, notAlone); !slices.Equal(w, g) {
			c.auditDiffers++
			t.Logf("%s %s: the rules that read the cluster differ (expected: the audit sees every stored driver)\ncheck:\n%saudit:\n%s",
				name, o.title(), lines(w), lines(g))
		}
	}
}

// objectAlone: a rule whose findings on an object depend on the object alone.
func objectAlone(rule string) bool {
	if finding.PolicyOf(rule) == ownPolicy {
		return true
	}
	switch rule {
	case finding.RuleUpgradePolicy, finding.RuleClusterPolicyName:
		return true
	}
	return slices.ContainsFunc(finding.FieldErrorTypes, func(t field.ErrorType) bool { return string(t) == rule })
}

// testResults are findings as a test case's results, as docs/policy-authoring.md defines
// them: the objects' findings (each rule body its own rule) and the nodes that would lose
// their driver; render warnings, input warnings and the drift now are not results. Each is
// "<result> <object> <rule>: <message>", message the finding's one-line text.
func testResults(fs []finding.Finding) []string {
	out := []string{}
	for _, f := range fs {
		switch {
		case f.Rule == finding.RuleRenderWarning, f.Rule == finding.RuleInputWarning, f.Rule == finding.RuleOmittedFindings:
			continue
		case f.Object.Kind == finding.KindNode && f.Rule != finding.RuleDriverLoss, f.Object.Kind == "":
			continue
		}
		out = append(out, resultLine(f.Object.String(), f.Rule, resultOf(f.Level), f.Text()))
	}
	slices.Sort(out)
	return out
}

func resultOf(l finding.Level) string {
	switch l {
	case finding.Deny:
		return "fail"
	case finding.Warn:
		return "warn"
	}
	return "audit"
}

func resultLine(object, rule, result, message string) string {
	return result + " " + object + " " + rule + ": " + message
}

// compareTestRun runs a suite with a case per values file against the cluster (expecting
// check's verdict) and compares each case's results with check's findings.
func compareTestRun(t *testing.T, dir string, cl cluster, cases []suiteCase, c *counts) {
	t.Helper()
	type caseDoc struct {
		Name   string   `json:"name"`
		Values []string `json:"values"`
		Expect struct {
			Verdict string `json:"verdict"`
		} `json:"expect"`
	}
	inventory := map[string]string{"nodes": cl.nodes}
	if cl.drivers != "" {
		inventory["drivers"] = cl.drivers
	}
	suite := map[string]any{
		"apiVersion": "driverguard.rebellions.ai/v1alpha1", "kind": "TestSuite",
		"policies": []string{env.policy}, "inventory": inventory,
	}
	var tests []caseDoc
	for _, sc := range cases {
		cd := caseDoc{Name: sc.name, Values: []string{sc.file}}
		cd.Expect.Verdict = "denied"
		if sc.allowed {
			cd.Expect.Verdict = "allowed"
		}
		tests = append(tests, cd)
	}
	suite["tests"] = tests
	data, err := yaml.Marshal(suite)
	require.NoError(t, err)
	file := filepath.Join(dir, "corpus.dgtest.yaml")
	require.NoError(t, os.WriteFile(file, data, 0o600))

	r := dg(t, "test", file, "-o", "json")
	require.Contains(t, []int{0, 1}, r.code, "test: %s", r.stderr)
	var doc struct {
		Cases []struct {
			Name     string `json:"name"`
			Passed   bool   `json:"passed"`
			Error    string `json:"error"`
			Mismatch []struct {
				Expected string `json:"expected"`
				Got      string `json:"got"`
			} `json:"mismatches"`
			Results []struct {
				Object  string `json:"object"`
				Rule    string `json:"rule"`
				Result  string `json:"result"`
				Message string `json:"message"`
			} `json:"results"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Len(t, doc.Cases, len(cases), "test ran a case per values file")
	for i, sc := range cases {
		got := doc.Cases[i]
		name := cl.name + "/" + sc.name
		require.Equal(t, sc.name, got.Name)
		require.Empty(t, got.Error, "%s: the case could not be judged", name)
		assert.True(t, got.Passed, "%s: test's verdict is not check's (%v): %+v", name, sc.allowed, got.Mismatch)
		results := []string{}
		for _, res := range got.Results {
			results = append(results, resultLine(res.Object, res.Rule, res.Result, res.Message))
		}
		slices.Sort(results)
		assert.Equal(t, sc.results, results, "%s: check's findings and the test case's results disagree", name)
		c.tested += len(sc.objects)
	}
}

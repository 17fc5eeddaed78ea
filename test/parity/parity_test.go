package parity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/cmd/driverguard/app"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/test/controlplane"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// The release name every case renders with and Helm would install it as.
const releaseName = "dg"

var suite struct {
	plane     *controlplane.Plane
	policyDir string
	setupErr  error
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	suite.setupErr = setup()
	code := m.Run()
	if suite.plane != nil {
		if err := suite.plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	os.Exit(code)
}

func setup() error {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	suite.policyDir = filepath.Join(root, "test", "parity", "testdata", "policy")
	// The served webhook runs what `serve --policy-dir` runs: the bundled library and the
	// parity probes.
	engine, err := policy.New(context.Background(), policy.Options{Dirs: []string{suite.policyDir}, Metrics: prometheus.NewRegistry()})
	if err != nil {
		return err
	}
	suite.plane, err = controlplane.Start(controlplane.Options{Server: serve.Options{
		Options:      webhook.Options{Policy: engine},
		RebuildDelay: 5 * time.Millisecond,
	}})
	return err
}

// verdict is what parity compares: allowed or not, the rule and field of every denial, and
// the warnings (cut where the API server may cut them).
type verdict struct {
	Allowed  bool
	Denials  []string
	Warnings []string
}

func (v verdict) String() string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// warningPrefix is how much of a warning is compared: the API server cuts warnings to 256
// runes once a response's warnings exceed 4 KiB.
const warningPrefix = 200

func normalize(allowed bool, denials, warnings []string) verdict {
	v := verdict{Allowed: allowed, Denials: []string{}, Warnings: []string{}}
	v.Denials = append(v.Denials, denials...)
	sort.Strings(v.Denials)
	seen := map[string]bool{}
	for _, w := range warnings {
		if r := []rune(w); len(r) > warningPrefix {
			w = string(r[:warningPrefix])
		}
		if !seen[w] {
			seen[w] = true
			v.Warnings = append(v.Warnings, w)
		}
	}
	sort.Strings(v.Warnings)
	return v
}

func cause(typ, field string) string { return typ + " " + field }

// checkVerdict is one object of `check -o json`, as the webhook would report it: its findings
// from the report's findings list.
func checkVerdict(rep *release.Report, o release.ObjectReport) verdict {
	var denials, warnings []string
	object := finding.Object{Kind: o.Kind, Name: o.Name}
	for _, f := range rep.Findings {
		if f.Object != object || f.Rule == finding.RuleOmittedFindings || f.Rule == finding.RuleRenderWarning {
			continue
		}
		switch f.Level {
		case finding.Deny:
			typ, field := f.Rule, f.Field
			if pkg := f.Policy(); pkg != "" {
				typ, field = decision.PolicyDeniedCause, "policy:"+pkg
			}
			denials = append(denials, cause(typ, field))
		case finding.Warn:
			warnings = append(warnings, f.Text())
		}
	}
	return normalize(o.Allowed, denials, warnings)
}

func responseVerdict(r *admissionv1.AdmissionResponse) verdict {
	var denials []string
	if !r.Allowed && r.Result != nil && r.Result.Details != nil {
		for _, c := range r.Result.Details.Causes {
			denials = append(denials, cause(string(c.Type), c.Field))
		}
	}
	return normalize(r.Allowed, denials, r.Warnings)
}

func servedVerdict(err error, warnings []string) (verdict, error) {
	if err == nil {
		return normalize(true, nil, warnings), nil
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Code == 503 || st.Status().Details == nil {
		return verdict{}, fmt.Errorf("the API server gave no verdict: %w", err)
	}
	var denials []string
	for _, c := range st.Status().Details.Causes {
		denials = append(denials, cause(string(c.Type), c.Field))
	}
	return normalize(false, denials, warnings), nil
}

// cli runs a driverguard command line in-process.
func cli(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = app.Run(context.Background(), app.Streams{In: bytes.NewReader(nil), Out: &out, Err: &errOut}, args)
	return code, out.String(), errOut.String()
}

type inventory struct {
	name  string
	file  string // "" for none
	nodes []corev1.Node
}

type valuesCase struct {
	name string
	file string
	// previous, when set, is applied first: the case is an upgrade from it.
	previous string
}

// stats count what the parity test compared.
type stats struct {
	runs, renderRejected, objects, denied, reviewed, upgrades int
}

func TestParity(t *testing.T) {
	controlplane.RequireSetup(t, suite.setupErr)
	dir := t.TempDir()
	inventories := []inventory{
		readInventory(t, "examples", filepath.Join(suite.plane.Root, "examples", "nodes.yaml")),
		writeInventory(t, dir, "generated", generatedNodes(rand.New(rand.NewPCG(8, 8)), 32)),
		{name: "no-nodes"},
	}
	cases := corpusCases(t, filepath.Join(suite.plane.Root, "test", "testdata", "values"))
	cases = append(cases, generatedCases(t, dir, 30, 12)...)

	warn := &controlplane.Warnings{}
	c, err := suite.plane.Client(warn)
	require.NoError(t, err)
	var total stats
	for _, inv := range inventories {
		setNodes(t, c, inv.nodes)
		for _, vc := range cases {
			name := inv.name + "/" + vc.name
			s := runCase(t, c, warn, dir, inv, vc, name)
			total.runs++
			total.renderRejected += s.renderRejected
			total.objects += s.objects
			total.denied += s.denied
			total.reviewed += s.reviewed
			total.upgrades += s.upgrades
		}
	}
	t.Logf("parity: %d values files x %d inventories = %d runs (%d upgrades); %d rejected at render time; %d objects applied through the API server (%d denied), each compared with check and review",
		len(cases), len(inventories), total.runs, total.upgrades, total.renderRejected, total.objects, total.denied)
	require.Positive(t, total.denied, "the cases must exercise denials")
}

func runCase(t *testing.T, c client.Client, warn *controlplane.Warnings, dir string, inv inventory, vc valuesCase, name string) stats {
	t.Helper()
	var s stats
	ctx := context.Background()
	resetObjects(t, c)
	if vc.previous != "" {
		s.upgrades++
		for _, obj := range rendered(t, vc.previous) {
			_ = write(ctx, c, obj) // the previous release, as the webhook admitted it
			warn.Take()
		}
	}
	curDrivers, curPolicy := storedFiles(t, c, dir)
	var before v1alpha1.RBLNDriverList // the drivers a node's driver now is routed by
	require.NoError(t, c.List(ctx, &before))
	args := []string{"check", "-f", vc.file, "--release-name", releaseName, "--policy", suite.policyDir, "-o", "json"}
	if inv.file != "" {
		args = append(args, "--nodes", inv.file)
	}
	if curDrivers != "" {
		args = append(args, "--drivers", curDrivers)
	}
	if curPolicy != "" {
		args = append(args, "--cluster-policy", curPolicy)
	}
	code, stdout, stderr := cli(args...)
	if code == app.ExitInvalid && strings.Contains(stderr, "invalid values, nothing rendered") {
		// Invalid values: nothing rendered, nothing to apply (helm template refuses them too,
		// as test/differential proves); -o json lists them as InvalidValues findings.
		var doc struct {
			Findings []finding.Finding `json:"findings"`
			Passed   bool              `json:"passed"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc), "%s: %s", name, stdout)
		require.NotEmpty(t, doc.Findings, "%s: invalid values are findings", name)
		for _, f := range doc.Findings {
			require.Equal(t, finding.RuleInvalidValues, f.Rule, name)
		}
		require.False(t, doc.Passed, name)
		s.renderRejected++
		return s
	}
	require.Contains(t, []int{app.ExitOK, app.ExitInvalid}, code, "%s: check: %s", name, stderr)
	var rep release.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), "%s: %s", name, stdout)

	objs := rendered(t, vc.file)
	require.Len(t, rep.Resources, len(objs), "%s: check judged every rendered object", name)
	for i, obj := range objs {
		want := rep.Resources[i]
		require.Equal(t, obj.GetName(), want.Name, "%s: Helm's order", name)
		objName := fmt.Sprintf("%s: %s %s/%s", name, want.Operation, want.Kind, want.Name)

		// review of the same request, with the cluster as it is now in files.
		reviewed := review(t, c, dir, inv, obj)
		s.reviewed++

		// The served webhook, through the API server.
		err := write(ctx, c, obj)
		served, verr := servedVerdict(err, warn.Take())
		require.NoError(t, verr, objName)
		s.objects++
		if !served.Allowed {
			s.denied++
		}
		fromCheck := checkVerdict(&rep, want)
		if !equalVerdicts(served, fromCheck) {
			t.Errorf("%s: check and the served webhook disagree\ncheck:  %s\nserved: %s", objName, fromCheck, served)
		}
		if !equalVerdicts(served, reviewed) {
			t.Errorf("%s: review and the served webhook disagree\nreview: %s\nserved: %s", objName, reviewed, served)
		}
	}
	// Helm deletes what the release no longer renders, after the rest.
	for _, d := range rep.Deleted {
		obj := &v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: d}}
		require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, obj)), name)
	}
	waitForStored(t, c)
	// The nodes check said would lose their driver are those the cluster's drivers leave
	// without one: routed by the drivers before (by their owner labels when there were none
	// to give check), by none after.
	assert.Equal(t, lossesOf(t, c, inv.nodes, before.Items, curDrivers != ""), lossNames(rep.DriverLoss), "%s: driver loss", name)
	return s
}

// equalVerdicts compares verdicts; when the API server cut warnings (over 4 KiB in all), the
// served ones need only be a prefix-wise subset.
func equalVerdicts(served, other verdict) bool {
	if served.Allowed != other.Allowed || !slices.Equal(served.Denials, other.Denials) {
		return false
	}
	if slices.Equal(served.Warnings, other.Warnings) {
		return true
	}
	total := 0
	for _, w := range other.Warnings {
		total += len([]rune(w))
	}
	if total <= 4096-warningPrefix {
		return false
	}
	for _, w := range served.Warnings {
		if !slices.ContainsFunc(other.Warnings, func(o string) bool { return strings.HasPrefix(o, w) || strings.HasPrefix(w, o) }) {
			return false
		}
	}
	return true
}

// rendered returns the objects `driverguard render` renders, in its order: the cluster
// policy, then the drivers as the chart renders them — Helm's order for these kinds.
func rendered(t *testing.T, values string) []client.Object {
	t.Helper()
	code, stdout, stderr := cli("render", "-f", values, "--release-name", releaseName, "-o", "json")
	require.Equal(t, app.ExitOK, code, stderr)
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &list))
	var out []client.Object
	for _, raw := range list.Items {
		var meta metav1.TypeMeta
		require.NoError(t, json.Unmarshal(raw, &meta))
		var obj client.Object = &v1alpha1.RBLNDriver{}
		if meta.Kind == "RBLNClusterPolicy" {
			obj = &v1alpha1.RBLNClusterPolicy{}
		}
		require.NoError(t, json.Unmarshal(raw, obj))
		out = append(out, obj)
	}
	return out
}

// write creates obj, or updates the stored object of its name to it, and waits until the
// webhook's view has the result.
func write(ctx context.Context, c client.Client, obj client.Object) error {
	stored := obj.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored)
	next := obj.DeepCopyObject().(client.Object)
	switch {
	case apierrors.IsNotFound(err):
		err = c.Create(ctx, next)
	case err == nil:
		next.SetResourceVersion(stored.GetResourceVersion())
		err = c.Update(ctx, next)
	}
	if err != nil {
		return err
	}
	rv := next.GetResourceVersion()
	return suite.plane.State.WaitFor(ctx, func(s *cluster.Snapshot) bool {
		if _, ok := obj.(*v1alpha1.RBLNClusterPolicy); ok {
			return s.ClusterPolicy() != nil && s.ClusterPolicy().ResourceVersion == rv
		}
		d, ok := s.Driver(obj.GetName())
		return ok && d.ResourceVersion == rv
	})
}

// review answers the request the API server would send for writing obj now, offline.
func review(t *testing.T, c client.Client, dir string, inv inventory, obj client.Object) verdict {
	t.Helper()
	ctx := context.Background()
	stored := obj.DeepCopyObject().(client.Object)
	var req = wt.Request(admissionv1.Create, obj, nil)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); err == nil {
		req = wt.Request(admissionv1.Update, obj, stored)
	}
	reqFile := filepath.Join(dir, "request.json")
	require.NoError(t, os.WriteFile(reqFile, wt.MustJSON(wt.Review(req)), 0o600))
	args := []string{"review", "-f", reqFile, "--policy", suite.policyDir}
	curDrivers, curPolicy := storedFiles(t, c, dir)
	if curDrivers != "" {
		args = append(args, "--drivers", curDrivers)
	}
	if curPolicy != "" {
		args = append(args, "--cluster-policy", curPolicy)
	}
	if inv.file != "" {
		args = append(args, "--nodes", inv.file)
	}
	code, stdout, stderr := cli(args...)
	require.Contains(t, []int{app.ExitOK, app.ExitInvalid}, code, stderr)
	var answered admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal([]byte(stdout), &answered), stdout)
	return responseVerdict(answered.Response)
}

// storedFiles writes the stored drivers and cluster policy to files ("" when there are none).
func storedFiles(t *testing.T, c client.Client, dir string) (drivers, clusterPolicy string) {
	t.Helper()
	ctx := context.Background()
	var ds v1alpha1.RBLNDriverList
	require.NoError(t, c.List(ctx, &ds))
	var cps v1alpha1.RBLNClusterPolicyList
	require.NoError(t, c.List(ctx, &cps))
	stream := func(name string, objs []any) string {
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
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
		return path
	}
	var dobjs, cobjs []any
	for i := range ds.Items {
		dobjs = append(dobjs, ds.Items[i].WithTypeMeta())
	}
	for i := range cps.Items {
		cobjs = append(cobjs, cps.Items[i].WithTypeMeta())
	}
	return stream("current-drivers.yaml", dobjs), stream("current-policy.yaml", cobjs)
}

// lossesOf routes the stored drivers onto the nodes: the candidates with an owner label that
// get no driver.
func lossesOf(t *testing.T, c client.Client, nodes []corev1.Node, before []v1alpha1.RBLNDriver, known bool) []string {
	t.Helper()
	var ds v1alpha1.RBLNDriverList
	require.NoError(t, c.List(context.Background(), &ds))
	routed := routing.NodesFromCore(nodes)
	now := map[string]string{}
	for _, n := range routing.Route(before, routed, routing.Options{}).Nodes {
		now[n.Name] = n.Owner
		if !known {
			now[n.Name] = n.CurrentOwner
		}
	}
	out := []string{}
	for _, n := range routing.Route(ds.Items, routed, routing.Options{}).Nodes {
		if n.Reason != routing.ReasonOutOfScope && now[n.Name] != "" && n.Owner == "" {
			out = append(out, n.Name+" from "+now[n.Name])
		}
	}
	return out
}

func lossNames(ls []release.NodeLoss) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, l.Node+" from "+l.From)
	}
	return out
}

// resetObjects deletes every RBLNDriver and RBLNClusterPolicy and waits until the webhook's
// view has none.
func resetObjects(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.DeleteAllOf(ctx, &v1alpha1.RBLNDriver{}))
	require.NoError(t, c.DeleteAllOf(ctx, &v1alpha1.RBLNClusterPolicy{}))
	require.NoError(t, suite.plane.State.WaitFor(ctx, func(s *cluster.Snapshot) bool {
		return len(s.Drivers()) == 0 && s.ClusterPolicy() == nil
	}))
}

// waitForStored waits until the webhook's view holds exactly the stored drivers.
func waitForStored(t *testing.T, c client.Client) {
	t.Helper()
	var ds v1alpha1.RBLNDriverList
	require.NoError(t, c.List(context.Background(), &ds))
	require.NoError(t, suite.plane.State.WaitFor(context.Background(), func(s *cluster.Snapshot) bool {
		return len(s.Drivers()) == len(ds.Items)
	}))
}

// setNodes makes the cluster's nodes exactly nodes.
func setNodes(t *testing.T, c client.Client, nodes []corev1.Node) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.DeleteAllOf(ctx, &corev1.Node{}))
	for i := range nodes {
		n := nodes[i].DeepCopy()
		n.ResourceVersion = ""
		require.NoError(t, c.Create(ctx, n))
	}
	require.NoError(t, suite.plane.State.WaitFor(ctx, func(s *cluster.Snapshot) bool { return len(s.Nodes()) == len(nodes) }))
}

func readInventory(t *testing.T, name, file string) inventory {
	t.Helper()
	docs, err := decode.File(file, nil)
	require.NoError(t, err)
	nodes, err := decode.Nodes(docs)
	require.NoError(t, err)
	return inventory{name: name, file: file, nodes: nodes}
}

func writeInventory(t *testing.T, dir, name string, nodes []corev1.Node) inventory {
	t.Helper()
	var b bytes.Buffer
	for i := range nodes {
		nodes[i].APIVersion, nodes[i].Kind = "v1", "Node"
		data, err := yaml.Marshal(&nodes[i])
		require.NoError(t, err)
		b.WriteString("---\n")
		b.Write(data)
	}
	file := filepath.Join(dir, name+"-nodes.yaml")
	require.NoError(t, os.WriteFile(file, b.Bytes(), 0o600))
	return inventory{name: name, file: file, nodes: nodes}
}

func corpusCases(t *testing.T, dir string) []valuesCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []valuesCase
	for _, f := range files {
		out = append(out, valuesCase{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), file: f})
	}
	return out
}

package audit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/test/controlplane"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// passes records the audit's passes.
type passes struct {
	mu  sync.Mutex
	all []audit.PassStats
}

func (p *passes) add(s audit.PassStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = append(p.all, s)
}

func (p *passes) since(n int) []audit.PassStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]audit.PassStats(nil), p.all[min(n, len(p.all)):]...)
}

func (p *passes) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.all)
}

const trialPolicy = `# METADATA
# custom:
#   enforcement: audit
package driverguard.trial

deny contains "drivers need the team annotation" if {
	input.object.kind == "RBLNDriver"
	not input.object.metadata.annotations["team.example/owner"]
}
`

// suite is the package's one control plane: an API server whose admission webhook (no audit)
// judges with the bundled library and the policies of policyDir. Each test runs its own audit
// against it (auditor, or serve processes) on a cluster reset beforehand.
var suite struct {
	plane     *controlplane.Plane
	engine    *policy.Engine
	policyDir string
	setupErr  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	suite.setupErr = setup()
	code := m.Run()
	if suite.plane != nil {
		if err := suite.plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	_ = os.RemoveAll(suite.policyDir)
	os.Exit(code)
}

func setup() error {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	var err error
	if suite.policyDir, err = os.MkdirTemp("", "driverguard-audit-policies-"); err != nil {
		return err
	}
	if suite.engine, err = policy.New(context.Background(), policy.Options{Dirs: []string{suite.policyDir}, Metrics: prometheus.NewRegistry()}); err != nil {
		return err
	}
	suite.plane, err = controlplane.Start(controlplane.Options{Server: serve.Options{Options: webhook.Options{Policy: suite.engine}}})
	return err
}

// start resets the cluster and runs an audit (serve's, in-process, every replica auditing)
// against the suite's control plane, with passes at least 100 ms apart and a full pass every
// 300 ms; each tune changes its options. It stops with the test.
func start(t *testing.T, tune ...func(*serve.AuditOptions)) (*controlplane.Plane, *passes) {
	t.Helper()
	prepare(t)
	p := &passes{}
	a := &serve.AuditOptions{Interval: 300 * time.Millisecond, MinGap: 100 * time.Millisecond, OnPass: p.add}
	for _, f := range tune {
		f(a)
	}
	health, err := controlplane.FreeAddr()
	require.NoError(t, err)
	port := controlplane.FreePort(t, nil)
	wio := &suite.plane.Env.WebhookInstallOptions
	ready := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, suite.plane.Config, serve.Options{
			Options: webhook.Options{Policy: suite.engine}, Audit: a,
			Host: wio.LocalServingHost, Port: port, CertDir: wio.LocalServingCertDir, HealthAddr: health, MetricsAddr: "0",
			OnReady: func() { once.Do(func() { close(ready) }) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(time.Minute):
			// A stop that hangs is a failure with every goroutine's stack, not a test binary
			// killed by -timeout with the stacks of whatever ran last.
			var stacks strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Errorf("the audit did not stop within a minute of its context ending; goroutines:\n%s", stacks.String())
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the audit's server stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the audit's server was not ready within 60s")
	}
	return suite.plane, p
}

// prepare skips the test with -short when the control plane's binaries are not built (fails
// it without), and resets the cluster.
func prepare(t *testing.T) {
	t.Helper()
	if errors.Is(suite.setupErr, controlplane.ErrNoAssets) && testing.Short() {
		t.Skip(suite.setupErr)
	}
	require.NoError(t, suite.setupErr)
	reset(t)
}

// reset deletes what earlier tests left: drivers, cluster policies, nodes, reports, Events,
// and the policies of the suite's directory.
func reset(t *testing.T) {
	t.Helper()
	c := newClient(t, suite.plane, nil)
	entries, err := os.ReadDir(suite.policyDir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.Remove(filepath.Join(suite.policyDir, e.Name())))
	}
	require.NoError(t, suite.engine.Reload(t.Context()))
	ctx := t.Context()
	for _, obj := range []client.Object{&v1alpha1.RBLNDriver{}, &v1alpha1.RBLNClusterPolicy{}, &corev1.Node{}, &openreports.ClusterReport{}} {
		require.NoError(t, client.IgnoreNotFound(c.DeleteAllOf(ctx, obj)))
	}
	require.NoError(t, client.IgnoreNotFound(c.DeleteAllOf(ctx, &eventsv1.Event{}, client.InNamespace(metav1.NamespaceDefault))))
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, suite.plane.State.WaitFor(wait, func(s *cluster.Snapshot) bool { return len(s.Drivers()) == 0 && len(s.Nodes()) == 0 }))
}

func newClient(t *testing.T, plane *controlplane.Plane, w *controlplane.Warnings) client.Client {
	t.Helper()
	var h rest.WarningHandler
	if w != nil {
		h = w
	}
	c, err := plane.Client(h)
	require.NoError(t, err)
	return c
}

// report waits until the ClusterReport name satisfies cond.
func report(t *testing.T, c client.Client, name string, cond func(*openreports.ClusterReport) bool) *openreports.ClusterReport {
	t.Helper()
	var last *openreports.ClusterReport
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cr := &openreports.ClusterReport{}
		err := c.Get(t.Context(), client.ObjectKey{Name: name}, cr)
		if err == nil {
			last = cr
			if cond(cr) {
				return cr
			}
		} else if !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("ClusterReport %s did not reach the expected state within 20s; last: %+v", name, last)
	return nil
}

func hasRule(rule string) func(*openreports.ClusterReport) bool {
	return func(cr *openreports.ClusterReport) bool {
		for _, r := range cr.Results {
			if r.Rule == rule && r.Result == "fail" {
				return true
			}
		}
		return false
	}
}

func not(f func(*openreports.ClusterReport) bool) func(*openreports.ClusterReport) bool {
	return func(cr *openreports.ClusterReport) bool { return !f(cr) }
}

// event waits for an Event about the RBLNDriver name with reason.
func event(t *testing.T, c client.Client, name, reason string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		list := &eventsv1.EventList{}
		require.NoError(t, c.List(t.Context(), list))
		for _, e := range list.Items {
			if e.Regarding.Kind == "RBLNDriver" && e.Regarding.Name == name && e.Reason == reason {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "no %s Event about RBLNDriver %s within 20s", reason, name)
		time.Sleep(100 * time.Millisecond)
	}
}

// totals waits until the RBLNClusterPolicy's status.audit satisfies cond.
func totals(t *testing.T, c client.Client, cond func(*v1alpha1.AuditStatus) bool) *v1alpha1.AuditStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last *v1alpha1.AuditStatus
	for time.Now().Before(deadline) {
		cp := &v1alpha1.RBLNClusterPolicy{}
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: v1alpha1.ClusterPolicyName}, cp))
		if last = cp.Status.Audit; last != nil && cond(last) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the RBLNClusterPolicy's status.audit did not reach the expected state within 20s; last: %+v", last)
	return nil
}

// settled waits until the audit is quiet — no pass for a second, the last one recorded having
// judged the totals that status.audit holds — and returns that status and the passes counted.
func settled(t *testing.T, c client.Client, p *passes) (*v1alpha1.AuditStatus, int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := p.count()
		time.Sleep(time.Second)
		cp := &v1alpha1.RBLNClusterPolicy{}
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: v1alpha1.ClusterPolicyName}, cp))
		if all := p.since(n - 1); n > 0 && len(all) == 1 && all[0].Outcome != nil && cp.Status.Audit != nil {
			want := audit.Totals(all[0].Outcome, time.Time{})
			got := *cp.Status.Audit
			got.LastRunTime = want.LastRunTime
			if got == *want {
				return cp.Status.Audit, n
			}
		}
		require.True(t, time.Now().Before(deadline), "the audit did not settle within 20s")
	}
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		require.NoError(t, c.Create(t.Context(), o))
	}
}

func relabel(t *testing.T, c client.Client, name string, change func(map[string]string)) {
	t.Helper()
	n := &corev1.Node{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, n))
	change(n.Labels)
	require.NoError(t, c.Update(t.Context(), n))
}

func withOwner(l map[string]string, owner string) map[string]string {
	l[operator.LabelOwner] = owner
	return l
}

// TestAuditFollowsTheCluster: what changes behind the webhook shows up in the reports and
// clears; a report deleted by hand comes back; a steady cluster is not rewritten.
func TestAuditFollowsTheCluster(t *testing.T) {
	plane, p := start(t)
	c := newClient(t, plane, nil)
	create(t, c,
		wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver-atom")),
		wt.Node("n2", withOwner(wt.CandidateLabels(), "rbln-driver-atom")),
		wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom")),
		wt.Driver("rbln-driver-canary", wt.Sel("env", "canary")),
		wt.ClusterPolicy(false),
	)
	report(t, c, "rbln-driver-atom", func(cr *openreports.ClusterReport) bool { return cr.Summary.Fail == 0 && cr.Summary.Pass > 0 })
	report(t, c, audit.ClusterReportName, func(cr *openreports.ClusterReport) bool { return cr.Summary.Pass > 0 })

	t.Run("a relabelled node ties two drivers, then clears", func(t *testing.T) {
		relabel(t, c, "n1", func(l map[string]string) { l["env"] = "canary" })
		for _, d := range []string{"rbln-driver-atom", "rbln-driver-canary"} {
			cr := report(t, c, d, hasRule("ConflictingNodeSelector"))
			assert.Equal(t, "RBLNDriver", cr.Scope.Kind)
		}
		event(t, c, "rbln-driver-atom", "AuditFailed")
		totals(t, c, func(a *v1alpha1.AuditStatus) bool { return a.Fail > 0 && a.Enforced > 0 && a.Reports == 3 })
		relabel(t, c, "n1", func(l map[string]string) { delete(l, "env") })
		for _, d := range []string{"rbln-driver-atom", "rbln-driver-canary"} {
			report(t, c, d, not(hasRule("ConflictingNodeSelector")))
		}
		event(t, c, "rbln-driver-atom", "AuditPassed")
		totals(t, c, func(a *v1alpha1.AuditStatus) bool { return a.Fail == 0 && a.Enforced == 0 && a.Pass > 0 })
	})
	t.Run("a stale owner label", func(t *testing.T) {
		relabel(t, c, "n2", func(l map[string]string) { l[operator.LabelOwner] = "rbln-driver-gone" })
		report(t, c, "rbln-driver-atom", hasRule("StaleOwnerLabel"))
		relabel(t, c, "n2", func(l map[string]string) { l[operator.LabelOwner] = "rbln-driver-atom" })
		report(t, c, "rbln-driver-atom", not(hasRule("StaleOwnerLabel")))
	})
	t.Run("a node that loses its family label", func(t *testing.T) {
		// n2 moves to the canary driver (which does not select on the family) without a family.
		relabel(t, c, "n2", func(l map[string]string) {
			l["env"], l[operator.LabelOwner] = "canary", "rbln-driver-canary"
			delete(l, operator.LabelFamily)
		})
		report(t, c, "rbln-driver-canary", hasRule("DriverFamilyLabelMissing"))
		relabel(t, c, "n2", func(l map[string]string) {
			l[operator.LabelFamily], l[operator.LabelOwner] = "atom", "rbln-driver-atom"
			delete(l, "env")
		})
		report(t, c, "rbln-driver-canary", not(hasRule("DriverFamilyLabelMissing")))
	})
	t.Run("a candidate node no driver selects", func(t *testing.T) {
		relabel(t, c, "n2", func(l map[string]string) { delete(l, operator.LabelFamily) })
		report(t, c, audit.ClusterReportName, hasRule("Unowned"))
		relabel(t, c, "n2", func(l map[string]string) { l[operator.LabelFamily] = "atom" })
		report(t, c, audit.ClusterReportName, not(hasRule("Unowned")))
	})
	t.Run("a report deleted by hand comes back", func(t *testing.T) {
		require.NoError(t, c.Delete(t.Context(), &openreports.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: "rbln-driver-canary"}}))
		report(t, c, "rbln-driver-canary", func(cr *openreports.ClusterReport) bool { return cr.Summary.Pass > 0 })
	})
	t.Run("a deleted driver's report goes", func(t *testing.T) {
		require.NoError(t, c.Delete(t.Context(), wt.Driver("rbln-driver-canary", nil)))
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := c.Get(t.Context(), client.ObjectKey{Name: "rbln-driver-canary"}, &openreports.ClusterReport{})
			if apierrors.IsNotFound(err) {
				break
			}
			require.True(t, time.Now().Before(deadline), "the report of a deleted driver is still there: %v", err)
			time.Sleep(50 * time.Millisecond)
		}
	})
	t.Run("a steady cluster is not rewritten", func(t *testing.T) {
		// Let the last change settle, then count ten full passes.
		time.Sleep(time.Second)
		from := p.count()
		deadline := time.Now().Add(30 * time.Second)
		for p.count() < from+10 {
			require.True(t, time.Now().Before(deadline), "fewer than ten passes in 30s")
			time.Sleep(50 * time.Millisecond)
		}
		writes, reused := 0, 0
		for _, s := range p.since(from) {
			require.NoError(t, s.Err)
			writes += s.Written.Applied + s.Written.Deleted
			if s.Reused {
				reused++
			}
		}
		assert.Zero(t, writes, "report writes across ten passes of a steady cluster")
		assert.GreaterOrEqual(t, reused, 9, "passes over an unchanged view that judged anew")
	})
}

// TestTrialPolicy: a policy in audit enforcement reports fail on the stored drivers while a
// new driver that breaks it is admitted without a warning; switched to deny (its METADATA
// edited, the policies reloaded), the stored driver is reported fail of an enforced rule and a
// new one that breaks it is denied.
func TestTrialPolicy(t *testing.T) {
	plane, _ := start(t)
	engine := suite.engine
	file := filepath.Join(suite.policyDir, "trial.rego")
	require.NoError(t, os.WriteFile(file, []byte(trialPolicy), 0o600))
	require.NoError(t, engine.Reload(t.Context()))
	warnings := &controlplane.Warnings{}
	c := newClient(t, plane, warnings)
	create(t, c, wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver")), wt.Driver("rbln-driver", nil))
	assert.Empty(t, warnings.Take(), "a policy on trial neither denies nor warns at admission")

	trial := func(enforcement string) func(*openreports.ClusterReport) bool {
		return func(cr *openreports.ClusterReport) bool {
			for _, r := range cr.Results {
				if r.Policy == "driverguard.trial" && r.Result == "fail" && r.Properties["enforcement"] == enforcement &&
					strings.Contains(r.Description, "team annotation") {
					return true
				}
			}
			return false
		}
	}
	cr := report(t, c, "rbln-driver", trial("audit"))
	for _, r := range cr.Results {
		if r.Policy == "driverguard.trial" {
			assert.Equal(t, openreports.ResultSeverity("low"), r.Severity)
		}
	}

	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(trialPolicy, "enforcement: audit", "enforcement: deny", 1)), 0o600))
	require.NoError(t, engine.Reload(t.Context()))
	cr = report(t, c, "rbln-driver", trial("deny"))
	for _, r := range cr.Results {
		if r.Policy == "driverguard.trial" {
			assert.Equal(t, openreports.ResultSeverity("high"), r.Severity)
		}
	}
	err := c.Create(t.Context(), wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "policy driverguard.trial: drivers need the team annotation")
}

// TestStatusTotals: status.audit follows the totals and is written only when they change (or
// at the full pass of every interval, here an hour away).
func TestStatusTotals(t *testing.T) {
	plane, p := start(t, func(a *serve.AuditOptions) { a.Interval = time.Hour })
	c := newClient(t, plane, nil)
	create(t, c,
		wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver-atom")),
		wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom")),
		wt.Driver("rbln-driver-canary", wt.Sel("env", "canary")),
		wt.ClusterPolicy(false),
	)
	totals(t, c, func(a *v1alpha1.AuditStatus) bool { return a.Reports == 3 && a.Pass > 0 && a.Fail == 0 })
	// The status seen may be that of a pass whose view had not yet caught up with every object
	// created, and a pass is recorded only after it wrote: wait for the audit to settle.
	first, from := settled(t, c, p)
	assert.False(t, first.LastRunTime.IsZero())
	assert.Zero(t, first.Fail)

	// A change that changes no total: a pass, no status write. The label is one a selector
	// reads (rbln-driver-canary's env), with a value none selects: the cluster view keeps only
	// the labels a decision reads, and a change to another is no change to it.
	relabel(t, c, "n1", func(l map[string]string) { l["env"] = "prod" })
	deadline := time.Now().Add(20 * time.Second)
	for p.count() == from {
		require.True(t, time.Now().Before(deadline), "no pass after a node change")
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range p.since(from) {
		require.NoError(t, s.Err)
		assert.False(t, s.Written.Status, "status.audit written though no total changed")
	}

	// A node relabelled into a tie: the totals change and are written.
	relabel(t, c, "n1", func(l map[string]string) { l["env"] = "canary" })
	tied := totals(t, c, func(a *v1alpha1.AuditStatus) bool { return a.Reports == 3 && a.Fail > 0 && a.Enforced > 0 })
	assert.False(t, tied.LastRunTime.Before(&first.LastRunTime))
}

// zonePolicy denies every RBLNDriver while a node is in the quarantine zone: it reads a node
// label no selector and no part of the operator reads, so it declares it (METADATA
// custom.nodeLabels) for the cluster view to keep it.
const zonePolicy = `# METADATA
# custom:
#   nodeLabels: [topology.kubernetes.io/zone]
package driverguard.zones

deny contains msg if {
	input.object.kind == "RBLNDriver"
	some name, node in data.driverguard_cluster.nodes
	node.labels["topology.kubernetes.io/zone"] == "quarantine"
	msg := sprintf("node %s is in the quarantine zone", [name])
}
`

// TestPolicyDeclaredNodeLabel (#45): serve's cluster view keeps of a node only the labels a
// decision reads; a policy that declares the node label it reads still sees it, on nodes
// created before the policy was loaded (read again when it is) and after, at admission and
// in the audit's reports. The same policy without the declaration sees no such label.
func TestPolicyDeclaredNodeLabel(t *testing.T) {
	plane, _ := start(t)
	c := newClient(t, plane, nil)
	zone := func(l map[string]string, z string) map[string]string {
		l["topology.kubernetes.io/zone"] = z
		return l
	}
	create(t, c, wt.Node("n1", zone(wt.CandidateLabels(), "quarantine")), wt.Driver("rbln-driver", nil))

	file := filepath.Join(suite.policyDir, "zones.rego")
	undeclared := strings.Replace(zonePolicy, "#   nodeLabels: [topology.kubernetes.io/zone]\n", "#   enforcement: deny\n", 1)
	require.NoError(t, os.WriteFile(file, []byte(undeclared), 0o600))
	require.NoError(t, suite.engine.Reload(t.Context()))
	assert.NoError(t, c.Create(t.Context(), wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))),
		"undeclared, the zone label is not in the cluster view")

	require.NoError(t, os.WriteFile(file, []byte(zonePolicy), 0o600))
	require.NoError(t, suite.engine.Reload(t.Context()))
	// The first admission after the reload waits for the nodes carrying the declared label.
	err := c.Create(t.Context(), wt.Driver("rbln-driver-rebel", wt.Sel(operator.LabelFamily, "rebel")), client.DryRunAll)
	require.Error(t, err, "declared, the zone label of a node created before the policy is seen")
	assert.Contains(t, err.Error(), "node n1 is in the quarantine zone")
	report(t, c, "rbln-driver", func(cr *openreports.ClusterReport) bool {
		for _, r := range cr.Results {
			if r.Policy == "driverguard.zones" && r.Result == "fail" && strings.Contains(r.Description, "node n1 is in the quarantine zone") {
				return true
			}
		}
		return false
	})

	// A node labelled after the policy was loaded: seen through the watch.
	relabel(t, c, "n1", func(l map[string]string) { l["topology.kubernetes.io/zone"] = "a" })
	create(t, c, wt.Node("n2", zone(wt.CandidateLabels(), "quarantine")))
	require.Eventually(t, func() bool {
		err := c.Create(t.Context(), wt.Driver("rbln-driver-rebel", wt.Sel(operator.LabelFamily, "rebel")), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "node n2 is in the quarantine zone") && !strings.Contains(err.Error(), "node n1")
	}, 20*time.Second, 100*time.Millisecond)
}

// TestNewSelectorKeyAtAdmission (#45): a driver whose selector has a key no stored driver
// selects (the cluster view did not keep it) is decided with the nodes that carry it: the
// webhook has the view read them first, so a tie on such a node is refused.
func TestNewSelectorKeyAtAdmission(t *testing.T) {
	plane, _ := start(t)
	c := newClient(t, plane, nil)
	create(t, c, wt.Node("n1", wt.CandidateLabels("env", "canary")), wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, wt.Family)))
	// Until the webhook's view holds n1 and rbln-driver-atom, the canary ties with nothing.
	var err error
	require.Eventually(t, func() bool {
		err = c.Create(t.Context(), wt.Driver("rbln-driver-canary", wt.Sel("env", "canary")), client.DryRunAll)
		return err != nil
	}, 20*time.Second, 100*time.Millisecond, "rbln-driver-canary ties with rbln-driver-atom on n1")
	assert.Contains(t, err.Error(), "n1")
	require.NoError(t, c.Create(t.Context(), wt.Driver("rbln-driver-canary", wt.Sel(operator.LabelFamily, wt.Family, "env", "canary"))),
		"more specific: it owns n1")
}

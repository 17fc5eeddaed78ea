package audit_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/routing"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// staleCluster is nodes candidate nodes the default driver owns, spread over pools kernels
// (a pool each), every one labelled as owned by a driver that is gone; every image the pools
// and the RSMD DaemonSet pull is missing from its registry.
func staleCluster(t *testing.T, nodes, pools int) (*audit.Auditor, *audit.Outcome) {
	t.Helper()
	var ns []*corev1.Node
	for i := range nodes {
		l := withOwner(wt.CandidateLabels(), "rbln-driver-old")
		l[operator.LabelKernel] = fmt.Sprintf("6.8.0-%d-generic", i%pools)
		ns = append(ns, wt.Node(fmt.Sprintf("node-%05d", i), l))
	}
	snap := snapshot(t, nil, []*v1alpha1.RBLNDriver{wt.Driver(v1alpha1.DefaultDriverName, nil)}, ns, nil)
	images := map[string]registry.ImageResult{}
	for _, im := range audit.Images(snap) {
		images[im] = registry.ImageResult{Image: im, Status: registry.NotFound, Message: "404"}
	}
	require.Len(t, images, pools+1, "a driver image per pool and the RSMD image")
	a := &audit.Auditor{Images: images}
	out, err := a.Run(t.Context(), snap)
	require.NoError(t, err)
	return a, out
}

// TestMetricsCountEveryFinding: 10,000 nodes with a stale owner label and 150 pools whose
// image is missing give a report of 152 findings capped at 100; the metrics count every
// finding and every node — never only the listed results.
func TestMetricsCountEveryFinding(t *testing.T) {
	_, out := staleCluster(t, 10_000, 150)
	r := report(t, out, v1alpha1.DefaultDriverName)
	require.Len(t, r.Results, audit.DefaultMaxResults)
	require.Equal(t, 53, r.Omitted, "150 pools, the RSMD image, the stale owner labels and the admission pass: 153, 100 listed")

	audit.Observe(audit.PassStats{Outcome: out, Duration: time.Second})
	drift := func(kind string) float64 {
		return gauge(t, "driverguard_audit_drift_nodes", map[string]string{"kind": kind})
	}
	assert.Equal(t, 10_000.0, drift(routing.DriftStaleOwnerLabel))
	assert.Equal(t, 0.0, drift(routing.DriftUnowned))
	finding := func(rule, result string) float64 {
		return gauge(t, "driverguard_audit_findings", map[string]string{"policy": audit.BuiltinPolicy, "rule": rule, "result": result, "enforcement": "deny"})
	}
	assert.Equal(t, 151.0, finding(audit.RuleImageNotFound, "fail"))
	assert.Equal(t, 1.0, finding(routing.DriftStaleOwnerLabel, "fail"))
	assert.Equal(t, 1.0, finding(audit.RuleAdmission, "pass"))
	// Every finding counted once: the series add up to the summaries.
	s := out.Summary
	assert.Equal(t, float64(s.Pass+s.Fail+s.Warn+s.Error), gauge(t, "driverguard_audit_findings", nil))
}

// gauge is the sum of the samples of the gauge name whose labels include labels, in
// controller-runtime's registry (where serve's /metrics reads them).
func gauge(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestCappedReportKeepsWhatMatters: a capped report lists every rule that fails before a
// second finding of any, the finding covering the most nodes first: the stale owner labels of
// 10,000 nodes are listed first though 151 missing images would fill the list; the pools are
// listed by their number of nodes; the pass comes last.
func TestCappedReportKeepsWhatMatters(t *testing.T) {
	_, out := staleCluster(t, 10_000, 150)
	r := report(t, out, v1alpha1.DefaultDriverName)
	require.Len(t, r.Results, audit.DefaultMaxResults)
	assert.Equal(t, routing.DriftStaleOwnerLabel, r.Results[0].Rule)
	assert.Equal(t, "10000", r.Results[0].Properties["nodes"])
	prev := 1 << 30
	for _, f := range r.Results[1:] {
		require.Equal(t, audit.RuleImageNotFound, f.Rule)
		n, err := strconv.Atoi(f.Properties["nodes"])
		if f.Properties["daemonSet"] != "" {
			n, err = 0, nil // the RSMD DaemonSet: no node count
		}
		require.NoError(t, err)
		assert.LessOrEqual(t, n, prev, "pools by their number of nodes, most first")
		prev = n
	}
	assert.Equal(t, audit.Summary{Fail: 152, Pass: 1}, r.Summary)
	assert.Equal(t, 152, r.Enforced())

	cr := audit.ClusterReports(out, time.Now())[0]
	assert.Equal(t, "53", cr.Annotations[audit.AnnotationOmittedResults], "the ClusterReport says how many results it does not list")
	assert.Equal(t, 152, cr.Summary.Fail)
}

package audit

import (
	"strconv"
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/serve"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// gauge is the sum of the samples of the gauge name whose labels include labels, as serve's
// /metrics shows them (controller-runtime's registry, which the in-process audit records in).
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

// TestServedMetricsCountEveryFinding: serve's audit with reports capped at one result — the
// stale owner labels of two nodes listed, a node without a family label omitted — counts
// every finding and every node in its metrics, and the report says what it left out.
func TestServedMetricsCountEveryFinding(t *testing.T) {
	plane, _ := start(t, func(a *serve.AuditOptions) { a.MaxResults = 1 })
	c := newClient(t, plane, nil)
	noFamily := withOwner(wt.CandidateLabels(), "rbln-driver")
	delete(noFamily, operator.LabelFamily)
	create(t, c,
		wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver-old")),
		wt.Node("n2", withOwner(wt.CandidateLabels(), "rbln-driver-old")),
		wt.Node("n3", noFamily),
		wt.Driver("rbln-driver", nil),
	)
	cr := report(t, c, "rbln-driver", func(cr *openreports.ClusterReport) bool { return cr.Summary.Fail == 2 })
	require.Len(t, cr.Results, 1)
	assert.Equal(t, "StaleOwnerLabel", cr.Results[0].Rule, "the finding that covers more nodes is listed")
	assert.Equal(t, strconv.Itoa(cr.Summary.Fail+cr.Summary.Pass-1), cr.Annotations[audit.AnnotationOmittedResults], "the family label and the passes")

	deadline := time.Now().Add(20 * time.Second)
	for gauge(t, "driverguard_audit_drift_nodes", map[string]string{"kind": "DriverFamilyLabelMissing"}) != 1 {
		require.True(t, time.Now().Before(deadline), "driverguard_audit_drift_nodes{kind=DriverFamilyLabelMissing} is not 1 within 20s")
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, 2.0, gauge(t, "driverguard_audit_drift_nodes", map[string]string{"kind": "StaleOwnerLabel"}))
	assert.Equal(t, 1.0, gauge(t, "driverguard_audit_findings", map[string]string{"rule": "DriverFamilyLabelMissing", "result": "fail"}))
	assert.Equal(t, 2.0, gauge(t, "driverguard_audit_findings", map[string]string{"result": "fail"}))
	assert.Equal(t, float64(cr.Summary.Pass), gauge(t, "driverguard_audit_findings", map[string]string{"result": "pass"}), "the passes of the driver (the cluster report has none: there is no cluster policy)")
}

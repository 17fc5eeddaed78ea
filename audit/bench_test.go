package audit_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// scaleCluster is nodes candidate nodes over four families and drivers RBLNDrivers: the
// default one, and one per group of nodes (label group=g<i>, and its family). Every node
// carries the owner label routing gives it, but every 100th (drift: a stale owner label), and
// every 500th has no family label (drift: a missing family label on the default driver).
func scaleCluster(nodes, drivers int) ([]*v1alpha1.RBLNDriver, []*corev1.Node) {
	families := []string{"atom", "rebel", "ca", "cr"}
	ds := []*v1alpha1.RBLNDriver{wt.Driver(v1alpha1.DefaultDriverName, nil)}
	groups := drivers - 1
	for g := range groups {
		ds = append(ds, wt.Driver(fmt.Sprintf("rbln-driver-g%d", g), wt.Sel("group", fmt.Sprintf("g%d", g), operator.LabelFamily, families[g%len(families)])))
	}
	var ns []*corev1.Node
	for i := range nodes {
		l := wt.CandidateLabels()
		owner := v1alpha1.DefaultDriverName
		// Two nodes in three belong to a group (and so to its driver), the rest to the default.
		if g := i % groups; i%3 != 0 {
			l["group"], l[operator.LabelFamily] = fmt.Sprintf("g%d", g), families[g%len(families)]
			owner = fmt.Sprintf("rbln-driver-g%d", g)
		}
		switch {
		case i%500 == 499 && owner == v1alpha1.DefaultDriverName:
			delete(l, operator.LabelFamily)
		case i%100 == 99:
			owner = "rbln-driver-stale"
		}
		l[operator.LabelOwner] = owner
		ns = append(ns, wt.Node(fmt.Sprintf("node-%05d", i), l))
	}
	return ds, ns
}

// BenchmarkAuditPass: one full pass — every driver through the decision with the bundled
// library, the drift, the ClusterReports built — at 1,000 and 10,000 nodes with 500 drivers
// (goal: <= 2 s at 10,000 x 500). report-bytes is the size of the ClusterReports' JSON: it
// grows with the drivers, not the nodes.
func BenchmarkAuditPass(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("nodes=%d/drivers=500", n), func(b *testing.B) {
			engine, err := policy.New(b.Context(), policy.Options{Metrics: prometheus.NewRegistry()})
			require.NoError(b, err)
			drivers, nodes := scaleCluster(n, 500)
			snap := snapshotB(b, engine, drivers, nodes, wt.ClusterPolicy(true))
			a := &audit.Auditor{Decider: &decision.Decider{Policy: engine}, Policies: engine.Policies()}
			var bytes int
			b.ReportAllocs()
			for b.Loop() {
				out, err := a.Run(b.Context(), snap)
				require.NoError(b, err)
				reports := audit.ClusterReports(out, time.Unix(0, 0))
				data, err := json.Marshal(reports)
				require.NoError(b, err)
				bytes = len(data)
			}
			b.ReportMetric(float64(bytes), "report-bytes")
		})
	}
}

package audit

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driverguard/driverguard/routing"
)

// The audit's metrics, on serve's /metrics (docs/audit.md lists them).
var (
	findings = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "driverguard_audit_findings",
		Help: "Results of the last audit pass, by policy, rule, result and enforcement.",
	}, []string{"policy", "rule", "result", "enforcement"})
	driftNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "driverguard_audit_drift_nodes",
		Help: "Nodes with drift at the last audit pass, by kind (Unowned, DriverFamilyLabelMissing, InvalidImageTag, StaleOwnerLabel).",
	}, []string{"kind"})
	lastPass = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "driverguard_audit_last_pass_timestamp_seconds",
		Help: "When the last audit pass that completed ended (Unix time).",
	})
	passSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "driverguard_audit_pass_duration_seconds",
		Help:    "How long an audit pass took, writes included.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30, 60},
	})
	passErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "driverguard_audit_pass_errors_total",
		Help: "Audit passes that failed (reading the view, judging, or writing a report).",
	})
	reportWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driverguard_audit_report_writes_total",
		Help: "ClusterReports written by the audit, by operation (apply, delete).",
	}, []string{"operation"})
	metricsOnce sync.Once
)

// observe records a pass.
func observe(st PassStats) {
	metricsOnce.Do(func() {
		ctrlmetrics.Registry.MustRegister(findings, driftNodes, lastPass, passSeconds, passErrors, reportWrites)
	})
	passSeconds.Observe(st.Duration.Seconds())
	reportWrites.WithLabelValues("apply").Add(float64(st.Written.Applied))
	reportWrites.WithLabelValues("delete").Add(float64(st.Written.Deleted))
	if st.Err != nil {
		passErrors.Inc()
	}
	if st.Outcome == nil {
		return
	}
	lastPass.SetToCurrentTime()
	findings.Reset()
	driftNodes.Reset()
	for _, k := range routing.DriftKinds {
		driftNodes.WithLabelValues(k)
	}
	// From every finding's count, never from the results a report lists (at most
	// --audit-max-results of them).
	for _, r := range st.Outcome.Reports {
		for k, n := range r.counts {
			findings.WithLabelValues(k.policy, k.rule, string(k.result), string(k.enforcement)).Add(float64(n))
		}
		for kind, n := range r.driftNodes {
			driftNodes.WithLabelValues(kind).Add(float64(n))
		}
	}
}

package policy

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// engineMetrics are the engine's Prometheus collectors.
type engineMetrics struct {
	// loadFailed is 1 while the latest load of the policy directories failed (the previous
	// set stays active), 0 otherwise.
	loadFailed prometheus.Gauge
	// loads counts loads by result: success or failure.
	loads *prometheus.CounterVec
	// evaluations counts evaluations by result: allowed, warned, denied, error or timeout.
	evaluations *prometheus.CounterVec
	// duration is the evaluation latency.
	duration prometheus.Histogram
}

func newEngineMetrics(reg prometheus.Registerer) *engineMetrics {
	m := &engineMetrics{
		loadFailed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "driverguard_policy_load_failed",
			Help: "1 while the latest load of the policy directories failed and the previous policy set stays active; 0 otherwise.",
		}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driverguard_policy_loads_total",
			Help: "Loads of the policy set (start-up and reloads), by result (success, failure).",
		}, []string{"result"}),
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driverguard_policy_evaluations_total",
			Help: "Policy evaluations by result (allowed, warned, denied, error, timeout).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "driverguard_policy_evaluation_duration_seconds",
			Help:    "Latency of one policy evaluation (every policy on one object).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 9), // 50µs .. 3.3s
		}),
	}
	if reg != nil {
		m.loadFailed = register(reg, m.loadFailed)
		m.loads = register(reg, m.loads)
		m.evaluations = register(reg, m.evaluations)
		m.duration = register(reg, m.duration)
	}
	return m
}

// register registers c, or returns the collector already registered under its name (a second
// engine in one process shares the first one's series).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

package audit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/policy"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, openreports.Install(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	return scheme
}

// TestLoopReusedOnlyWhenReused: PassStats.Reused is false for a pass that judged anew (the
// first), true for a full pass over the same view.
func TestLoopReusedOnlyWhenReused(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	engine, err := policy.New(t.Context(), policy.Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	src := &unsynced{snap: snapshot(t, engine, nil, nil, nil)}
	var (
		mu     sync.Mutex
		passes []audit.PassStats
	)
	loop := &audit.Loop{Source: src, Policies: engine, Writer: &audit.Writer{Client: c}, Interval: 30 * time.Millisecond, MinGap: 10 * time.Millisecond,
		OnPass: func(s audit.PassStats) { mu.Lock(); defer mu.Unlock(); passes = append(passes, s) }}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- loop.Start(ctx) }()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(passes) >= 2 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	require.NoError(t, passes[0].Err)
	assert.False(t, passes[0].Reused, "the first pass judged anew, yet says it reused an outcome")
	assert.True(t, passes[1].Reused, "a full pass over the same view")
}

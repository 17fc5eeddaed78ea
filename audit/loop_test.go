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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/policy"
)

// unsynced is a cluster view that is not synced for its first failures snapshots and never
// reports a change.
type unsynced struct {
	mu       sync.Mutex
	failures int
	snap     *cluster.Snapshot
}

func (u *unsynced) Snapshot(context.Context) (*cluster.Snapshot, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.failures > 0 {
		u.failures--
		return nil, apierrors.NewServiceUnavailable("not synced yet")
	}
	return u.snap, nil
}

func (u *unsynced) Changed() <-chan struct{} { return nil }

// TestLoopRetriesAFailedPass: a pass that finds the view not synced is tried again after a
// backoff, with no change to wake it (the first pass used to wait for the next change or the
// full pass, ten minutes away); once a pass succeeded, the next waits for a reason.
func TestLoopRetriesAFailedPass(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, openreports.Install(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	engine, err := policy.New(t.Context(), policy.Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	src := &unsynced{failures: 3, snap: snapshot(t, engine, nil, nil, nil)}
	var (
		mu     sync.Mutex
		passes []audit.PassStats
	)
	loop := &audit.Loop{Source: src, Policies: engine, Writer: &audit.Writer{Client: c}, Interval: time.Hour, MinGap: 20 * time.Millisecond,
		OnPass: func(s audit.PassStats) {
			mu.Lock()
			defer mu.Unlock()
			passes = append(passes, s)
		}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- loop.Start(ctx) }()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(passes) >= 4 && passes[len(passes)-1].Err == nil
	}, 10*time.Second, 10*time.Millisecond, "the loop did not retry until the view was synced")
	time.Sleep(200 * time.Millisecond) // no pass without a reason once one succeeded
	cancel()
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, passes, 4)
	for _, p := range passes[:3] {
		assert.True(t, apierrors.IsServiceUnavailable(p.Err), "%v", p.Err)
	}
	list := &openreports.ClusterReportList{}
	require.NoError(t, c.List(t.Context(), list, client.MatchingLabels{audit.LabelManagedBy: "driverguard"}))
	assert.Len(t, list.Items, 1, "the cluster report")
}

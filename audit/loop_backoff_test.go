package audit_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/policy"
)

// failingSource returns its snapshot once, then a (non-503) error forever.
type failingSource struct {
	calls atomic.Int32
	snap  *cluster.Snapshot
}

func (f *failingSource) Snapshot(context.Context) (*cluster.Snapshot, error) {
	if f.calls.Add(1) == 1 {
		return f.snap, nil
	}
	return nil, errors.New("syncing the policy engine's cluster view failed")
}

func (f *failingSource) Changed() <-chan struct{} { return nil }

// TestLoopBacksOffAfterProgress: a pass that wrote some reports and failed is retried at once,
// but the passes after it that fail before writing anything back off: what a pass wrote must
// describe the last pass, not the last pass that got as far as writing.
func TestLoopBacksOffAfterProgress(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if u, ok := obj.(interface{ GetName() string }); ok && u.GetName() == audit.ClusterReportName {
				return errors.New("admission webhook denied the request")
			}
			return c.Apply(ctx, obj, opts...)
		},
	}).Build()
	engine, err := policy.New(t.Context(), policy.Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	src := &failingSource{snap: snapshot(t, engine, []*v1alpha1.RBLNDriver{{ObjectMeta: metav1.ObjectMeta{Name: "rbln-driver"}}}, nil, nil)}
	var passes atomic.Int32
	var first audit.PassStats
	loop := &audit.Loop{Source: src, Policies: engine, Writer: &audit.Writer{Client: c}, Interval: time.Hour, MinGap: 10 * time.Millisecond,
		OnPass: func(s audit.PassStats) {
			if passes.Add(1) == 1 {
				first = s
			}
		}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- loop.Start(ctx) }()
	time.Sleep(time.Second)
	cancel()
	require.NoError(t, <-done)
	require.Error(t, first.Err)
	require.Positive(t, first.Written.Applied, "the first pass wrote the driver's report")
	// Backoff from 10ms: 10, 20, 40, ... 640ms: about 8 passes in a second; without it, 100.
	assert.Less(t, int(passes.Load()), 20, "failed passes that wrote nothing did not back off")
}

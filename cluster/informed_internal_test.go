package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// TestInformedEvents: informer events change the State; only relevant ones (labels, spec
// generation, add, delete) make the next snapshot a new one, and a request rebuilds a stale
// snapshot itself.
func TestInformedEvents(t *testing.T) {
	ctx := context.Background()
	s := NewInformed(nil, InformedOptions{})
	_, err := s.Snapshot(ctx)
	assert.True(t, apierrors.IsServiceUnavailable(err), "503 before sync: %v", err)
	require.Error(t, s.Ready(nil))

	nodes, drivers := s.handler(feeds[0]), s.handler(feeds[1])
	node := func(labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}}
	}
	driver := func(gen int64, version string) *v1alpha1.RBLNDriver {
		return &v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: "d1", Generation: gen}, Spec: v1alpha1.RBLNDriverSpec{Version: version}}
	}
	nodes.OnAdd(node(map[string]string{"a": "1"}), true)
	drivers.OnAdd(driver(1, "1.0"), true)
	s.synced.Store(true)
	first, err := s.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Ready(nil))
	assert.Len(t, first.Nodes(), 1)

	nodes.OnUpdate(node(map[string]string{"a": "1"}), node(map[string]string{"a": "1"})) // status only
	drivers.OnUpdate(driver(1, "1.0"), driver(1, "1.0"))
	same, err := s.Snapshot(ctx)
	require.NoError(t, err)
	assert.Same(t, first, same, "status-only updates do not count")

	drivers.OnUpdate(driver(1, "1.0"), driver(2, "2.0"))
	next, err := s.Snapshot(ctx)
	require.NoError(t, err)
	assert.NotSame(t, first, next)
	d, _ := next.Driver("d1")
	assert.Equal(t, "2.0", d.Spec.Version)

	nodes.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "n1", Obj: node(nil)})
	last, err := s.Snapshot(ctx)
	require.NoError(t, err)
	assert.Empty(t, last.Nodes())
	assert.Len(t, next.Nodes(), 1, "an older snapshot keeps its view")
}

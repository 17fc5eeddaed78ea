package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
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

	nodes, drivers := nodeStore{s}, s.handler(s.feeds()[0])
	node := func(labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}}
	}
	driver := func(gen int64, version string) *v1alpha1.RBLNDriver {
		return &v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: "d1", Generation: gen}, Spec: v1alpha1.RBLNDriverSpec{Version: version}}
	}
	require.NoError(t, nodes.Add(node(map[string]string{"a": "1"})))
	drivers.OnAdd(driver(1, "1.0"), true)
	s.synced.Store(true)
	first, err := s.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Ready(nil))
	assert.Len(t, first.Nodes(), 1)

	require.NoError(t, nodes.Update(node(map[string]string{"a": "1"}))) // status only
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

	require.NoError(t, nodes.Delete(toolscache.DeletedFinalStateUnknown{Key: "n1", Obj: node(nil)}))
	last, err := s.Snapshot(ctx)
	require.NoError(t, err)
	assert.Empty(t, last.Nodes())
	assert.Len(t, next.Nodes(), 1, "an older snapshot keeps its view")
}

// TestEnsureLabelKeys (#45): a key added to the view's LabelKeys is read from the nodes that
// carry it; an event read before the key was added (its labels kept without it) keeps the
// value read; a node the State does not hold is not brought back, but its value is remembered
// for its queued event; events after the addition keep the key themselves.
func TestEnsureLabelKeys(t *testing.T) {
	ctx := context.Background()
	const zone = "topology.kubernetes.io/zone"
	labels := func(z string) map[string]string {
		return map[string]string{operator.LabelDeployDriver: "true", zone: z, "kubernetes.io/hostname": "h"}
	}
	reader := fake.NewClientBuilder().WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels("a")}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: labels("b")}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone", Labels: labels("c")}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{operator.LabelDeployDriver: "true"}}},
	).Build()
	fail := &atomic.Bool{}
	keys := NewLabelKeys()
	s := NewInformed(nil, InformedOptions{LabelKeys: keys, Reader: slowReader{Reader: reader, fail: fail}})
	store := nodeStore{s}
	raw := func(name string, l map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	// Streamed before the key was added: kept without it.
	before := func(name string, l map[string]string) any {
		k, err := store.Transformer()(raw(name, l))
		require.NoError(t, err)
		return k
	}
	queuedN1, queuedN2 := before("n1", labels("a")), before("n2", labels("b"))
	require.NoError(t, store.Replace([]any{before("n1", labels("a")), before("plain", map[string]string{operator.LabelDeployDriver: "true"})}, "1"))
	require.NoError(t, store.Add(raw("gone", labels("c"))))
	require.NoError(t, store.Delete(raw("gone", nil)))
	require.NoError(t, s.EnsureLabelKeys(ctx, []string{zone}), "nothing before the view is synced")
	assert.False(t, keys.Has(zone))
	s.synced.Store(true)
	n1, _ := s.state.Node("n1")
	assert.NotContains(t, n1.Labels, zone, "not kept yet")
	assert.NotContains(t, n1.Labels, "kubernetes.io/hostname")

	require.NoError(t, s.EnsureLabelKeys(ctx, []string{zone, operator.LabelFamily}))
	assert.True(t, keys.Has(zone))
	n1, _ = s.state.Node("n1")
	assert.Equal(t, "a", n1.Labels[zone], "read")
	_, ok := s.state.Node("gone")
	assert.False(t, ok, "a node deleted before the read is not brought back")
	_, ok = s.state.Node("n2")
	assert.False(t, ok, "a node whose add is queued is not added by the read")
	snap, err := s.Snapshot(ctx)
	require.NoError(t, err)
	assert.Len(t, snap.Nodes(), 2)

	// The queued events, kept before the key was added, keep what was read.
	require.NoError(t, store.Update(queuedN1))
	require.NoError(t, store.Add(queuedN2))
	for name, want := range map[string]string{"n1": "a", "n2": "b"} {
		n, ok := s.state.Node(name)
		require.True(t, ok, name)
		assert.Equal(t, want, n.Labels[zone], name)
	}
	// An event after the addition keeps the key itself, and drops it when the node loses it.
	require.NoError(t, store.Update(raw("n1", labels("z"))))
	n1, _ = s.state.Node("n1")
	assert.Equal(t, "z", n1.Labels[zone])
	require.NoError(t, store.Update(raw("n1", map[string]string{operator.LabelDeployDriver: "true"})))
	n1, _ = s.state.Node("n1")
	assert.NotContains(t, n1.Labels, zone)

	// Nothing missing: no read.
	fail.Store(true)
	require.NoError(t, s.EnsureLabelKeys(ctx, []string{zone}))
	// A key whose read fails stays to be read: a 503 until it is.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	require.True(t, apierrors.IsServiceUnavailable(s.EnsureLabelKeys(short, []string{"rack"})))
	fail.Store(false)
	require.NoError(t, s.EnsureLabelKeys(ctx, nil))
	require.Eventually(t, func() bool { return !s.hasUnread.Load() }, 10*time.Second, 20*time.Millisecond)
}

// TestDriverKeysCaughtUp: a driver whose selector reads a key the view does not keep makes
// the next snapshot read that key's nodes first.
func TestDriverKeysCaughtUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reader := fake.NewClientBuilder().WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{operator.LabelDeployDriver: "true", "env": "canary"}}}).Build()
	s := NewInformed(nil, InformedOptions{LabelKeys: NewLabelKeys(), Reader: reader})
	require.NoError(t, nodeStore{s}.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{operator.LabelDeployDriver: "true", "env": "canary"}}}))
	s.synced.Store(true)
	drivers := s.handler(s.feeds()[0])
	drivers.OnAdd(&v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: "d1", Generation: 1},
		Spec: v1alpha1.RBLNDriverSpec{NodeSelector: map[string]string{"env": "canary"}}}, true)
	// The snapshot asked for starts the read; the view has the key once it is done.
	require.NoError(t, s.WaitFor(ctx, func(snap *Snapshot) bool { return snap.Nodes()[0].Labels["env"] == "canary" }))
	snap, err := s.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, "d1", snap.Route().Nodes[0].Owner)
}

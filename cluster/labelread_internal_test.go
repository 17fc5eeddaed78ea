package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/driverguard/driverguard/operator"
)

// hookReader runs hook once before its first List answers: what the reflector applies while
// a read of a new key is under way (the key already added).
type hookReader struct {
	client.Reader
	hook func()
}

func (r *hookReader) List(ctx context.Context, l client.ObjectList, o ...client.ListOption) error {
	if h := r.hook; h != nil {
		r.hook = nil
		h()
	}
	return r.Reader.List(ctx, l, o...)
}

// zoned is a synced view over one node n1 carrying zone=a, and a function that keeps n1's
// labels as the reflector's first list does, with the keys of that moment.
func zoned(t *testing.T) (*Informed, nodeStore, *hookReader, func(map[string]string) any) {
	reader := &hookReader{Reader: fake.NewClientBuilder().WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{operator.LabelDeployDriver: "true", "zone": "a"}}},
	).Build()}
	s := NewInformed(nil, InformedOptions{LabelKeys: NewLabelKeys(), Reader: reader})
	s.synced.Store(true)
	store := nodeStore{s}
	keptNow := func(l map[string]string) any {
		k, err := store.Transformer()(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: l}})
		require.NoError(t, err)
		return k
	}
	return s, store, reader, keptNow
}

// TestRelistEndsDuringRead (found by a hostile review): a relist streamed before zone was
// added ends while zone's nodes are read; n1, applied without zone and no read value yet,
// stays older than zone, so the read still gives it zone.
func TestRelistEndsDuringRead(t *testing.T) {
	s, store, reader, keptNow := zoned(t)
	streamed := keptNow(map[string]string{operator.LabelDeployDriver: "true", "zone": "a"})
	reader.hook = func() { assert.NoError(t, store.Replace([]any{streamed}, "1")) }
	require.NoError(t, s.EnsureLabelKeys(context.Background(), []string{"zone"}))
	n1, _ := s.state.Node("n1")
	assert.Equal(t, "a", n1.Labels["zone"], "n1: %v", n1.Labels)
}

// TestEventDuringRead (found by a hostile review): an object kept before zone was added is
// applied while zone's nodes are read; it cannot take zone from the State (which has none
// yet), so it stays older than zone and the read still applies.
func TestEventDuringRead(t *testing.T) {
	s, store, reader, keptNow := zoned(t)
	l := map[string]string{operator.LabelDeployDriver: "true", "zone": "a"}
	require.NoError(t, store.Replace([]any{keptNow(l)}, "1"))
	stale := keptNow(l)
	reader.hook = func() { assert.NoError(t, store.Update(stale)) }
	require.NoError(t, s.EnsureLabelKeys(context.Background(), []string{"zone"}))
	n1, _ := s.state.Node("n1")
	assert.Equal(t, "a", n1.Labels["zone"], "n1: %v", n1.Labels)
}

// TestSecondKeyKeepsFirstRead (found by a hostile review): what a read of zone found for a
// node not held yet is not forgotten when a second key is added: the node, applied later
// from a list streamed before both, has zone.
func TestSecondKeyKeepsFirstRead(t *testing.T) {
	const zone, team = "topology.kubernetes.io/zone", "team"
	reader := fake.NewClientBuilder().WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{operator.LabelDeployDriver: "true", zone: "a"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{operator.LabelDeployDriver: "true", team: "ml"}}},
	).Build()
	s := NewInformed(nil, InformedOptions{LabelKeys: NewLabelKeys(), Reader: reader})
	s.synced.Store(true)
	store := nodeStore{s}
	kept := func(name string, l map[string]string) any {
		k, err := store.Transformer()(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}})
		require.NoError(t, err)
		return k
	}
	k1 := kept("n1", map[string]string{operator.LabelDeployDriver: "true", zone: "a"})
	k2 := kept("n2", map[string]string{operator.LabelDeployDriver: "true", team: "ml"})
	require.NoError(t, s.EnsureLabelKeys(context.Background(), []string{zone}))
	require.NoError(t, s.EnsureLabelKeys(context.Background(), []string{team}))
	require.NoError(t, store.Replace([]any{k1, k2}, "1"))
	n1, _ := s.state.Node("n1")
	assert.Equal(t, "a", n1.Labels[zone], "n1: %v", n1.Labels)
	n2, _ := s.state.Node("n2")
	assert.Equal(t, "ml", n2.Labels[team], "n2: %v", n2.Labels)
	assert.Empty(t, s.read, "what the reads found was applied or dropped")
}

// slowReader's List takes longer than an admission request may wait: a list of every node at
// 100,000 nodes takes seconds.
type slowReader struct {
	client.Reader
	fail *atomic.Bool
}

func (r slowReader) List(ctx context.Context, l client.ObjectList, o ...client.ListOption) error {
	if r.fail != nil && r.fail.Load() {
		return errors.New("the API server is away")
	}
	select {
	case <-time.After(300 * time.Millisecond):
		return r.Reader.List(ctx, l, o...)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestSlowReadBlocksOnlyItsOwn (found by a hostile review): a read of a new key that takes
// longer than a request goes on in the background: the admission that needs the key gets a
// 503 and finds it read when it retries; other requests are answered meanwhile; a read that
// fails is retried until it succeeds.
func TestSlowReadBlocksOnlyItsOwn(t *testing.T) {
	fail := &atomic.Bool{}
	reader := fake.NewClientBuilder().WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{operator.LabelDeployDriver: "true", "kubernetes.io/hostname": "n1"}}},
	).Build()
	s := NewInformed(nil, InformedOptions{LabelKeys: NewLabelKeys(), Reader: slowReader{Reader: reader, fail: fail}})
	require.NoError(t, nodeStore{s}.Replace([]any{&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{operator.LabelDeployDriver: "true", "kubernetes.io/hostname": "n1"}}}}, "1"))
	s.synced.Store(true)
	request := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 100*time.Millisecond)
	}

	fail.Store(true)
	ctx, cancel := request()
	err := s.EnsureLabelKeys(ctx, []string{"kubernetes.io/hostname"})
	cancel()
	require.True(t, apierrors.IsServiceUnavailable(err), "%v", err)
	for i := range 3 {
		ctx, cancel := request()
		_, err := s.Snapshot(ctx) // a request that does not need the key
		cancel()
		require.NoError(t, err, "request %d", i)
		require.NoError(t, s.EnsureLabelKeys(ctx, []string{operator.LabelFamily}), "a request whose keys are read")
	}
	ctx, cancel = request()
	err = s.EnsureLabelKeys(ctx, []string{"kubernetes.io/hostname"})
	cancel()
	require.ErrorContains(t, err, "the last read failed: listing the nodes labelled kubernetes.io/hostname: the API server is away")
	fail.Store(false) // the reader retries after its backoff
	require.Eventually(t, func() bool {
		ctx, cancel := request()
		defer cancel()
		return s.EnsureLabelKeys(ctx, []string{"kubernetes.io/hostname"}) == nil
	}, 10*time.Second, 50*time.Millisecond)
	snap, err := s.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "n1", snap.Nodes()[0].Labels["kubernetes.io/hostname"])
}

package cluster_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	dgpolicy "github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
)

// TestSnapshot: a snapshot is sorted by name, holds the cluster policy that applies, and does
// not follow later changes of its State.
func TestSnapshot(t *testing.T) {
	st := cluster.FromLists(
		[]routing.Node{{Name: "n2"}, {Name: "n1"}},
		[]v1alpha1.RBLNDriver{driver("b", "1"), driver("a", "1")},
		[]v1alpha1.RBLNClusterPolicy{policy("z"), policy("other")}, nil)
	snap := st.Snapshot()
	st.SetNode(routing.Node{Name: "n0"})
	st.DeleteDriver("a")

	assert.Equal(t, []string{"n1", "n2"}, names(snap.Nodes(), func(n routing.Node) string { return n.Name }))
	assert.Equal(t, []string{"a", "b"}, names(snap.Drivers(), func(d v1alpha1.RBLNDriver) string { return d.Name }))
	assert.Equal(t, "other", snap.ClusterPolicy().Name)
	_, ok := snap.Driver("a")
	assert.True(t, ok)
	assert.Equal(t, []string{"n2", "n1", "n0"}, nodeNames(st), "the State keeps its order")
	v := snap.ClusterView()
	assert.Len(t, v.Drivers, 2)
	assert.Len(t, v.Nodes, 2)
}

type failingSyncer struct{ calls int }

func (f *failingSyncer) SyncCluster(context.Context, *dgpolicy.ClusterView) error {
	f.calls++
	return errors.New("store closed")
}

// TestStaticSync: a Static syncs the policies' cluster view once; a failure is a 503.
func TestStaticSync(t *testing.T) {
	s := cluster.NewStatic(cluster.FromLists(nil, nil, nil, nil))
	f := &failingSyncer{}
	s.SyncTo(f)
	for range 2 {
		_, err := s.Snapshot(context.Background())
		require.Error(t, err)
		assert.True(t, apierrors.IsServiceUnavailable(err), err)
	}
	assert.Equal(t, 1, f.calls)
}

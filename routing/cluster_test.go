package routing

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// TestPropertyClusterReplay replays random releases (updates of stored drivers, new drivers,
// deletions) one change at a time and checks, after every step, the Cluster against a fresh
// Index of the same state: Assess of the next change, the owner and pool of every node, and the
// changes each step reports.
func TestPropertyClusterReplay(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 22))
	for c := range propertyCases / 3 {
		shape := genShape(r)
		shape.currentOwners = true
		current, nodes := genCluster(r, shape)
		upcoming := genDrivers(r, 1+r.IntN(6), 4)
		for i := range upcoming {
			if r.IntN(3) == 0 { // an update of a stored driver
				upcoming[i].Name = current[r.IntN(len(current))].Name
			}
		}
		// Names repeat at most once among the upcoming drivers, as in one release.
		seen := map[string]bool{}
		upcoming = slices.DeleteFunc(upcoming, func(d v1alpha1.RBLNDriver) bool {
			dup := seen[d.Name]
			seen[d.Name] = true
			return dup
		})
		ptrs := make([]*v1alpha1.RBLNDriver, len(upcoming))
		for i := range upcoming {
			ptrs[i] = &upcoming[i]
		}
		cl := NewCluster(nodes, current, ptrs, Options{})
		state := validDrivers(current)
		check := func(step string) {
			t.Helper()
			var drivers []v1alpha1.RBLNDriver
			for _, d := range state {
				drivers = append(drivers, d)
			}
			res := Route(drivers, nodes, Options{})
			got := cl.Nodes()
			require.Len(t, got, len(res.Nodes))
			for i, nr := range res.Nodes {
				require.Equal(t, NodeChange{Name: nr.Name, Owner: nr.Owner, Pool: nr.Pool}, got[i], "case %d %s", c, step)
			}
			var names []string
			for _, d := range cl.Drivers() {
				names = append(names, d.Name)
			}
			var want []string
			for n := range state {
				want = append(want, n)
			}
			slices.Sort(want)
			require.Equal(t, want, names, "case %d %s", c, step)
		}
		check("start")
		for i := range upcoming {
			d := &upcoming[i]
			fresh := NewIndex(stateDrivers(state), nodes, Options{})
			require.Equal(t, fresh.Assess(d), cl.Assess(d), "case %d assess %s", c, d.Name)
			before := cl.Nodes()
			changes, err := cl.Apply(d)
			require.NoError(t, err)
			if operator.Excluded(d.Name, d.Spec.NodeSelector, d.DeletionTimestamp != nil) != nil {
				// A driver the operator excludes routes no node: the driver it replaces leaves routing.
				delete(state, d.Name)
			} else {
				state[d.Name] = *d
			}
			check("after applying " + d.Name)
			requireChanges(t, before, cl.Nodes(), changes)
		}
		if len(current) > 0 && r.IntN(2) == 0 {
			name := current[r.IntN(len(current))].Name
			before := cl.Nodes()
			changes := cl.Delete(name)
			delete(state, name)
			check("after deleting " + name)
			requireChanges(t, before, cl.Nodes(), changes)
		}
	}
}

// TestClusterApplyUnknownDriver: only the drivers the Cluster was built with can be applied.
func TestClusterApplyUnknownDriver(t *testing.T) {
	cl := NewCluster(nil, nil, nil, Options{})
	_, err := cl.Apply(&v1alpha1.RBLNDriver{})
	require.ErrorContains(t, err, "is not one the cluster view was built with")
}

func stateDrivers(state map[string]v1alpha1.RBLNDriver) []v1alpha1.RBLNDriver {
	out := make([]v1alpha1.RBLNDriver, 0, len(state))
	for _, d := range state {
		out = append(out, d)
	}
	return out
}

// requireChanges checks that changes are exactly the nodes that differ between before and after.
func requireChanges(t *testing.T, before, after, changes []NodeChange) {
	t.Helper()
	want := []NodeChange{}
	for i := range after {
		if before[i] != after[i] {
			want = append(want, after[i])
		}
	}
	require.Equal(t, want, changes)
}

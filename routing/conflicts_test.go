package routing

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

func TestIndexConflicts(t *testing.T) {
	t.Parallel()
	def := drv(v1alpha1.DefaultDriverName, nil)
	atom := drv("rbln-driver-atom", famSel("atom"))
	rebel := drv("rbln-driver-rebel", famSel("rebel"))
	canary := drv("rbln-driver-atom-canary", canarySel())
	nodes := []Node{
		node("a1"), node("a2"),
		node("a-canary", "env", "canary"),
		node("a-zone", "zone", "a"),
		node("a-canary-zone", "env", "canary", "zone", "a"),
		node("r1", operator.LabelFamily, "rebel"),
		node("out", operator.LabelDeployDriver, "pre-installed", "zone", "a"),
	}
	zoneSel := sel(operator.LabelFamily, "atom", "zone", "a")

	type tie struct {
		resources []string
		nodes     []string
	}
	tests := []struct {
		name      string
		drivers   []v1alpha1.RBLNDriver
		candidate v1alpha1.RBLNDriver
		ties      []tie
		potential []PotentialConflict
		owns      int
		invalid   bool
	}{
		{
			name:      "identical selectors tie on existing nodes and on any future node",
			drivers:   []v1alpha1.RBLNDriver{def, atom, canary},
			candidate: drv("rbln-driver-atom2", famSel("atom")),
			ties:      []tie{{[]string{"rbln-driver-atom", "rbln-driver-atom2"}, []string{"a-zone", "a1", "a2"}}},
			potential: []PotentialConflict{{Resource: "rbln-driver-atom", Identical: true, Labels: famSel("atom")}},
		},
		{
			name:      "compatible incomparable selectors tie where both match and could tie on future nodes",
			drivers:   []v1alpha1.RBLNDriver{def, atom, canary},
			candidate: drv("rbln-driver-zone", zoneSel),
			ties:      []tie{{[]string{"rbln-driver-atom-canary", "rbln-driver-zone"}, []string{"a-canary-zone"}}},
			potential: []PotentialConflict{{Resource: "rbln-driver-atom-canary", Labels: sel(operator.LabelFamily, "atom", "env", "canary", "zone", "a")}},
			owns:      1,
		},
		{
			name:      "a third driver containing both resolves every shared node",
			drivers:   []v1alpha1.RBLNDriver{def, atom, canary, drv("rbln-driver-both", sel(operator.LabelFamily, "atom", "env", "canary", "zone", "a"))},
			candidate: drv("rbln-driver-zone", zoneSel),
			owns:      1,
		},
		{
			name:      "no future tie without a common node: incompatible values",
			drivers:   []v1alpha1.RBLNDriver{def, atom, rebel},
			candidate: drv("rbln-driver-rebel-canary", sel(operator.LabelFamily, "rebel", "env", "canary")),
		},
		{
			name:      "strict containment is not a conflict; the candidate owns what it specialises",
			drivers:   []v1alpha1.RBLNDriver{def, atom},
			candidate: canary,
			owns:      2,
		},
		{
			name:      "empty default selector ties with nothing",
			drivers:   []v1alpha1.RBLNDriver{atom, canary, rebel},
			candidate: def,
			owns:      0,
		},
		{
			name:      "an update replaces the old object of the same name",
			drivers:   []v1alpha1.RBLNDriver{def, atom, canary, drv("rbln-driver-zone", zoneSel)},
			candidate: drv("rbln-driver-zone", sel(operator.LabelFamily, "atom", "zone", "a", "env", "canary")),
			owns:      1,
		},
		{
			name:      "out-of-scope nodes never tie",
			drivers:   []v1alpha1.RBLNDriver{drv("rbln-driver-z1", sel("zone", "a"))},
			candidate: drv("rbln-driver-z2", sel("zone", "a")),
			ties:      []tie{{[]string{"rbln-driver-z1", "rbln-driver-z2"}, []string{"a-canary-zone", "a-zone"}}},
			potential: []PotentialConflict{{Resource: "rbln-driver-z1", Identical: true, Labels: sel("zone", "a")}},
		},
		{
			name:      "invalid candidates are reported and take no part",
			drivers:   []v1alpha1.RBLNDriver{def, atom},
			candidate: drv("rbln-driver-bad", sel(operator.LabelFamily, "atom", operator.LabelOwner, "x")),
			invalid:   true,
		},
		{
			name:      "invalid existing drivers are ignored",
			drivers:   []v1alpha1.RBLNDriver{def, drv("rbln-driver-bad", sel(operator.LabelFamily, "atom", operator.LabelDeployDriver, "true"))},
			candidate: atom,
			owns:      5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep := NewIndex(tt.drivers, nodes, Options{}).Conflicts(tt.candidate)
			assert.Equal(t, tt.candidate.Name, rep.Resource)
			if tt.invalid {
				assert.NotEmpty(t, rep.Invalid)
				assert.Empty(t, rep.Ties)
				assert.Empty(t, rep.Potential)
				return
			}
			require.Empty(t, rep.Invalid)
			var ties []tie
			for _, c := range rep.Ties {
				assert.Equal(t, len(c.Nodes), c.Total)
				ties = append(ties, tie{c.Resources, c.Nodes})
			}
			assert.Equal(t, tt.ties, ties)
			if tt.potential == nil {
				tt.potential = []PotentialConflict{}
			}
			assert.Equal(t, tt.potential, rep.Potential)
			assert.Equal(t, tt.owns, rep.Owns)
		})
	}
}

func TestConflictsSampleIsCapped(t *testing.T) {
	t.Parallel()
	var nodes []Node
	for i := range 30 {
		nodes = append(nodes, node(fmt.Sprintf("n%02d", 29-i)))
	}
	rep := NewIndex([]v1alpha1.RBLNDriver{drv("rbln-driver-a", famSel("atom"))}, nodes, Options{}).Conflicts(drv("rbln-driver-b", famSel("atom")))
	require.Len(t, rep.Ties, 1)
	assert.Equal(t, 30, rep.Ties[0].Total)
	assert.Equal(t, []string{"n00", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09"}, rep.Ties[0].Nodes)
}

func TestIndexConcurrentUse(t *testing.T) {
	t.Parallel()
	drivers, nodes := benchCluster(500, 40)
	ix := newIndex(drivers, nodes, Options{}) // postings built lazily, by whichever goroutine comes first
	want := ix.Route()
	cand := drv("rbln-driver-x", famSel("atom"))
	done := make(chan ConflictReport)
	for range 8 {
		go func() { done <- ix.Conflicts(cand) }()
	}
	first := <-done
	for range 7 {
		assert.Equal(t, first, <-done)
	}
	assert.Equal(t, want, ix.Route())
}

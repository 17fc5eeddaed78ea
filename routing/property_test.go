package routing

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// propertyCases is the number of generated clusters per property.
const propertyCases = 300

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// strictSuperset reports whether a ⊋ b.
func strictSuperset(a, b map[string]string) bool {
	return len(a) > len(b) && matches(b, a)
}

// validDrivers applies the operator's participation rule (operator.Excluded) as Route does,
// by brute force.
func validDrivers(drivers []v1alpha1.RBLNDriver) map[string]v1alpha1.RBLNDriver {
	out := map[string]v1alpha1.RBLNDriver{}
	for _, d := range drivers {
		if operator.Excluded(d.Name, d.Spec.NodeSelector, d.DeletionTimestamp != nil) == nil {
			out[d.Name] = d
		}
	}
	return out
}

// naiveOwner is the reference implementation of docs/routing.md "Owner of a node" for one node: O(drivers²).
func naiveOwner(valid map[string]v1alpha1.RBLNDriver, n Node) (owner, reason string) {
	if n.Labels[operator.LabelDeployDriver] != "true" {
		return "", ReasonOutOfScope
	}
	var m []v1alpha1.RBLNDriver
	for _, d := range valid {
		if matches(d.Spec.NodeSelector, n.Labels) {
			m = append(m, d)
		}
	}
	if len(m) == 0 {
		return "", ReasonNoMatchingDriver
	}
	for _, d := range m {
		best := true
		for _, e := range m {
			if e.Name != d.Name && !strictSuperset(d.Spec.NodeSelector, e.Spec.NodeSelector) {
				best = false
				break
			}
		}
		if best {
			return d.Name, ""
		}
	}
	if cur, ok := valid[n.Labels[operator.LabelOwner]]; ok && matches(cur.Spec.NodeSelector, n.Labels) {
		return cur.Name, ReasonConflictingNodeSelector
	}
	return "", ReasonConflictingNodeSelector
}

func genShape(r *rand.Rand) clusterShape {
	return clusterShape{nodes: 1 + r.IntN(60), drivers: 1 + r.IntN(25), invalidEvery: r.IntN(6), currentOwners: r.IntN(4) != 0}
}

func TestPropertyOwnerIsStrictSupersetOfEveryMatch(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for c := range propertyCases {
		drivers, nodes := genCluster(r, genShape(r))
		valid := validDrivers(drivers)
		res := Route(drivers, nodes, Options{})
		labels := map[string]map[string]string{}
		for _, n := range nodes {
			labels[n.Name] = n.Labels
		}
		for _, nr := range res.Nodes {
			owner, reason := naiveOwner(valid, Node{nr.Name, labels[nr.Name]})
			require.Equal(t, owner, nr.Owner, "case %d node %s", c, nr.Name)
			if reason == ReasonConflictingNodeSelector || reason == ReasonOutOfScope || reason == ReasonNoMatchingDriver {
				require.Equal(t, reason, nr.Reason, "case %d node %s", c, nr.Name)
			} else {
				require.NotEqual(t, ReasonConflictingNodeSelector, nr.Reason, "case %d node %s", c, nr.Name)
			}
			if nr.Owner == "" || nr.Reason == ReasonConflictingNodeSelector {
				continue
			}
			own := valid[nr.Owner].Spec.NodeSelector
			for _, d := range valid {
				if d.Name != nr.Owner && matches(d.Spec.NodeSelector, labels[nr.Name]) {
					require.True(t, strictSuperset(own, d.Spec.NodeSelector), "case %d: owner %s of %s must strictly contain %s", c, nr.Owner, nr.Name, d.Name)
				}
			}
		}
	}
}

func TestPropertyEveryOwnerMatchesItsNode(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for c := range propertyCases {
		drivers, nodes := genCluster(r, genShape(r))
		valid := validDrivers(drivers)
		res := Route(drivers, nodes, Options{})
		labels := map[string]map[string]string{}
		for _, n := range nodes {
			labels[n.Name] = n.Labels
		}
		for _, nr := range res.Nodes {
			if nr.Owner == "" {
				continue
			}
			d, ok := valid[nr.Owner]
			require.True(t, ok, "case %d: owner %s of %s is not a valid driver", c, nr.Owner, nr.Name)
			require.Equal(t, "true", labels[nr.Name][operator.LabelDeployDriver])
			require.True(t, matches(d.Spec.NodeSelector, labels[nr.Name]), "case %d: owner %s does not match %s", c, nr.Owner, nr.Name)
		}
		invalid := map[string]bool{}
		for _, inv := range res.Invalid {
			invalid[inv.Resource] = true
		}
		for _, d := range drivers {
			_, ok := valid[d.Name]
			require.Equal(t, !ok, invalid[d.Name], "case %d: driver %s", c, d.Name)
		}
	}
}

func TestPropertyInvariantUnderPermutation(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for c := range propertyCases {
		drivers, nodes := genCluster(r, genShape(r))
		if r.IntN(4) == 0 && len(nodes) > 1 { // duplicate node names must not break determinism
			nodes = append(nodes, Node{Name: nodes[0].Name, Labels: maps.Clone(nodes[1].Labels)})
		}
		if r.IntN(4) == 0 { // neither must duplicate drivers
			drivers = append(drivers, drivers[r.IntN(len(drivers))])
		}
		want, err := json.Marshal(Route(drivers, nodes, Options{}))
		require.NoError(t, err)
		for range 3 {
			d2, n2 := slices.Clone(drivers), slices.Clone(nodes)
			r.Shuffle(len(d2), func(i, j int) { d2[i], d2[j] = d2[j], d2[i] })
			r.Shuffle(len(n2), func(i, j int) { n2[i], n2[j] = n2[j], n2[i] })
			got, err := json.Marshal(Route(d2, n2, Options{}))
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got), "case %d", c)
		}
	}
}

func TestPropertyPoolsPartitionOwnedLabelledNodes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for c := range propertyCases {
		drivers, nodes := genCluster(r, genShape(r))
		res := Route(drivers, nodes, Options{})
		labels := map[string]map[string]string{}
		for _, n := range nodes {
			labels[n.Name] = n.Labels
		}
		inPool := map[string]Pool{}
		dsNames := map[string]bool{}
		for _, p := range res.Pools {
			require.False(t, dsNames[p.DaemonSet], "case %d: DaemonSet %s twice", c, p.DaemonSet)
			dsNames[p.DaemonSet] = true
			require.Equal(t, operator.DriverDaemonSet(p.Owner, p.Name), p.DaemonSet)
			require.True(t, slices.IsSorted(p.Nodes))
			require.NotEmpty(t, p.Nodes)
			for _, n := range p.Nodes {
				_, dup := inPool[n]
				require.False(t, dup, "case %d: node %s in two pools", c, n)
				inPool[n] = p
				pl, err := operator.PoolOf(labels[n], false)
				require.Nil(t, err)
				require.Equal(t, pl, p.Labels, "case %d: node %s", c, n)
			}
		}
		for _, nr := range res.Nodes {
			_, poolErr := operator.PoolOf(labels[nr.Name], false)
			wantPool := nr.Owner != "" && poolErr == nil && nr.Reason != ReasonPoolNameCollision
			p, ok := inPool[nr.Name]
			require.Equal(t, wantPool, ok, "case %d: node %s (owner %q, %v)", c, nr.Name, nr.Owner, poolErr)
			if ok {
				assert.Equal(t, p.Name, nr.Pool)
				assert.Equal(t, p.Owner, nr.Owner)
				assert.Equal(t, p.Image, nr.Image)
			} else {
				assert.Empty(t, nr.Pool)
				assert.Empty(t, nr.Image)
			}
		}
	}
}

// TestPropertyConflictsAgreesWithRoute checks the webhook entry point against Route: the ties
// Conflicts predicts for a candidate are exactly the ties Route finds with the candidate
// added, and every potential conflict is real on the node labelled with both selectors.
func TestPropertyConflictsAgreesWithRoute(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 10))
	for c := range propertyCases {
		drivers, nodes := genCluster(r, genShape(r))
		extra := genDrivers(r, 2+r.IntN(3), 0)
		cand := extra[len(extra)-1]
		if r.IntN(3) == 0 { // an UPDATE of an existing driver
			cand.Name = drivers[r.IntN(len(drivers))].Name
		}
		if cand.Name == v1alpha1.DefaultDriverName && r.IntN(2) == 0 {
			cand.Spec.NodeSelector = nil
		}
		rep := NewIndex(drivers, nodes, Options{}).Conflicts(cand)

		after := slices.DeleteFunc(slices.Clone(drivers), func(d v1alpha1.RBLNDriver) bool { return d.Name == cand.Name })
		after = append(after, cand)
		if len(rep.Invalid) > 0 {
			continue
		}
		res := Route(after, nodes, Options{})
		var want []Conflict
		for _, cf := range res.Conflicts {
			if slices.Contains(cf.Resources, cand.Name) {
				want = append(want, cf)
			}
		}
		if want == nil {
			want = []Conflict{}
		}
		require.Equal(t, want, rep.Ties, "case %d", c)
		owns := 0
		for _, nr := range res.Nodes {
			if nr.Owner == cand.Name && nr.Reason != ReasonConflictingNodeSelector {
				owns++
			}
		}
		require.Equal(t, owns, rep.Owns, "case %d", c)

		// Potential conflicts: exact on the node labelled with the union of both selectors.
		potential := map[string]bool{}
		for _, p := range rep.Potential {
			potential[p.Resource] = true
		}
		for name, o := range validDrivers(after) {
			if name == cand.Name {
				continue
			}
			union := maps.Clone(o.Spec.NodeSelector)
			if union == nil {
				union = map[string]string{}
			}
			compatible := true
			for k, v := range cand.Spec.NodeSelector {
				if ov, ok := union[k]; ok && ov != v {
					compatible = false
				}
				union[k] = v
			}
			if !compatible {
				require.False(t, potential[name], "case %d: %s is incompatible with the candidate", c, name)
				continue
			}
			union[operator.LabelDeployDriver] = "true"
			fr := Route(after, []Node{{Name: "future", Labels: union}}, Options{})
			tied := false
			for _, cf := range fr.Conflicts {
				tied = tied || (slices.Contains(cf.Resources, name) && slices.Contains(cf.Resources, cand.Name))
			}
			require.Equal(t, tied, potential[name], "case %d: candidate %v vs %s %v", c, cand.Spec.NodeSelector, name, o.Spec.NodeSelector)
		}
	}
}

// TestPropertyAssessAgreesWithRoute checks Assess against Route with the candidate in place:
// the nodes, pools and unpooled nodes it predicts for the candidate are exactly Route's; and
// AssessPoolLabels against Assess: the same conflicts and counts, its pools' labels.
func TestPropertyAssessAgreesWithRoute(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	for c := range propertyCases {
		shape := genShape(r)
		shape.currentOwners = true
		drivers, nodes := genCluster(r, shape)
		extra := genDrivers(r, 2+r.IntN(3), 0)
		cand := extra[len(extra)-1]
		if r.IntN(2) == 0 { // an UPDATE of an existing driver
			cand.Name = drivers[r.IntN(len(drivers))].Name
		}
		if cand.Name == v1alpha1.DefaultDriverName && r.IntN(2) == 0 {
			cand.Spec.NodeSelector = nil
		}
		ix := NewIndex(drivers, nodes, Options{})
		a := ix.Assess(&cand)
		if len(a.Invalid) > 0 {
			continue
		}
		require.Equal(t, ix.Conflicts(cand), a.ConflictReport, "case %d: Conflicts is Assess without pools", c)
		labelled := ix.AssessPoolLabels(&cand)
		require.Equal(t, a.ConflictReport, labelled.ConflictReport, "case %d", c)
		require.Equal(t, [3]int{a.Selected, a.Owns, a.Kept}, [3]int{labelled.Selected, labelled.Owns, labelled.Kept}, "case %d", c)
		var poolLabels []operator.Pool
		for _, p := range a.Pools {
			poolLabels = append(poolLabels, p.Labels)
		}
		require.ElementsMatch(t, poolLabels, labelled.PoolLabels, "case %d: AssessPoolLabels gives the labels of Assess's pools", c)
		require.Nil(t, labelled.Pools, "case %d", c)

		after := slices.DeleteFunc(slices.Clone(drivers), func(d v1alpha1.RBLNDriver) bool { return d.Name == cand.Name })
		after = append(after, cand)
		res := Route(after, nodes, Options{})
		selected, serves := 0, 0
		wantUnpooled := []NodeResult{}
		for i, nr := range res.Nodes {
			if nr.Reason != ReasonOutOfScope && matches(cand.Spec.NodeSelector, nodeByName(nodes, res.Nodes[i].Name).Labels) {
				selected++
			}
			if nr.Owner != cand.Name {
				continue
			}
			serves++
			if nr.Pool == "" {
				wantUnpooled = append(wantUnpooled, nr)
			}
		}
		require.Equal(t, selected, a.Selected, "case %d", c)
		require.Equal(t, serves, a.Owns+a.Kept, "case %d", c)
		type poolView struct {
			Name, Image, Reason string
			Nodes               []string
		}
		var want, got []poolView
		for _, p := range res.Pools {
			if p.Owner == cand.Name {
				want = append(want, poolView{p.Name, p.Image, p.Reason, p.Nodes})
			}
		}
		for _, p := range a.Pools {
			require.Equal(t, cand.Name, p.Owner)
			require.Equal(t, operator.DriverDaemonSet(cand.Name, p.Name), p.DaemonSet)
			got = append(got, poolView{p.Name, p.Image, p.Reason, p.Nodes})
		}
		require.Equal(t, want, got, "case %d", c)
		require.Len(t, a.Unpooled, len(wantUnpooled), "case %d", c)
		for i, nr := range a.Unpooled {
			require.Equal(t, wantUnpooled[i].Name, nr.Name, "case %d", c)
			require.Equal(t, wantUnpooled[i].Reason, nr.Reason, "case %d: %s", c, nr.Name)
			require.Equal(t, cand.Name, nr.Owner, "case %d", c)
		}
	}
}

func nodeByName(nodes []Node, name string) Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return Node{}
}

package webhook

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/routing"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestPolicyNodesMatchFullRouting: the policy input's nodes (the cached routing plus the
// re-routed nodes the object's selectors match) equal routing every node with the object in
// place, for random clusters and changes.
func TestPolicyNodesMatchFullRouting(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	keys := []string{v1alpha1.LabelFamily, "env", "zone"}
	vals := []string{"a", "b"}
	randSel := func(max int) map[string]string {
		sel := map[string]string{}
		for _, k := range keys[:r.IntN(max+1)] {
			sel[k] = vals[r.IntN(len(vals))]
		}
		return sel
	}
	for round := range 300 {
		var drivers []v1alpha1.RBLNDriver
		for i := range r.IntN(6) {
			drivers = append(drivers, *wt.Driver(fmt.Sprintf("rbln-driver-d%d", i), randSel(3)))
		}
		if r.IntN(2) == 0 {
			drivers = append(drivers, *wt.Driver("rbln-driver", nil))
		}
		var nodes []routing.Node
		for i := range 1 + r.IntN(12) {
			l := wt.PoolLabels("atom", "ubuntu", "22.04", "6.8.0")
			for _, k := range keys {
				if r.IntN(3) > 0 {
					l[k] = vals[r.IntN(len(vals))]
				}
			}
			if r.IntN(5) > 0 {
				l[v1alpha1.LabelDeployDriver] = "true"
			}
			if r.IntN(4) == 0 {
				l[v1alpha1.LabelOwner] = fmt.Sprintf("rbln-driver-d%d", r.IntN(6))
			}
			nodes = append(nodes, routing.Node{Name: fmt.Sprintf("n%02d", i), Labels: l})
		}
		snap := NewSnapshot(drivers, nodes, nil)
		name := fmt.Sprintf("rbln-driver-d%d", r.IntN(7))
		obj := wt.Driver(name, randSel(3))
		if r.IntN(8) == 0 {
			obj.Spec.NodeSelector = map[string]string{v1alpha1.LabelOwner: "x"} // invalid
		}
		valid := len(driverSyntaxErrors(obj)) == 0
		in := driverPolicyInput(context.Background(), snap, "UPDATE", obj, nil, valid)

		var all []v1alpha1.RBLNDriver
		for _, d := range snap.Drivers() {
			if d.Name != name {
				all = append(all, d)
			}
		}
		want := routing.Route(append(all, *obj), snap.Nodes())
		for i, n := range in.Cluster.Nodes {
			if w := want.Nodes[i]; n.Name != w.Name || n.Owner != w.Owner || n.Pool != w.Pool {
				t.Fatalf("round %d, %s: owner %q pool %q, full routing says %q %q", round, n.Name, n.Owner, n.Pool, w.Owner, w.Pool)
			}
		}
	}
}

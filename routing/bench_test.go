package routing

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// benchCluster is a realistic cluster: families atom/rebel/atom-max (and a stray Atom_X),
// Ubuntu 22.04/24.04 and RHEL 9.2 with a kernel skew, canary/prod/staging envs, zones, racks
// and teams; the default driver plus instances selecting 1-4 of those keys, a few invalid.
func benchCluster(nodes, drivers int) ([]v1alpha1.RBLNDriver, []Node) {
	r := rand.New(rand.NewPCG(42, uint64(nodes*1000+drivers)))
	return genCluster(r, clusterShape{nodes: nodes, drivers: drivers, invalidEvery: 50, currentOwners: true})
}

func BenchmarkRoute(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		for _, d := range []int{50, 500} {
			b.Run(fmt.Sprintf("nodes=%d/drivers=%d", n, d), func(b *testing.B) {
				drivers, nodes := benchCluster(n, d)
				b.ReportAllocs()
				for b.Loop() {
					_ = Route(drivers, nodes, Options{})
				}
			})
		}
	}
}

func BenchmarkConflicts(b *testing.B) {
	drivers, nodes := benchCluster(10_000, 500)
	ix := NewIndex(drivers, nodes, Options{})
	candidates := map[string]v1alpha1.RBLNDriver{
		"family":        drv("rbln-driver-bench", famSel("atom")),
		"family+canary": drv("rbln-driver-bench", canarySel()),
		"default":       drv(v1alpha1.DefaultDriverName, nil),
		"update":        withVersion(drivers[250], "9.9.9"),
	}
	for _, name := range []string{"family", "family+canary", "default", "update"} {
		cand := candidates[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = ix.Conflicts(cand)
			}
		})
	}
}

func BenchmarkNewIndex(b *testing.B) {
	drivers, nodes := benchCluster(10_000, 500)
	b.ReportAllocs()
	for b.Loop() {
		_ = NewIndex(drivers, nodes, Options{})
	}
}

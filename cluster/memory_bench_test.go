package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
)

// fleetLabels are node i's labels as a fleet's are: about 60, the operator's and NFD's among
// the kubelet's, the cloud's and NFD's CPU and PCI features, with few distinct values per key
// but the hostname (hack/perf/envup -labels fleet is the same shape on a real API server).
func fleetLabels(i int) map[string]string {
	fam := []string{"atom", "rebel", "atom-max", "rebel"}[i%4]
	l := map[string]string{
		"kubernetes.io/hostname": fmt.Sprintf("npu-%06d", i), "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3), "topology.kubernetes.io/region": "region-1",
		"node.kubernetes.io/instance-type": "rbln-" + fam, "node.kubernetes.io/nodegroup": fmt.Sprintf("npu-%s-%d", fam, i%8),
		operator.LabelDeployDriver: "true", operator.LabelFamily: fam, operator.LabelDeploySMD: "true",
		operator.LabelOSID: "ubuntu", operator.LabelOSVersion: []string{"22.04", "24.04"}[i%2],
		operator.LabelKernel: []string{"6.8.0-90-generic", "6.8.0-94-generic", "5.15.0-130-generic"}[i%3],
		"rack":               fmt.Sprintf("r%d", i%50),
	}
	for f := range 46 { // NFD's CPU flags, kernel config, PCI devices...
		l[fmt.Sprintf("feature.node.kubernetes.io/cpu-cpuid.FLAG%02d", f)] = "true"
	}
	return l
}

// BenchmarkViewMemory measures what serve's cluster view holds at a size: the nodes (through
// the Node store, kept to the labels a decision reads), the drivers, the snapshot with its
// routing index and the policy engine's cluster view (the bundled library), after a
// collection; and the same view keeping every label, for comparison. Reported as MB of live
// heap and bytes per node; docs/sizing.md derives the cost of a node and of a driver from the
// sizes. One iteration is the measurement: run with -benchtime 1x.
func BenchmarkViewMemory(b *testing.B) {
	// A policy that reads data.driverguard_cluster.nodes: the engine then holds every node as
	// a Rego value too.
	readsNodes := b.TempDir()
	if err := os.WriteFile(filepath.Join(readsNodes, "nodes.rego"), []byte(`package driverguard.nodes

deny contains "quarantine" if {
	some node in data.driverguard_cluster.nodes
	node.labels.rack == "quarantine"
}
`), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct {
		nodes, drivers int
		labels         string // kept, all, or kept+nodes (a policy reads the nodes)
	}{
		{10_000, 100, "kept"}, {100_000, 100, "kept"}, {100_000, 1_000, "kept"},
		{10_000, 100, "all"}, {100_000, 1_000, "all"}, {100_000, 1_000, "kept+nodes"},
	} {
		compact := size.labels != "all"
		b.Run(fmt.Sprintf("nodes=%d/drivers=%d/labels=%s", size.nodes, size.drivers, size.labels), func(b *testing.B) {
			for b.Loop() {
				func() {
					// A new engine each time: it holds the view it was last synced with.
					opts := policy.Options{Metrics: prometheus.NewRegistry()}
					if size.labels == "kept+nodes" {
						opts.Dirs = []string{readsNodes}
					}
					engine, err := policy.New(context.Background(), opts)
					if err != nil {
						b.Fatal(err)
					}
					before := liveHeap()
					var keys *LabelKeys
					if compact {
						keys = NewLabelKeys("rack", "slot")
					}
					s := NewInformed(nil, InformedOptions{LabelKeys: keys})
					s.SyncTo(engine)
					store := nodeStore{s}
					for i := range size.nodes {
						if err := store.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("npu-%06d", i), Labels: fleetLabels(i)}}); err != nil {
							b.Fatal(err)
						}
					}
					for i := range size.drivers {
						s.state.SetDriver(v1alpha1.RBLNDriver{
							ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rbln-driver-d%04d", i), Generation: 1},
							Spec: v1alpha1.RBLNDriverSpec{Version: "3.2.0", NodeSelector: map[string]string{
								operator.LabelFamily: "atom", "rack": fmt.Sprintf("r%d", i%50), "slot": fmt.Sprintf("s%d", i)}},
						})
					}
					s.synced.Store(true)
					s.gen.Add(1)
					snap, err := s.Snapshot(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					after := liveHeap()
					runtime.KeepAlive(snap)
					runtime.KeepAlive(s)
					runtime.KeepAlive(engine)
					b.ReportMetric(float64(after-before)/1e6, "MB")
					b.ReportMetric(float64(after-before)/float64(size.nodes), "B/node")
				}()
			}
		})
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

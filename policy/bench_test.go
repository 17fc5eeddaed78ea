package policy_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
)

// trivialPolicy is the baseline: one rule that never fires, so the difference to the library
// is the library's own cost (input conversion and query overhead are in both).
const trivialPolicy = `package driverguard.trivial

deny contains "never" if input.object.kind == "Nothing"
`

// BenchmarkEvaluate measures one prepared evaluation for one RBLNDriver (rbln-driver-atom-canary
// of examples/multi-driver.yaml, with its routing on the example nodes) with a cluster view
// (data.driverguard_cluster) of the 12 example nodes or 10,000 generated ones: the full
// bundled library versus a single trivial rule, in the same run. The cluster view is held
// once by the engine, so the cost must not grow with it (docs/webhook.md "Cost"). hack/bench.sh reports
// the ratios.
func BenchmarkEvaluate(b *testing.B) {
	trivialDir := b.TempDir()
	writeFile(b, trivialDir, "trivial.rego", trivialPolicy)
	in := canaryInput(b, renderInputs(b, exampleValues, exampleNodes))
	example := readNodes(b, exampleNodes)
	for _, size := range []int{12, 10000} {
		view := &policy.ClusterView{}
		for i := 0; i < size; i++ {
			src := example[i%len(example)]
			view.Nodes = append(view.Nodes, policy.ClusterNode{Name: fmt.Sprintf("%s-%05d", src.Name, i), Labels: maps.Clone(src.Labels), Owner: src.Labels[operator.LabelOwner]})
		}
		for _, set := range []struct {
			name string
			opts policy.Options
		}{
			{"trivial", policy.Options{ExcludeLibrary: true, Dirs: []string{trivialDir}}},
			{"library", policy.Options{}},
		} {
			b.Run(fmt.Sprintf("%s/nodes=%d", set.name, size), func(b *testing.B) {
				set.opts.Metrics = prometheus.NewRegistry()
				e, err := policy.New(b.Context(), set.opts)
				require.NoError(b, err)
				require.NoError(b, e.SyncCluster(b.Context(), view))
				b.ReportAllocs()
				for b.Loop() {
					d, err := e.Evaluate(b.Context(), in)
					if err != nil || len(d.Deny) != 0 {
						b.Fatal(err, d)
					}
				}
			})
		}
	}
}

func canaryInput(b *testing.B, inputs []*policy.Input) *policy.Input {
	for _, in := range inputs {
		if objectName(in) == "rbln-driver-atom-canary" {
			return in
		}
	}
	b.Fatal("no rbln-driver-atom-canary")
	return nil
}

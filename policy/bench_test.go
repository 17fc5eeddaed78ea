package policy_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/policy"
)

// trivialPolicy is the baseline: one rule that never fires, so the difference to the library
// is the library's own cost (input conversion and query overhead are in both).
const trivialPolicy = `package driverguard.trivial

deny contains "never" if input.object.kind == "Nothing"
`

// BenchmarkEvaluate measures one prepared evaluation for one RBLNDriver (rbln-driver-atom-canary
// of examples/multi-driver.yaml, with the 12 example nodes or 1000 generated ones): the full
// bundled library versus a single trivial rule, in the same run. hack/bench.sh reports both.
func BenchmarkEvaluate(b *testing.B) {
	trivialDir := b.TempDir()
	writeFile(b, trivialDir, "trivial.rego", trivialPolicy)
	small := canaryInput(b, renderInputs(b, exampleValues, exampleNodes))
	large := *small
	large.Cluster.Nodes = manyNodes(small.Cluster.Nodes, 1000)
	for _, in := range []struct {
		name  string
		input *policy.Input
	}{{"nodes=12", small}, {"nodes=1000", &large}} {
		for _, set := range []struct {
			name string
			opts policy.Options
		}{
			{"trivial", policy.Options{ExcludeLibrary: true, Dirs: []string{trivialDir}}},
			{"library", policy.Options{}},
		} {
			b.Run(set.name+"/"+in.name, func(b *testing.B) {
				set.opts.Metrics = prometheus.NewRegistry()
				e, err := policy.New(b.Context(), set.opts)
				require.NoError(b, err)
				b.ReportAllocs()
				for b.Loop() {
					d, err := e.Evaluate(b.Context(), in.input)
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

// manyNodes repeats the example nodes under new names up to n nodes.
func manyNodes(nodes []policy.Node, n int) []policy.Node {
	out := make([]policy.Node, 0, n)
	for i := 0; len(out) < n; i++ {
		src := nodes[i%len(nodes)]
		out = append(out, policy.Node{Name: fmt.Sprintf("%s-%04d", src.Name, i), Labels: maps.Clone(src.Labels), Owner: src.Owner, Pool: src.Pool})
	}
	return out
}

package render_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// benchValues builds values with n instances that exercise every inheritance rule.
func benchValues(n int) map[string]any {
	instances := map[string]any{}
	for i := range n {
		inst := map[string]any{
			"nodeSelector": map[string]any{"rebellions.ai/npu.family": fmt.Sprintf("fam%d", i%7), "pool": fmt.Sprintf("p%d", i)},
			"image":        map[string]any{"tag": fmt.Sprintf("3.%d.%d", i%5, i)},
		}
		switch i % 4 {
		case 0:
			inst["resources"] = map[string]any{"limits": map[string]any{"cpu": "2"}}
		case 1:
			inst["tolerations"] = []any{}
		case 2:
			inst["annotations"] = map[string]any{"team": nil, "canary": "true"}
		}
		instances[fmt.Sprintf("inst-%04d", i)] = inst
	}
	return map[string]any{"driver": map[string]any{
		"resources":   map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "128Mi"}},
		"annotations": map[string]any{"team": "npu"},
		"tolerations": []any{map[string]any{"key": "npu", "operator": "Exists"}},
		"instances":   instances,
	}}
}

// BenchmarkRender measures the Go renderer (coalescing, checks, expansion, provenance) for
// 10, 100 and 500 instances. hack/bench.sh sets it next to `helm template` for the same values.
func BenchmarkRender(b *testing.B) {
	ch, err := charts.Driverguard()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10, 100, 500} {
		vals := benchValues(n)
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := render.Render(ch, vals, render.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Drivers) != n+1 {
					b.Fatalf("rendered %d drivers, want %d", len(r.Drivers), n+1)
				}
			}
		})
	}
}

// BenchmarkLargeMap measures reading, rendering and writing values with 100,000 annotations:
// the cost of a large map (a million took 31 s and 2 GB before its hot spots — provenance,
// copies, go-yaml's key sort and event queue — were fixed).
// BenchmarkLargeMap: the largest annotations map render accepts (validation.MaxAnnotations
// keys) read, rendered and written; and 100,000 keys, which render refuses by their count.
func BenchmarkLargeMap(b *testing.B) {
	ch, err := charts.Driverguard()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		keys    int
		refused bool
	}{{validation.MaxAnnotations, false}, {100_000, true}} {
		b.Run(fmt.Sprintf("keys=%d", tc.keys), func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString("driver:\n  annotations:\n")
			for i := range tc.keys {
				fmt.Fprintf(&sb, "    k%d: v\n", i)
			}
			file := filepath.Join(b.TempDir(), "values.yaml")
			if err := os.WriteFile(file, []byte(sb.String()), 0o600); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				vals, src, err := render.Load(context.Background(), render.ValuesOptions{ValueFiles: []string{file}})
				if err != nil {
					b.Fatal(err)
				}
				r, err := render.Render(ch, vals, render.Options{Sources: src, SkipProvenance: true})
				var invalid *render.InvalidValuesError
				if tc.refused {
					if !errors.As(err, &invalid) {
						b.Fatalf("%d annotations: want an InvalidValuesError, got %v", tc.keys, err)
					}
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				if _, err := render.Manifest(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

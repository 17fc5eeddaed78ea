package render_test

import (
	"testing"

	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// BenchmarkManifest measures writing 500 rendered RBLNDrivers as YAML.
func BenchmarkManifest(b *testing.B) {
	ch, err := charts.Driverguard()
	if err != nil {
		b.Fatal(err)
	}
	r, err := render.Render(ch, benchValues(500), render.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.Manifest(r); err != nil {
			b.Fatal(err)
		}
	}
}

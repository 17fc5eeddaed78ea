package render_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// TestLocateValues: an object's field → the values key it was rendered from, across several
// values files and --set (which has no line).
func TestLocateValues(t *testing.T) {
	f := writeFiles(t, map[string]string{
		"base.yaml": `driver:
  image:
    tag: "2.0.0"
  upgradePolicy:
    maxParallelUpgrades: 2
  instances:
    canary:
      nodeSelector: {env: canary}
      image: {registry: reg.internal}
`,
		"prod.yaml": `driver:
  instances:
    canary:
      image:
        tag: "2.1.0"
    atom:
      nodeSelector:
        rebellions.ai/npu.family: atom
`,
	})
	opts := render.ValuesOptions{
		ValueFiles: []string{f["base.yaml"], f["prod.yaml"]},
		Values:     []string{"driver.instances.rebel.nodeSelector.zone=b"},
	}
	vals, src, err := render.Load(context.Background(), opts)
	require.NoError(t, err)
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	r, err := render.Render(ch, vals, render.Options{Sources: src, SkipProvenance: true})
	require.NoError(t, err)

	tests := []struct {
		name             string
		kind, obj, field string
		path, file       string
		keyLine, keyCol  int
		set              string // the --set argument, for a value without a line
		found            bool
	}{
		{name: "an instance's own field in the later file", kind: "RBLNDriver", obj: "rbln-driver-canary", field: "spec.version",
			path: "driver.instances.canary.image.tag", file: "prod.yaml", keyLine: 5, keyCol: 9, found: true},
		{name: "an instance's own field in the first file", kind: "RBLNDriver", obj: "rbln-driver-canary", field: "spec.registry",
			path: "driver.instances.canary.image.registry", file: "base.yaml", keyLine: 9, keyCol: 15, found: true},
		{name: "a selector", kind: "RBLNDriver", obj: "rbln-driver-canary", field: "spec.nodeSelector",
			path: "driver.instances.canary.nodeSelector", file: "base.yaml", keyLine: 8, keyCol: 7, found: true},
		{name: "a label key of a selector", kind: "RBLNDriver", obj: "rbln-driver-atom", field: "spec.nodeSelector[rebellions.ai/npu.family]",
			path: "driver.instances.atom.nodeSelector[rebellions.ai/npu.family]", file: "prod.yaml", keyLine: 8, keyCol: 9, found: true},
		{name: "inherited from the driver block", kind: "RBLNDriver", obj: "rbln-driver-atom", field: "spec.version",
			path: "driver.image.tag", file: "base.yaml", keyLine: 3, keyCol: 5, found: true},
		{name: "a chart default: the instance's key", kind: "RBLNDriver", obj: "rbln-driver-atom", field: "spec.imagePullPolicy",
			path: "driver.instances.atom", file: "prod.yaml", keyLine: 6, keyCol: 5, found: true},
		{name: "a policy finding: the instance's key, in the last file that writes it", kind: "RBLNDriver", obj: "rbln-driver-canary",
			path: "driver.instances.canary", file: "prod.yaml", keyLine: 3, keyCol: 5, found: true},
		{name: "the default driver", kind: "RBLNDriver", obj: "rbln-driver", field: "spec.version",
			path: "driver.image.tag", file: "base.yaml", keyLine: 3, keyCol: 5, found: true},
		{name: "the cluster policy's field", kind: "RBLNClusterPolicy", obj: "rbln-cluster-policy", field: "spec.driver.upgradePolicy.maxParallelUpgrades",
			path: "driver.upgradePolicy.maxParallelUpgrades", file: "base.yaml", keyLine: 5, keyCol: 5, found: true},
		{name: "an instance only --set wrote: no line", kind: "RBLNDriver", obj: "rbln-driver-rebel", field: "spec.nodeSelector",
			path: "driver.instances.rebel.nodeSelector", set: "driver.instances.rebel.nodeSelector.zone=b", found: true},
		{name: "an object not rendered", kind: "RBLNDriver", obj: "rbln-driver-nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := r.LocateValues(tc.kind, tc.obj, tc.field)
			assert.Equal(t, tc.found, got.Found)
			if !tc.found {
				return
			}
			assert.Equal(t, tc.path, got.Path)
			if tc.set != "" {
				assert.Equal(t, render.FromSet, got.Kind)
				assert.Equal(t, tc.set, got.Source)
				assert.Zero(t, got.Line)
				return
			}
			assert.Equal(t, render.FromFile, got.Kind)
			assert.Equal(t, f[tc.file], got.Source)
			assert.Equal(t, tc.keyLine, got.KeyLine, "key line")
			assert.Equal(t, tc.keyCol, got.KeyColumn, "key column")
		})
	}
}

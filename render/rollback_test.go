package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// TestRollback: the rollback values of a change, given after the new values exactly as a user
// passes them (`-f new.yaml -f rollback.yaml`, the overlay read back from its YAML), render
// the current RBLNDrivers again — updated ones with their old spec, deleted ones back, created
// ones gone (the instances it says to delete from the new values; a created default by
// deployDefault: false) — and the current upgrade policy; the drivers the change leaves alone
// stay as they are.
func TestRollback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, current, next string
		restores, removes   []string
		deleteFromValues    []string
	}{
		{
			name: "an instance updated, one created (examples/multi-driver.yaml over its cluster)",
			current: `driver:
  image: {tag: "3.2.2"}
  imagePullSecrets: [drivercred]
  resources: {requests: {cpu: 250m, memory: 64Mi}, limits: {cpu: 500m, memory: 128Mi}}
  tolerations: [{key: rebellions.ai/npu, operator: Exists, effect: NoSchedule}]
  instances:
    rebel:
      tolerations: []
      nodeSelector: {rebellions.ai/npu.family: rebel}
`,
			next:             "@../examples/multi-driver.yaml",
			restores:         []string{"rbln-driver-rebel"},
			removes:          []string{"rbln-driver-atom-canary"},
			deleteFromValues: []string{"driver.instances.atom-canary"},
		},
		{
			name: "the top-level block changed: the default and what the instances inherit",
			current: `driver:
  image: {tag: "3.2.2", pullPolicy: Always}
  annotations: {team: npu}
  env: [{name: RBLN_LOG, value: info}]
  priorityClassName: system-node-critical
  manager: {image: {tag: v0.2.2}}
  instances:
    atom:
      nodeSelector: {rebellions.ai/npu.family: atom, env: staging}
    rebel:
      image: {tag: "3.1.0"}
      annotations: {owner: rebel}
      nodeSelector: {rebellions.ai/npu.family: rebel}
`,
			next: `driver:
  image: {tag: "3.3.0", registry: registry.example.com}
  annotations: {team: platform, cost-center: "42"}
  env: []
  resources: {limits: {memory: 1Gi}}
  tolerations: [{operator: Exists}]
  manager: {image: {tag: v0.3.0}}
  smd: null
  instances:
    atom:
      nodeSelector: {rebellions.ai/npu.family: atom, env: prod}
    rebel:
      image: {tag: "3.1.0"}
      annotations: {owner: rebel}
      nodeSelector: {rebellions.ai/npu.family: rebel}
  upgradePolicy: {autoUpgrade: true, maxParallelUpgrades: 0, drain: {enable: true}}
`,
			restores: []string{"rbln-driver", "rbln-driver-atom", "rbln-driver-rebel"},
		},
		{
			name: "instances deleted, the default no longer deployed",
			current: `driver:
  instances:
    atom: {nodeSelector: {rebellions.ai/npu.family: atom}, image: {tag: "3.2.1"}, resources: {limits: {rebellions.ai/atom: "1"}}}
    old: {nodeSelector: {pool: old}}
`,
			next: `driver:
  deployDefault: false
  instances:
    atom: {nodeSelector: {rebellions.ai/npu.family: atom}}
`,
			restores: []string{"rbln-driver", "rbln-driver-atom", "rbln-driver-old"},
		},
		{
			name:     "the driver disabled",
			current:  "driver:\n  instances:\n    atom: {nodeSelector: {rebellions.ai/npu.family: atom}}\n",
			next:     "driver:\n  enabled: false\n",
			restores: []string{"rbln-driver", "rbln-driver-atom"},
		},
		{
			name:    "the default created",
			current: "driver:\n  deployDefault: false\n  instances:\n    atom: {nodeSelector: {rebellions.ai/npu.family: atom}}\n",
			next:    "driver:\n  instances:\n    atom: {nodeSelector: {rebellions.ai/npu.family: atom}}\n",
			removes: []string{"rbln-driver"},
		},
		{
			name:    "no change",
			current: "driver:\n  image: {tag: \"3.2.2\"}\n",
			next:    "driver:\n  image: {tag: \"3.2.2\"}\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write := func(name, content string) string {
				if path, ok := strings.CutPrefix(content, "@"); ok {
					return path
				}
				p := filepath.Join(dir, name)
				require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
				return p
			}
			currentFile, nextFile := write("current.yaml", tc.current), write("next.yaml", tc.next)
			current := renderFiles(t, currentFile)
			next := renderFiles(t, nextFile)

			want := render.RollbackTarget{ClusterPolicy: &current.ClusterPolicy}
			have := map[string]bool{}
			for _, d := range current.Drivers {
				have[d.Name] = true
				want.Drivers = append(want.Drivers, d)
			}
			for _, d := range next.Drivers {
				if !have[d.Name] {
					want.Absent = append(want.Absent, d.Name)
				}
			}
			ch, err := charts.Driverguard()
			require.NoError(t, err)
			vals, _, err := render.Load(t.Context(), render.ValuesOptions{ValueFiles: []string{nextFile}})
			require.NoError(t, err)
			rb, err := render.MakeRollback(t.Context(), ch, vals, render.Options{}, want)
			require.NoError(t, err)
			assert.Empty(t, rb.Problems)
			assert.True(t, rb.Verified)
			assert.Equal(t, nonNil(tc.restores), rb.Restores)
			assert.Equal(t, nonNil(tc.removes), rb.Removes)
			assert.Equal(t, nonNil(tc.deleteFromValues), rb.DeleteFromValues)
			if rb.Empty() {
				assert.Empty(t, rb.YAML)
				return
			}

			// As the user runs it: the new values without the entries to delete, then the
			// overlay's YAML.
			edited := deletePaths(t, nextFile, rb.DeleteFromValues)
			files := []string{write("next-edited.yaml", edited)}
			if rb.YAML != "" {
				files = append(files, write("rollback.yaml", rb.YAML))
			}
			back := renderFiles(t, files...)
			got := map[string]v1alpha1.RBLNDriverSpec{}
			for _, d := range back.Drivers {
				got[d.Name] = d.Spec
			}
			require.Len(t, got, len(current.Drivers), "exactly the current drivers render:\n%s", rb.YAML)
			for _, d := range current.Drivers {
				g, ok := got[d.Name]
				require.True(t, ok, "%s renders", d.Name)
				assert.True(t, equality.Semantic.DeepEqual(d.Spec, g), "%s: %+v\nwant %+v\nrollback values:\n%s", d.Name, g, d.Spec, rb.YAML)
			}
			assert.True(t, equality.Semantic.DeepEqual(current.ClusterPolicy.Spec, back.ClusterPolicy.Spec), "the upgrade policy")
		})
	}
}

// TestRollbackProblems: what no values can give back is said, not guessed.
func TestRollbackProblems(t *testing.T) {
	t.Parallel()
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	handMade := v1alpha1.RBLNDriver{}
	handMade.Name = "team-driver"
	handMade.Spec = v1alpha1.RBLNDriverSpec{Registry: "r.example.com", Image: "a/b", Version: "1", NodeSelector: map[string]string{"a": "b"}}
	rb, err := render.MakeRollback(t.Context(), ch, map[string]any{}, render.Options{}, render.RollbackTarget{Drivers: []v1alpha1.RBLNDriver{handMade}, Absent: []string{"Bad_Name"}})
	require.NoError(t, err)
	assert.False(t, rb.Verified)
	assert.Equal(t, []string{
		"RBLNDriver team-driver: no values key renders this name (the chart renders rbln-driver and rbln-driver-<instance key>): restore it by hand",
		"RBLNDriver Bad_Name: no values key renders this name: remove it by hand",
	}, rb.Problems)

	// A selector key the change adds: values files merge maps, and null is no selector value.
	current := renderFiles(t, writeTemp(t, "driver:\n  instances:\n    atom: {nodeSelector: {rebellions.ai/npu.family: atom}}\n"))
	vals := map[string]any{"driver": map[string]any{"instances": map[string]any{"atom": map[string]any{"nodeSelector": map[string]any{"rebellions.ai/npu.family": "atom", "env": "prod"}}}}}
	rb, err = render.MakeRollback(t.Context(), ch, vals, render.Options{}, render.RollbackTarget{Drivers: current.Drivers})
	require.NoError(t, err)
	assert.False(t, rb.Verified)
	assert.Equal(t, []string{"RBLNDriver rbln-driver-atom: the change adds the nodeSelector key(s) env, which no values overlay can remove " +
		"(values files merge maps, and a selector value must be a string, not null): remove them from the new values, or use helm rollback"}, rb.Problems)
}

// deletePaths is the values file with the entries at paths (driver.instances.KEY) deleted, as
// YAML.
func deletePaths(t *testing.T, file string, paths []string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var vals map[string]any
	require.NoError(t, yaml.Unmarshal(data, &vals))
	for _, p := range paths {
		key, ok := strings.CutPrefix(p, "driver.instances.")
		require.True(t, ok, p)
		delete(vals["driver"].(map[string]any)["instances"].(map[string]any), key)
	}
	out, err := yaml.Marshal(vals)
	require.NoError(t, err)
	return string(out)
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func renderFiles(t *testing.T, files ...string) *render.Result {
	t.Helper()
	vals, _, err := render.Load(t.Context(), render.ValuesOptions{ValueFiles: files})
	require.NoError(t, err)
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	r, err := render.RenderContext(t.Context(), ch, vals, render.Options{SkipProvenance: true})
	require.NoError(t, err, "%v", files)
	return r
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

package differential

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/render"
)

// generatedInvalidCases is how many generated invalid values files TestGeneratedInvalid checks.
const generatedInvalidCases = 200

// mutations each turn valid values into invalid ones in one specific way.
var mutations = []struct {
	name  string
	apply func(g *generator, d map[string]any)
}{
	{"typo in an instance field", func(g *generator, d map[string]any) {
		inst := g.someInstance(d)
		inst[g.pick("imgae", "nodeselector", "tolerations_", "priorityclassName", "envs").(string)] = map[string]any{}
	}},
	{"typo in a nested field", func(g *generator, d map[string]any) {
		inst := g.someInstance(d)
		inst["image"] = map[string]any{g.pick("tga", "registy", "pullpolicy").(string): "x"} //nolint:misspell // mistyped keys on purpose
	}},
	{"top-level-only field on an instance", func(g *generator, d map[string]any) {
		g.someInstance(d)[g.pick("upgradePolicy", "enabled", "deployDefault", "instances").(string)] = map[string]any{}
	}},
	{"reserved selector key", func(g *generator, d map[string]any) {
		sel := map[string]any{g.pick("rebellions.ai/npu.driver.owner", "rebellions.ai/npu.deploy.driver").(string): "true"}
		if g.chance(0.5) {
			d["nodeSelector"] = sel
		} else {
			g.someInstance(d)["nodeSelector"] = sel
		}
	}},
	{"bad instance key", func(g *generator, d map[string]any) {
		g.someInstance(d)
		inst := d["instances"].(map[string]any)
		inst[g.pick("Upper", "under_score", "-dash", "dash-", "a.b", "abcdefghij-abcdefghij-abcdefghij-abcdefghij").(string)] = map[string]any{"nodeSelector": map[string]any{"k": "v"}}
	}},
	{"non-string label value", func(g *generator, d map[string]any) {
		g.someInstance(d)["nodeSelector"] = map[string]any{"k": g.pick(true, 2, 1.5)}
	}},
	{"invalid label value", func(g *generator, d map[string]any) {
		g.someInstance(d)["nodeSelector"] = map[string]any{"k": g.pick("a b", "-x", "x/y")}
	}},
	{"empty instance selector", func(g *generator, d map[string]any) {
		inst := g.someInstance(d)
		if g.chance(0.5) {
			inst["nodeSelector"] = map[string]any{}
		} else {
			delete(inst, "nodeSelector")
		}
	}},
	{"smd tag", func(g *generator, d map[string]any) {
		d["smd"] = map[string]any{"image": map[string]any{"tag": "1.0"}}
	}},
	{"negative upgrade count", func(g *generator, d map[string]any) {
		d["upgradePolicy"] = map[string]any{g.pick("maxParallelUpgrades", "autoUpgrade").(string): -1}
	}},
	{"instances with driver disabled", func(g *generator, d map[string]any) {
		d["enabled"] = false
		g.someInstance(d)
	}},
	{"no default and no instances", func(g *generator, d map[string]any) {
		d["enabled"], d["deployDefault"], d["instances"] = true, false, map[string]any{}
	}},
	{"tag that is no OCI tag", func(g *generator, d map[string]any) {
		g.someInstance(d)["image"] = map[string]any{"tag": g.pick("1.0+b", ".x", "a b", 3.1)}
	}},
	{"null removes a required value", func(g *generator, d map[string]any) {
		g.someInstance(d)["image"] = map[string]any{g.pick("tag", "registry", "repository").(string): nil}
	}},
	{"bad pull policy", func(g *generator, d map[string]any) {
		d["image"] = map[string]any{"pullPolicy": g.pick("always", "Sometimes")}
	}},
	{"bad toleration", func(g *generator, d map[string]any) {
		d["tolerations"] = []any{g.pick(map[string]any{"opertor": "Exists"}, map[string]any{"operator": "Maybe"}, nil)}
	}},
	{"unknown root key", func(g *generator, d map[string]any) {
		d["__root__"] = g.pick("drivers", "Driver", "image")
	}},
}

// someInstance returns an instance of d, adding one when there is none.
func (g *generator) someInstance(d map[string]any) map[string]any {
	inst, _ := d["instances"].(map[string]any)
	if inst == nil {
		inst = map[string]any{}
		d["instances"] = inst
	}
	for _, k := range sortedMapKeys(inst) {
		if m, ok := inst[k].(map[string]any); ok {
			return m
		}
	}
	m := map[string]any{"nodeSelector": map[string]any{"k": "v"}}
	inst[g.instanceKey()] = m
	return m
}

// TestGeneratedInvalid applies one mutation to generated valid values and requires both the
// chart (helm's engine) and the Go renderer to reject the result, the Go renderer with its own
// checks.
func TestGeneratedInvalid(t *testing.T) {
	if testing.Short() {
		t.Skip("renders hundreds of charts")
	}
	ch := loadChartDir(t)
	dir := t.TempDir()
	for i := range generatedInvalidCases {
		seed := uint64(100000 + i)
		g := newGenerator(seed)
		vals := g.values()
		d := vals["driver"].(map[string]any)
		if d["enabled"] == false {
			d["enabled"] = true
		}
		m := mutations[i%len(mutations)]
		m.apply(g, d)
		if root, ok := d["__root__"]; ok {
			delete(d, "__root__")
			vals[root.(string)] = map[string]any{}
		}
		loaded, data := loadAsValuesFile(t, filepath.Join(dir, fmt.Sprintf("invalid-%03d.yaml", i)), vals)

		_, helmErr := helmEngine(ch, loaded)
		_, goErr := goRender(ch, loaded)
		require.Error(t, helmErr, "seed %d (%s): helm accepted invalid values:\n%s", seed, m.name, data)
		require.Error(t, goErr, "seed %d (%s): the Go renderer accepted invalid values:\n%s", seed, m.name, data)
		var invalid *render.InvalidValuesError
		require.True(t, errors.As(goErr, &invalid), "seed %d (%s): only the schema backstop caught it: %v\n%s", seed, m.name, goErr, data)
	}
}

package differential

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/render"
)

// generatedCases is how many random valid values files TestGenerated renders.
const generatedCases = 520

// TestGenerated renders reproducible random valid values through helm's own engine
// (pkg/action, client-only, in-process: the engine `helm template` runs), the real helm v3 and
// helm v4 binaries, and the Go renderer, and requires equal objects from all four. Each input
// is written to a file and loaded the way `-f` loads it.
func TestGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("renders hundreds of charts")
	}
	ch := loadChartDir(t)
	helms := helmBinaries(t)
	dir := t.TempDir()
	type generated struct {
		file   string
		data   []byte
		loaded map[string]any
		helm   map[string]objects // by binary
		errs   map[string]error
	}
	cases := make([]*generated, generatedCases)
	for i := range cases {
		file := filepath.Join(dir, fmt.Sprintf("gen-%03d.yaml", i))
		loaded, data := loadAsValuesFile(t, file, newGenerator(uint64(i)).values())
		cases[i] = &generated{file: file, data: data, loaded: loaded, helm: map[string]objects{}, errs: map[string]error{}}
	}
	// The binaries, a few processes at a time (each run is mostly start-up).
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		slots = make(chan struct{}, 4)
	)
	for _, c := range cases {
		for name, bin := range helms {
			wg.Go(func() {
				slots <- struct{}{}
				defer func() { <-slots }()
				objs, err := helmTemplate(t, bin, c.file)
				mu.Lock()
				defer mu.Unlock()
				c.helm[name], c.errs[name] = objs, err
			})
		}
	}
	wg.Wait()
	for i, c := range cases {
		seed := uint64(i)
		fromEngine, err := helmEngine(ch, c.loaded)
		require.NoError(t, err, "seed %d: helm's engine rejected a generated valid input:\n%s", seed, c.data)
		fromGo, err := goRender(ch, c.loaded)
		require.NoError(t, err, "seed %d: the Go renderer rejected a generated valid input:\n%s", seed, c.data)
		ok := t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			assertSameObjects(t, "helm's engine", fromEngine, fromGo)
			for _, name := range slices.Sorted(maps.Keys(helms)) {
				require.NoError(t, c.errs[name], "%s rejected a generated valid input", name)
				assertSameObjects(t, name, c.helm[name], fromGo)
			}
		})
		if !ok {
			t.Logf("values of seed %d:\n%s", seed, c.data)
		}
	}
}

// loadAsValuesFile writes vals to file and loads it back the way `-f` does, returning the
// loaded values and the file's content (for failure messages).
func loadAsValuesFile(t *testing.T, file string, vals map[string]any) (map[string]any, []byte) {
	t.Helper()
	data, err := yaml.Marshal(vals)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o600))
	loaded, err := render.LoadValues(render.ValuesOptions{ValueFiles: []string{file}})
	require.NoError(t, err)
	return loaded, data
}

// generator builds random but valid driverguard values. The same seed gives the same values.
type generator struct {
	r *rand.Rand
}

func newGenerator(seed uint64) *generator {
	return &generator{r: rand.New(rand.NewPCG(seed, 0x6472697665726775))}
}

func (g *generator) pick(options ...any) any { return options[g.r.IntN(len(options))] }
func (g *generator) chance(p float64) bool   { return g.r.Float64() < p }

var (
	labelKeys   = []string{"rebellions.ai/npu.family", "env", "example.com/pool", "topology.kubernetes.io/zone", "gen", "a.b.c/d_e.f"}
	labelValues = []string{"atom", "rebel", "canary", "a", "", "x-1", "v1.2", "Z_9"}
	tags        = []string{"3.2.2", "3.3.0-rc1", "4.0", "3.10", "v1", "1_0", "latest", "3.2.2-hotfix.1"}
	registries  = []string{"repo.rebellions.ai", "registry.local:5000", "mirror.example", "localhost"}
	repos       = []string{"rebellions/rbln-driver", "rbln-driver", "a/b/c", "team_x/driver-1"}
)

func (g *generator) values() map[string]any {
	d := map[string]any{}
	enabled := !g.chance(0.05)
	if !enabled || g.chance(0.2) {
		d["enabled"] = enabled
	}
	if g.chance(0.7) {
		d["image"] = g.image(false)
	}
	g.inheritable(d, false)
	if g.chance(0.3) {
		d["nodeSelector"] = g.selector(0)
	}
	if g.chance(0.4) {
		d["upgradePolicy"] = g.upgradePolicy()
	}
	if enabled {
		n := g.r.IntN(6)
		if g.chance(0.15) {
			d["deployDefault"] = false
			n = max(n, 1)
		}
		inst := map[string]any{}
		for len(inst) < n {
			inst[g.instanceKey()] = g.instance()
		}
		if n > 0 || g.chance(0.2) {
			d["instances"] = inst
		}
	}
	return map[string]any{"driver": d}
}

func (g *generator) instanceKey() string {
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	n := 1 + g.r.IntN(40)
	if g.chance(0.15) {
		n = 40
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[g.r.IntN(len(alnum))]
		if i > 0 && i < n-1 && g.chance(0.15) {
			b[i] = '-'
		}
	}
	return string(b)
}

func (g *generator) image(instance bool) map[string]any {
	img := map[string]any{}
	if g.chance(0.6) {
		img["tag"] = g.pick(anySlice(tags)...)
	}
	if g.chance(0.3) {
		img["registry"] = g.pick(anySlice(registries)...)
	}
	if g.chance(0.3) {
		img["repository"] = g.pick(anySlice(repos)...)
	}
	if g.chance(0.3) {
		img["pullPolicy"] = g.pick("Always", "IfNotPresent", "Never", "")
		if instance && g.chance(0.3) {
			img["pullPolicy"] = nil
		}
	}
	return img
}

// clearValue is a way to clear an inherited value on an instance: null or the empty value.
func (g *generator) clearValue(empty any) any {
	if g.chance(0.5) {
		return nil
	}
	return empty
}

func (g *generator) inheritable(m map[string]any, instance bool) {
	if g.chance(0.3) {
		if instance && g.chance(0.3) {
			m["imagePullSecrets"] = g.clearValue([]any{})
		} else {
			m["imagePullSecrets"] = anySlice(g.subset([]string{"drivercred", "mirror-cred", "team.cred"}))
		}
	}
	if g.chance(0.3) {
		if instance && g.chance(0.2) {
			m["resources"] = nil
		} else {
			m["resources"] = g.resources(instance)
		}
	}
	if g.chance(0.25) {
		if instance && g.chance(0.2) {
			m["manager"] = nil
		} else {
			img := map[string]any{}
			if g.chance(0.6) {
				img["tag"] = g.pick("v0.2.2", "v0.3.0", "v0.1.9")
			}
			if g.chance(0.3) {
				img["registry"] = g.pick(anySlice(registries)...)
			}
			if instance && g.chance(0.3) {
				img["pullPolicy"] = nil
			}
			m["manager"] = map[string]any{"image": img}
		}
	}
	if g.chance(0.2) {
		img := map[string]any{}
		if g.chance(0.6) {
			img["registry"] = g.pick(anySlice(registries)...)
		}
		if g.chance(0.4) {
			img["repository"] = g.pick("rebellions/rbln-smd", "smd")
		}
		m["smd"] = map[string]any{"image": img}
	}
	if g.chance(0.3) {
		ann := map[string]any{}
		for _, k := range g.subset([]string{"team", "cost-center", "example.com/owner", "drop"}) {
			ann[k] = g.pick("a", "1234", "", "x y z")
			if instance && g.chance(0.25) {
				ann[k] = nil
			}
		}
		m["annotations"] = ann
	}
	if g.chance(0.3) {
		if instance && g.chance(0.3) {
			m["tolerations"] = g.clearValue([]any{})
		} else {
			var ts []any
			for range g.r.IntN(3) {
				t := map[string]any{"operator": g.pick("Exists", "Equal")}
				if t["operator"] == "Equal" {
					t["key"] = g.pick("npu", "dedicated")
					t["value"] = g.pick("true", "ml")
				}
				if g.chance(0.5) {
					t["effect"] = g.pick("NoSchedule", "NoExecute", "PreferNoSchedule")
				}
				if t["effect"] == "NoExecute" && g.chance(0.5) {
					t["tolerationSeconds"] = g.r.IntN(600)
				}
				ts = append(ts, t)
			}
			m["tolerations"] = ts
		}
	}
	if g.chance(0.3) {
		if instance && g.chance(0.3) {
			m["env"] = g.clearValue([]any{})
		} else {
			var env []any
			for i := range g.r.IntN(3) {
				env = append(env, map[string]any{"name": fmt.Sprintf("VAR_%d", i), "value": g.pick("1", "", "debug")})
			}
			m["env"] = env
		}
	}
	if g.chance(0.25) {
		if instance && g.chance(0.4) {
			m["priorityClassName"] = g.clearValue("")
		} else {
			m["priorityClassName"] = g.pick("system-node-critical", "npu-high", "a.b")
		}
	}
}

func (g *generator) resources(instance bool) map[string]any {
	res := map[string]any{}
	for _, kind := range g.subset([]string{"limits", "requests"}) {
		rl := map[string]any{}
		for _, name := range g.subset([]string{"cpu", "memory", "example.com/npu"}) {
			rl[name] = g.pick("500m", "128Mi", 1, 0.5, "2", "1Gi")
			if instance && g.chance(0.2) {
				rl[name] = nil
			}
		}
		res[kind] = rl
	}
	return res
}

func (g *generator) selector(min int) map[string]any {
	sel := map[string]any{}
	n := min + g.r.IntN(3)
	for len(sel) < n {
		sel[g.pick(anySlice(labelKeys)...).(string)] = g.pick(anySlice(labelValues)...)
	}
	return sel
}

func (g *generator) instance() map[string]any {
	inst := map[string]any{"nodeSelector": g.selector(1)}
	if g.chance(0.6) {
		inst["image"] = g.image(true)
	}
	g.inheritable(inst, true)
	return inst
}

func (g *generator) upgradePolicy() map[string]any {
	up := map[string]any{}
	if g.chance(0.5) {
		up["autoUpgrade"] = g.chance(0.5)
	}
	if g.chance(0.5) {
		up["maxParallelUpgrades"] = g.r.IntN(5)
	}
	if g.chance(0.5) {
		up["drain"] = map[string]any{"enable": g.chance(0.5), "timeoutSeconds": g.r.IntN(1000), "podSelector": g.pick("", "app=x")}
	}
	if g.chance(0.3) {
		up["reboot"] = map[string]any{"enable": g.chance(0.5), "rebootTimeoutSeconds": g.r.IntN(100)}
	}
	if g.chance(0.3) {
		up["npuPodDeletion"] = map[string]any{"force": g.chance(0.5)}
	}
	if g.chance(0.3) {
		up["waitForCompletion"] = map[string]any{"timeoutSeconds": g.r.IntN(100), "podSelector": "app=train"}
	}
	return up
}

func (g *generator) subset(items []string) []string {
	var out []string
	for _, it := range items {
		if g.chance(0.5) {
			out = append(out, it)
		}
	}
	return out
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func sortedMapKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

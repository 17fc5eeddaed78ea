package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guardCases are routing verdicts around the OCI tag grammar: valid tags (a kernel with "_",
// 128 characters) and invalid ones ("+", 129 characters, a leading "-" or ".", empty, non-ASCII),
// alone and mixed with valid pools.
func guardCases() map[string]*Routing {
	pool := func(tag string, nodes ...string) Pool {
		return Pool{Name: "p-" + tag, DaemonSet: "ds", Family: "rebel", OS: "ubuntu", OSVersion: "22.04", Kernel: "k", Tag: tag, Nodes: nodes}
	}
	routed := func(pools ...Pool) *Routing {
		return &Routing{Selected: len(pools), Nodes: len(pools), Pools: pools, Unpooled: []UnpooledNode{}, Ties: []Tie{}, PotentialTies: []PotentialTie{}}
	}
	return map[string]*Routing{
		"no pools":           routed(),
		"valid":              routed(pool("3.2.2-6.8.0-90-generic-ubuntu22.04", "n1", "n2")),
		"underscore kernel":  routed(pool("3.2.2-5.15.0_custom-ubuntu22.04", "n1")),
		"128 characters":     routed(pool("3"+strings.Repeat("a", 127), "n1")),
		"plus kernel":        routed(pool("3.2.2-5.15.0+custom-ubuntu22.04", "n1")),
		"129 characters":     routed(pool("3"+strings.Repeat("a", 128), "n1")),
		"leading dash":       routed(pool("-6.8.0-ubuntu22.04", "n1")),
		"leading dot":        routed(pool(".6.8.0", "n1")),
		"empty":              routed(pool("", "n1")),
		"non-ASCII":          routed(pool("3.2.2-ü-ubuntu22.04", "n1")),
		"second pool broken": routed(pool("3.2.2-6.8.0-ubuntu22.04", "n1"), pool("3.2.2-6.8.0+x-ubuntu22.04", "n2", "n3")),
	}
}

// TestRoutingGuardsHoldWhenTheRuleFires evaluates the bundled library with input.routing
// always handed over and with it handed over only when a guard holds: the decisions are the
// same on every case, and the guarded rules do fire on some (the comparison is not vacuous).
func TestRoutingGuardsHoldWhenTheRuleFires(t *testing.T) {
	guarded, err := New(t.Context(), Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	set := guarded.active.Load()
	require.True(t, set.readsRouting)
	require.True(t, set.guarded, "the library's routing readers all have guards")
	require.Len(t, set.guards, len(routingGuards))
	require.True(t, guarded.GuardsRouting())
	always, err := New(t.Context(), Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	unguarded := *always.active.Load()
	unguarded.guarded = false
	always.active.Store(&unguarded)

	object := json.RawMessage(`{"apiVersion":"rebellions.ai/v1alpha1","kind":"RBLNDriver","metadata":{"name":"rbln-driver-x"},"spec":{"image":"rebellions/rbln-driver","version":"3.2.2","nodeSelector":{"rack":"r7"}}}`)
	fired := 0
	for name, r := range guardCases() {
		t.Run(name, func(t *testing.T) {
			in := &Input{Object: object, Operation: OperationCreate, Source: SourceAdmission, Routing: r}
			want, err := always.Evaluate(t.Context(), in)
			require.NoError(t, err)
			got, err := guarded.Evaluate(t.Context(), in)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			// The decider's form: the pools' tags, and a function that builds routing, called
			// only when a guard holds.
			built := false
			lazy := &Input{Object: object, Operation: OperationCreate, Source: SourceAdmission, PoolTags: poolTags(r),
				RoutingFunc: func() *Routing { built = true; return r }}
			got, err = guarded.Evaluate(t.Context(), lazy)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, guarded.routingGuardsHold(poolTags(r)), built, "routing built exactly when a guard holds")
			for pkg, guard := range routingGuards {
				fires := false
				for _, m := range append(want.Deny, want.Warn...) {
					fires = fires || m.Package == pkg
				}
				if fires {
					fired++
					assert.True(t, guard(poolTags(r)), "%s fires but its guard does not hold", pkg)
				}
			}
		})
	}
	assert.Positive(t, fired, "some case makes a guarded rule fire")
}

// TestRoutingGuardsStepAsideForOtherReaders: a policy of the user's that reads input.routing
// has no guard, so routing is always handed over and the policy sees it.
func TestRoutingGuardsStepAsideForOtherReaders(t *testing.T) {
	for name, src := range map[string]string{
		"pools.rego": "package driverguard.team\n\nwarn contains sprintf(\"%d pools\", [count(input.routing.pools)]) if input.object.kind == \"RBLNDriver\"\n",
		"whole.rego": "package driverguard.whole\n\nwarn contains \"routing seen\" if {\n\tinput.object.kind == \"RBLNDriver\"\n\tdoc := input\n\tdoc.routing\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			sub := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(sub, name), []byte(src), 0o600))
			e, err := New(t.Context(), Options{Dirs: []string{sub}, Metrics: prometheus.NewRegistry()})
			require.NoError(t, err)
			set := e.active.Load()
			assert.True(t, set.readsRouting)
			assert.False(t, set.guarded)
			assert.False(t, e.GuardsRouting())
			valid := guardCases()["valid"]
			for _, in := range []*Input{{Routing: valid}, {RoutingFunc: func() *Routing { return valid }, PoolTags: poolTags(valid)}} {
				in.Object, in.Operation = json.RawMessage(`{"kind":"RBLNDriver","metadata":{"name":"x"}}`), OperationCreate
				d, err := e.Evaluate(t.Context(), in)
				require.NoError(t, err)
				require.Len(t, d.Warn, 1)
				assert.Contains(t, []string{"1 pools", "routing seen"}, d.Warn[0].Msg)
			}
		})
	}
}

// TestValidTagIsTheLibrarysPattern compares validTag with util.oci_tag_pattern as a regular
// expression on tags around every boundary of the grammar.
func TestValidTagIsTheLibrarysPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	tags := []string{"", "a", "_", ".", "-", "a.", "a-", "a_b", "A9", "3.2.2-5.15.0+custom", "ü", "a ü", "a\n", "a/b", "a:b",
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129), "_" + strings.Repeat(".", 127), "-" + strings.Repeat("a", 10)}
	for c := 0; c < 256; c++ {
		tags = append(tags, string(rune(c)), "a"+string(rune(c)), string([]byte{'a', byte(c)}))
	}
	for _, tag := range tags {
		assert.Equal(t, pattern.MatchString(tag), validTag(tag), "%q", tag)
	}
}

// routingGuardsHold reports whether a guard of the active set holds on tags.
func (e *Engine) routingGuardsHold(tags []string) bool { return e.active.Load().guardsHold(tags) }

// TestObjectGuardsHoldWhenTheRuleFires evaluates the library with every guarded package
// always evaluated and with the packages skipped whose guard is false: the decisions are the
// same on objects around each guarded rule's condition — images (families in any case, in any
// segment, the last one, empty segments, none, not a string), spec.version and
// spec.manager.version (semver-like or not, moving tags, "", null, numbers, leading zeros,
// prereleases, int64 overflow, below and above v0.2.2), spec.smd (absent, empty, null fields,
// not an object) — with the default families, a configured list, an empty one, and the
// cluster's families; and every guarded rule both fires and is skipped on some case.
func TestObjectGuardsHoldWhenTheRuleFires(t *testing.T) {
	configs := map[string]string{
		"defaults":   "",
		"list":       "driverguard_config: {known_families: [NPU-X, Atom]}\n",
		"empty list": "driverguard_config: {known_families: []}\n",
	}
	view := &ClusterView{Nodes: []ClusterNode{
		{Name: "n1", Labels: map[string]string{"rebellions.ai/npu.family": "Atom-Max"}},
		{Name: "n2", Labels: map[string]string{"rebellions.ai/npu.family": "REBEL"}},
	}}
	base := func() map[string]any {
		return map[string]any{"image": "rebellions/rbln-driver", "version": "3.2.2",
			"smd":     map[string]any{"registry": "registry.example", "image": "rebellions/rbln-smd"},
			"manager": map[string]any{"version": "v0.2.2"}}
	}
	const missing = "<missing>"
	set := func(m map[string]any, k string, v any) {
		if v == missing {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	var specs []any
	for _, image := range []any{"rebellions/atom/rbln-driver", "Rebellions/ATOM/rbln-driver", "atom", "atom/", "/atom/x", "a/b/rebel/c",
		"registry/npu-x/d", "x/atom-max/y", "x/Atom-Max/y", "x/foo/y", "x/ca/y", "x/cr", "", "a//b", 5, nil, missing} {
		spec := base()
		set(spec, "image", image)
		specs = append(specs, spec)
	}
	versions := []any{"3.2.2", "v3.2.2", "3.2", "latest", "LATEST", "Stable", "", "3.2.2-rc1", "3.2.2.1", "03.2.2", "3.2.2+b", 5, nil, true, missing}
	for _, v := range versions {
		spec := base()
		set(spec, "version", v)
		specs = append(specs, spec)
	}
	for _, v := range append(versions, "v0.2.1", "0.2.1", "v0.2.3", "v0.10.0", "v1.0.0", "v00.2.2", "v0.02.2", "V0.2.2", "v0.2.2-rc1",
		"v99999999999999999999.0.0", "vv0.2.2", "main", "dev") {
		spec := base()
		set(spec["manager"].(map[string]any), "version", v)
		specs = append(specs, spec)
		noSMD := base()
		delete(noSMD, "smd")
		set(noSMD["manager"].(map[string]any), "version", v)
		specs = append(specs, noSMD)
	}
	for _, smd := range []any{map[string]any{}, map[string]any{"registry": ""}, map[string]any{"image": nil}, map[string]any{"registry": 5}, "x", nil} {
		for _, mv := range []any{"v0.2.1", "v0.2.2", missing} {
			spec := base()
			spec["smd"] = smd
			set(spec["manager"].(map[string]any), "version", mv)
			specs = append(specs, spec)
		}
	}
	noManager := base()
	delete(noManager, "manager")
	specs = append(specs, noManager, "not an object", nil)
	fired, skipped := map[string]int{}, map[string]int{}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if cfg != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "data.yaml"), []byte(cfg), 0o600))
			}
			engines := [2]*Engine{}
			for i := range engines {
				e, err := New(t.Context(), Options{Dirs: []string{dir}, Metrics: prometheus.NewRegistry()})
				require.NoError(t, err)
				require.NoError(t, e.SyncCluster(t.Context(), view))
				engines[i] = e
			}
			guarded := engines[0].active.Load().skippable
			require.Len(t, guarded, len(objectGuards))
			always := *engines[1].active.Load()
			always.skippable = nil
			engines[1].active.Store(&always)
			for _, spec := range specs {
				object, err := json.Marshal(map[string]any{"apiVersion": "rebellions.ai/v1alpha1", "kind": "RBLNDriver", "metadata": map[string]any{"name": "rbln-driver-x"}, "spec": spec})
				require.NoError(t, err)
				in := &Input{Object: json.RawMessage(object), Operation: OperationCreate, Source: SourceAdmission}
				want, err := engines[1].Evaluate(t.Context(), in)
				require.NoError(t, err)
				got, err := engines[0].Evaluate(t.Context(), in)
				require.NoError(t, err)
				require.Equal(t, want, got, "%s", object)
				for _, m := range append(want.Deny, want.Warn...) {
					fired[m.Package]++
				}
				v, err := inputValue(in, nil, readAll)
				require.NoError(t, err)
				mask := engines[0].skipMask(engines[0].active.Load(), v)
				for i, pkg := range guarded {
					if mask&(1<<i) != 0 {
						skipped[pkg]++
					}
				}
			}
		})
	}
	for pkg := range objectGuards {
		assert.Positive(t, fired[pkg], "%s fires on some case", pkg)
		assert.Positive(t, skipped[pkg], "%s is skipped on some case", pkg)
	}
}

// TestObjectGuardsSeeClusterFamilies: a family that appears in the cluster view reaches the
// guard with the store (a rule firing on it is not skipped), and one that leaves it is gone.
func TestObjectGuardsSeeClusterFamilies(t *testing.T) {
	e, err := New(t.Context(), Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	in := &Input{Object: json.RawMessage(`{"kind":"RBLNDriver","metadata":{"name":"rbln-driver-x"},"spec":{"image":"r/npu9/d"}}`), Operation: OperationCreate}
	deny := func() []Message {
		d, err := e.Evaluate(t.Context(), in)
		require.NoError(t, err)
		return d.Deny
	}
	assert.Empty(t, deny())
	require.NoError(t, e.SyncCluster(t.Context(), &ClusterView{Nodes: []ClusterNode{{Name: "n", Labels: map[string]string{"rebellions.ai/npu.family": "NPU9"}}}}))
	require.Len(t, deny(), 1)
	assert.Contains(t, deny()[0].Msg, `contains the NPU family "npu9"`)
	require.NoError(t, e.SyncCluster(t.Context(), &ClusterView{}))
	assert.Empty(t, deny())
	assert.Empty(t, *e.families.Load())
}

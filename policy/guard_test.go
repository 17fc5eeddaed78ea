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

// TestObjectGuardsHoldWhenTheRuleFires evaluates the library with every object guard's package
// always evaluated and with the packages skipped whose guard is false: the decisions are the
// same for images around family_in_image's condition (families in any case, in any segment,
// the last one, empty segments, no image, not a string), with the default families, a
// configured list (validated at load: a list of strings), an empty one, and the cluster's
// families; and the rule fires on some.
func TestObjectGuardsHoldWhenTheRuleFires(t *testing.T) {
	configs := map[string]string{
		"defaults":   "",
		"list":       "driverguard_config: {known_families: [NPU-X, Atom]}\n",
		"empty list": "driverguard_config: {known_families: []}\n",
	}
	images := []any{"rebellions/rbln-driver", "rebellions/atom/rbln-driver", "Rebellions/ATOM/rbln-driver", "atom", "atom/", "/atom/x",
		"a/b/rebel/c", "registry/npu-x/d", "x/atom-max/y", "x/Atom-Max/y", "x/foo/y", "x/FOO/y", "x/ca/y", "x/cr", "", "a//b", 5, nil, "missing"}
	view := &ClusterView{Nodes: []ClusterNode{
		{Name: "n1", Labels: map[string]string{"rebellions.ai/npu.family": "Atom-Max"}},
		{Name: "n2", Labels: map[string]string{"rebellions.ai/npu.family": "REBEL"}},
	}}
	fired, skipped := 0, 0
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
			require.Equal(t, []string{LibraryNamespace + ".family_in_image"}, engines[0].active.Load().skippable)
			always := *engines[1].active.Load()
			always.skippable = nil
			engines[1].active.Store(&always)
			for _, image := range images {
				spec := map[string]any{"version": "3.2.2"}
				if image != "missing" {
					spec["image"] = image
				}
				object, err := json.Marshal(map[string]any{"apiVersion": "rebellions.ai/v1alpha1", "kind": "RBLNDriver", "metadata": map[string]any{"name": "rbln-driver-x"}, "spec": spec})
				require.NoError(t, err)
				in := &Input{Object: json.RawMessage(object), Operation: OperationCreate, Source: SourceAdmission}
				want, err := engines[1].Evaluate(t.Context(), in)
				require.NoError(t, err)
				got, err := engines[0].Evaluate(t.Context(), in)
				require.NoError(t, err)
				assert.Equal(t, want, got, "image %v", image)
				for _, m := range want.Deny {
					if m.Package == LibraryNamespace+".family_in_image" {
						fired++
					}
				}
				v, err := inputValue(in, nil)
				require.NoError(t, err)
				if engines[0].skipMask(engines[0].active.Load(), v) != 0 {
					skipped++
				}
			}
		})
	}
	assert.Positive(t, fired, "family_in_image fires on some case")
	assert.Positive(t, skipped, "family_in_image is skipped on some case")
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

package policy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
)

const teamPolicy = `package driverguard.team

import data.driverguard.lib.util

deny contains msg if {
	util.is_driver
	not input.object.metadata.annotations["team.example/owner"]
	msg := sprintf("%s: set the annotation team.example/owner", [util.resource])
}
`

func TestExampleIsClean(t *testing.T) {
	e := newEngine(t, policy.Options{})
	for _, in := range renderInputs(t, exampleValues, exampleNodes) {
		d, err := e.Evaluate(t.Context(), in)
		require.NoError(t, err)
		assert.Empty(t, d.Deny, objectName(in))
		assert.Empty(t, d.Warn, objectName(in))
		assert.NotNil(t, d.Deny, "an empty list, not null, in JSON")
	}
	st := e.Status()
	assert.True(t, st.Healthy())
	assert.EqualValues(t, 1, st.Generation)
	assert.Contains(t, st.Policies, "driverguard.lib.pinned_version")
	assert.NotContains(t, st.Policies, "driverguard.lib.util", "helper packages have no deny or warn")
}

func TestUserPolicyIsCollected(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "team.rego", teamPolicy)
	e := newEngine(t, policy.Options{Dirs: []string{dir}})
	d := evaluate(t, e, renderInputs(t, exampleValues, ""), "rbln-driver-rebel")
	assert.Equal(t, []policy.Message{{
		Package: "driverguard.team", Rule: "deny",
		Msg: "RBLNDriver/rbln-driver-rebel: set the annotation team.example/owner",
	}}, d.Deny)
	assert.Equal(t, []string{writeFile(t, dir, "team.rego", teamPolicy)}, e.Status().Files)
}

func TestMessagesFromSeveralPackagesAreSorted(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "b.rego", "package driverguard.b\ndeny contains \"b2\"\ndeny contains \"b1\"\nwarn contains {\"msg\": \"object message\", \"details\": 1}\n")
	writeFile(t, dir, "sub/a.rego", "package driverguard.a.nested\ndeny contains \"a\"\n")
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true})
	d, err := e.Evaluate(t.Context(), &policy.Input{Object: map[string]any{}, Operation: "CREATE", Source: policy.SourceRender})
	require.NoError(t, err)
	assert.Equal(t, []string{"driverguard.a.nested: a", "driverguard.b: b1", "driverguard.b: b2"}, msgs(d.Deny))
	assert.Equal(t, []string{"driverguard.b: object message"}, msgs(d.Warn))
}

func TestDisable(t *testing.T) {
	values := writeFile(t, t.TempDir(), "values.yaml", "driver:\n  image: {tag: latest}\n  upgradePolicy: {maxParallelUpgrades: 0}\n")
	inputs := renderInputs(t, values, "")

	e := newEngine(t, policy.Options{})
	assert.Len(t, evaluate(t, e, inputs, "rbln-driver").Deny, 1)
	assert.Len(t, evaluate(t, e, inputs, "rbln-cluster-policy").Warn, 1)

	t.Run("by option", func(t *testing.T) {
		e := newEngine(t, policy.Options{Disable: []string{"lib.pinned_version", "driverguard.lib.max_parallel_upgrades"}})
		assert.Empty(t, evaluate(t, e, inputs, "rbln-driver").Deny)
		assert.Empty(t, evaluate(t, e, inputs, "rbln-cluster-policy").Warn)
		assert.Equal(t, []string{"driverguard.lib.max_parallel_upgrades", "driverguard.lib.pinned_version"}, e.Status().Disabled)
	})
	t.Run("by driverguard_config", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "data.yaml", "driverguard_config:\n  disabled: [lib.pinned_version]\n")
		e := newEngine(t, policy.Options{Dirs: []string{dir}})
		assert.Empty(t, evaluate(t, e, inputs, "rbln-driver").Deny)
		assert.Len(t, evaluate(t, e, inputs, "rbln-cluster-policy").Warn, 1)
	})
	t.Run("an unknown name is an error", func(t *testing.T) {
		_, err := policy.New(t.Context(), policy.Options{Disable: []string{"lib.pinned_versions"}, Metrics: prometheus.NewRegistry()})
		var le *policy.LoadError
		require.ErrorAs(t, err, &le)
		assert.Contains(t, err.Error(), `--disable: cannot disable "lib.pinned_versions": no policy has that name; the policies are lib.allowed_registries,`)
	})
}

func TestAllowedRegistriesFromData(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "data.json", `{"driverguard_config": {"allowed_registries": ["repo.rebellions.ai"]}}`)
	e := newEngine(t, policy.Options{Dirs: []string{dir}})
	d := evaluate(t, e, renderInputs(t, exampleValues, ""), "rbln-driver")
	assert.Equal(t, []string{`driverguard.lib.allowed_registries: RBLNDriver/rbln-driver: spec.manager.registry "docker.io" is not an allowed registry (allowed: repo.rebellions.ai); pull from one of them, e.g. through a mirror (values: driver.manager.image.registry)`}, msgs(d.Deny))
}

func TestKernelTagUsesTheObjectsPools(t *testing.T) {
	nodes := writeFile(t, t.TempDir(), "nodes.yaml", `apiVersion: v1
kind: Node
metadata:
  name: custom-kernel
  labels:
    rebellions.ai/npu.deploy.driver: "true"
    rebellions.ai/npu.family: rebel
    feature.node.kubernetes.io/system-os_release.ID: ubuntu
    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
    feature.node.kubernetes.io/kernel-version.full: 5.15.0+custom
`)
	e := newEngine(t, policy.Options{})
	inputs := renderInputs(t, exampleValues, nodes)
	d := evaluate(t, e, inputs, "rbln-driver-rebel")
	require.Len(t, d.Deny, 1)
	assert.Contains(t, d.Deny[0].Msg, `driver image tag "3.2.3-5.15.0+custom-ubuntu22.04" for 1 node(s) (custom-kernel)`)
	// In Helm's order the default is judged before rbln-driver-rebel exists: it owns the node
	// then, as it would at admission.
	require.Len(t, evaluate(t, e, inputs, "rbln-driver").Deny, 1)
	assert.Contains(t, evaluate(t, e, inputs, "rbln-driver").Deny[0].Msg, `driver image tag "3.2.2-5.15.0+custom-ubuntu22.04"`)
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name, file, content, want string
	}{
		{"parse error", "bad.rego", "package driverguard.bad\n\ndeny contains msg if {\n\tmsg := \n}\n", "bad.rego:5:1: rego_parse_error: unexpected } token"},
		{"compile error", "bad.rego", "package driverguard.bad\n\ndeny contains msg if {\n\tmsg := undefined_function(1)\n}\n", "bad.rego:4:9: rego_type_error: undefined function undefined_function"},
		{"single-value deny", "bad.rego", "package driverguard.bad\n\ndeny := \"no\"\n", "bad.rego:3:1: deny must collect messages as a set: write `deny contains msg if { ... }`"},
		{"library namespace", "bad.rego", "package driverguard.lib.mine\n\ndeny contains \"x\"\n", "bad.rego:1:1: package driverguard.lib.mine: driverguard.lib is reserved for the bundled library"},
		{"unsafe builtin", "bad.rego", "package driverguard.bad\n\ndeny contains msg if {\n\tmsg := http.send({\"method\": \"GET\", \"url\": \"x\"})\n}\n", "bad.rego:4:9: rego_type_error: unsafe built-in function calls in expression: http.send"},
		{"the clock", "clock.rego", "package driverguard.clock\n\ndeny contains \"late\" if {\n\ttime.now_ns() > 0\n}\n", "clock.rego:4:2: rego_type_error: unsafe built-in function calls in expression: time.now_ns"},
		{"randomness", "rand.rego", "package driverguard.rand\n\nwarn contains \"sometimes\" if rand.intn(\"x\", 2) == 0\n", "rand.rego:3:30: rego_type_error: unsafe built-in function calls in expression: rand.intn"},
		{"a uuid", "uuid.rego", "package driverguard.uuid\n\nwarn contains uuid.rfc4122(\"x\") if true\n", "uuid.rego:3:15: rego_type_error: unsafe built-in function calls in expression: uuid.rfc4122"},
		{"the environment", "env.rego", "package driverguard.env\n\nwarn contains \"env\" if opa.runtime().env.CI\n", "env.rego:3:24: rego_type_error: unsafe built-in function calls in expression: opa.runtime"},
		{"bad data", "data.yaml", "driverguard_config: [unclosed", "data.yaml: not a valid JSON or YAML data document"},
		{"unknown setting", "data.yaml", "driverguard_config: {allowed_registry: [x]}", "data.yaml: driverguard_config.allowed_registry is not a setting: use one of allowed_registries, disabled, known_families"},
		{"setting type", "data.yaml", "driverguard_config: {disabled: lib.x}", "data.yaml: driverguard_config.disabled must be a list of strings"},
		{"data in the policy namespace", "data.yaml", "driverguard: {x: 1}", "data.yaml: a data document sets data.driverguard, the policy namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, tt.file, tt.content)
			_, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, Metrics: prometheus.NewRegistry()})
			var le *policy.LoadError
			require.ErrorAs(t, err, &le)
			assert.Contains(t, err.Error(), strings.Replace(tt.want, tt.file, path, 1))
		})
	}
	t.Run("missing directory", func(t *testing.T) {
		_, err := policy.New(t.Context(), policy.Options{Dirs: []string{"does-not-exist"}, Metrics: prometheus.NewRegistry()})
		assert.EqualError(t, err, "policy: does-not-exist: cannot read the policy directory: no such file or directory")
	})
}

func TestTestFilesAndHiddenEntriesAreNotPolicies(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "team_test.rego", "package driverguard.team_test\n\ndeny contains \"from a test file\"\n")
	writeFile(t, dir, ".hidden/x.rego", "package driverguard.hidden\n\ndeny contains \"hidden\"\n")
	writeFile(t, dir, "README.md", "not a policy")
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true})
	d, err := e.Evaluate(t.Context(), &policy.Input{Object: map[string]any{}})
	require.NoError(t, err)
	assert.Empty(t, d.Deny)
}

// TestReloadKeepsTheLastGoodSet: a broken file leaves the previous answers in force, is
// reported with file and line (error, Status, metric), and a fix is picked up.
func TestReloadKeepsTheLastGoodSet(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "team.rego", teamPolicy)
	reg := prometheus.NewRegistry()
	e := newEngine(t, policy.Options{Dirs: []string{dir}, Metrics: reg})
	inputs := renderInputs(t, exampleValues, "")
	require.Len(t, evaluate(t, e, inputs, "rbln-driver").Deny, 1)

	writeFile(t, dir, "team.rego", strings.Replace(teamPolicy, "msg := sprintf", "msg := sprintf(", 1))
	err := e.Reload(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), file+":8:")
	assert.Len(t, evaluate(t, e, inputs, "rbln-driver").Deny, 1, "the previous set answers")
	st := e.Status()
	assert.False(t, st.Healthy())
	assert.EqualValues(t, 1, st.Generation)
	require.NotNil(t, st.Error)
	assert.Equal(t, file, st.Error.Problems[0].File)
	assert.Equal(t, 8, st.Error.Problems[0].Line)
	assert.Contains(t, st.String(), "the latest reload failed, generation 1 stays active:\n  "+file+":8:")
	assert.InDelta(t, 1, gauge(t, reg, "driverguard_policy_load_failed"), 0)

	writeFile(t, dir, "team.rego", strings.Replace(teamPolicy, "deny contains", "warn contains", 1))
	require.NoError(t, e.Reload(t.Context()))
	d := evaluate(t, e, inputs, "rbln-driver")
	assert.Empty(t, d.Deny)
	assert.Len(t, d.Warn, 1)
	st = e.Status()
	assert.True(t, st.Healthy())
	assert.EqualValues(t, 2, st.Generation)
	assert.InDelta(t, 0, gauge(t, reg, "driverguard_policy_load_failed"), 0)
}

// gauge returns the value of a registered gauge.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s is not registered", name)
	return 0
}

func TestEvaluationDeadline(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "slow.rego", `package driverguard.slow

deny contains "slow" if {
	some i in numbers.range(1, 100000000)
	i < 0
}
`)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Timeout: 20 * time.Millisecond})
	start := time.Now()
	_, err := e.Evaluate(t.Context(), &policy.Input{Object: map[string]any{}})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), err)
	assert.Contains(t, err.Error(), "did not finish within 20ms")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestEvaluationErrorFromAConflict(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "conflict.rego", `package driverguard.conflict

level := 1
level := 2 if input.object.kind == "RBLNDriver"

deny contains "x" if level > 5
`)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true})
	_, err := e.Evaluate(t.Context(), &policy.Input{Object: map[string]any{"kind": "RBLNDriver"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "eval_conflict_error")
	assert.False(t, errors.Is(err, context.DeadlineExceeded))
}

// TestConcurrentEvaluationAndReload runs evaluations while the set is reloaded (go test -race).
func TestConcurrentEvaluationAndReload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "team.rego", teamPolicy)
	e := newEngine(t, policy.Options{Dirs: []string{dir}})
	inputs := renderInputs(t, exampleValues, exampleNodes)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				for _, in := range inputs {
					_, err := e.Evaluate(t.Context(), in)
					assert.NoError(t, err)
				}
			}
		})
	}
	for i := range 5 {
		writeFile(t, dir, "team.rego", strings.Replace(teamPolicy, "team.example/owner", "team.example/owner-"+string(rune('a'+i)), 2))
		assert.NoError(t, e.Reload(t.Context()))
	}
	wg.Wait()
	assert.EqualValues(t, 6, e.Status().Generation)
}

// TestReadsRouting: the engine knows whether its policies read input.routing, through the
// rules they depend on.
func TestReadsRouting(t *testing.T) {
	assert.True(t, newEngine(t, policy.Options{}).ReadsRouting(), "the library's kernel_tag reads pools")
	dir := t.TempDir()
	writeFile(t, dir, "a.rego", "package driverguard.a\n\ndeny contains \"x\" if input.object.spec.version == \"latest\"\n")
	assert.False(t, newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true}).ReadsRouting())
	all := []string{}
	for _, p := range newEngine(t, policy.Options{}).Policies() {
		all = append(all, p.Name)
	}
	assert.False(t, newEngine(t, policy.Options{Dirs: []string{dir}, Disable: all}).ReadsRouting(), "disabled library rules and the unused util helpers do not count")
	for name, body := range map[string]string{
		"a ref":                "deny contains \"x\" if input.routing.nodes > 1",
		"through a rule":       "n := input.routing.nodes\n\ndeny contains \"x\" if n > 1",
		"input as whole":       "deny contains \"x\" if f(input)\n\nf(i) if i.routing.nodes > 1",
		"a variable key":       "deny contains k if some k, _ in input",
		"the library's helper": "import data.driverguard.lib.util\n\ndeny contains \"x\" if count(util.pools) > 1",
	} {
		d := t.TempDir()
		writeFile(t, d, "b.rego", "package driverguard.b\n\n"+body+"\n")
		assert.True(t, newEngine(t, policy.Options{Dirs: []string{d}, Disable: all}).ReadsRouting(), name)
	}
}

// TestPoliciesByKind: a package whose rules all require one kind is evaluated for that kind
// only; others (no requirement, or several kinds) for every object.
func TestPoliciesByKind(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "p.rego", `package driverguard.p

deny contains "driver" if input.object.kind == "RBLNDriver"

deny contains "policy" if "RBLNClusterPolicy" == input.object.kind

deny contains "any" if input.object.metadata.name == "x"
`)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true})
	for kind, want := range map[string][]string{
		"RBLNDriver":        {"driverguard.p: any", "driverguard.p: driver"},
		"RBLNClusterPolicy": {"driverguard.p: any", "driverguard.p: policy"},
		"Other":             {"driverguard.p: any"},
	} {
		d, err := e.Evaluate(t.Context(), &policy.Input{Object: map[string]any{"kind": kind, "metadata": map[string]any{"name": "x"}}})
		require.NoError(t, err)
		assert.Equal(t, want, msgs(d.Deny), kind)
	}
}

// TestClusterNodesOnlyWhenRead: the nodes of the cluster view are in the store only while a
// policy reads them; a reload that starts reading them sees every node as it is now.
func TestClusterNodesOnlyWhenRead(t *testing.T) {
	dir := t.TempDir()
	const reader = "package driverguard.nodes\n\ndeny contains sprintf(\"%d nodes, n1 owned by %s\", [count(data.driverguard_cluster.nodes), data.driverguard_cluster.nodes.n1.owner]) if input.object.kind == \"RBLNDriver\"\n"
	const other = "package driverguard.nodes\n\ndeny contains \"families\" if data.driverguard_cluster.families.atom == 2\n"
	writeFile(t, dir, "nodes.rego", other)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true})
	atom := map[string]string{operator.LabelFamily: "atom"}
	view := &policy.ClusterView{Nodes: []policy.ClusterNode{{Name: "n1", Labels: atom}, {Name: "n2", Labels: atom}}}
	require.NoError(t, e.SyncCluster(t.Context(), view))
	in := &policy.Input{Object: map[string]any{"kind": "RBLNDriver", "metadata": map[string]any{"name": "x"}}, Operation: policy.OperationCreate}
	d, err := e.Evaluate(t.Context(), in)
	require.NoError(t, err)
	assert.Equal(t, []string{"families"}, messages(d.Deny), "the family counts are there without the nodes")

	view.Nodes[0].Owner = "rbln-driver-atom"
	require.NoError(t, e.SyncCluster(t.Context(), view))
	writeFile(t, dir, "nodes.rego", reader)
	require.NoError(t, e.Reload(t.Context()))
	d, err = e.Evaluate(t.Context(), in)
	require.NoError(t, err)
	assert.Equal(t, []string{"2 nodes, n1 owned by rbln-driver-atom"}, messages(d.Deny))

	view.Nodes[0].Owner = ""
	require.NoError(t, e.SyncCluster(t.Context(), view))
	d, err = e.Evaluate(t.Context(), in)
	require.NoError(t, err)
	assert.Equal(t, []string{"2 nodes, n1 owned by "}, messages(d.Deny), "syncs write the nodes while they are read")

	doc, err := e.ClusterDocument()
	require.NoError(t, err)
	assert.Len(t, doc.(map[string]any)["nodes"], 2)
}

func messages(ms []policy.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Msg
	}
	return out
}

// TestMaxConcurrent: evaluations beyond MaxConcurrent wait for a slot within their deadline,
// and fail with a clear error when none frees up.
func TestMaxConcurrent(t *testing.T) {
	dir := t.TempDir()
	// a rule that takes a while: a comprehension over a large range
	writeFile(t, dir, "slow.rego", "package driverguard.slow\n\ndeny contains \"slow\" if count([x | some x in numbers.range(1, 300000); x % 7 == 0]) < 0\n")
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, MaxConcurrent: 1, Timeout: 30 * time.Second})
	in := &policy.Input{Object: map[string]any{"kind": "RBLNDriver"}, Operation: policy.OperationCreate}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := e.Evaluate(t.Context(), in)
		done <- err
	}()
	<-started
	time.Sleep(20 * time.Millisecond) // the first evaluation holds the only slot
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	_, err := e.Evaluate(ctx, in)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "no evaluation slot")
	require.NoError(t, <-done)
	_, err = e.Evaluate(t.Context(), in)
	assert.NoError(t, err, "the slot is free again")
}

// TestPolicyFileLimit: a policy file over MaxFileBytes is a load problem naming it; nothing of
// it is compiled.
func TestPolicyFileLimit(t *testing.T) {
	dir := t.TempDir()
	big := "package driverguard.big\n\n# " + strings.Repeat("x", 2048) + "\ndeny contains \"no\" if false\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.rego"), []byte(big), 0o600))
	_, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, MaxFileBytes: 1024, Metrics: prometheus.NewRegistry()})
	var le *policy.LoadError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, err.Error(), "big.rego")
	assert.Contains(t, err.Error(), "larger than the limit of 1024 bytes")
}

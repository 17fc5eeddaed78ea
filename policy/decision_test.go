package policy_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/webhook/webhooktest"
)

// The engine evaluates one generated rule that holds a copy of every policy's deny and warn
// bodies (policy/compile.go, decisionModule). These tests hold it to what OPA itself says
// each package's deny and warn are, evaluated directly over the same modules, input and data.

// trickyPolicies use what a copied body must keep working: imports and aliases, package-local
// rules and functions, rules spread over two files, comprehensions, every, with, negation,
// messages as objects, head keys that are expressions, a rule over another rule's messages,
// and print.
var trickyPolicies = map[string]string{
	"helpers.rego": `package driverguard.helpers

import rego.v1

prefix(obj) := sprintf("%s/%s", [obj.kind, object.get(obj, ["metadata", "name"], "")])

reserved := {"rebellions.ai/npu.driver.", "rebellions.ai/npu.deploy."}
`,
	"team/a.rego": `package driverguard.team

import data.driverguard.helpers as h

labels := object.get(input.object, ["spec", "nodeSelector"], {})

deny contains msg if {
	some k, _ in labels
	some r in h.reserved
	startswith(k, r)
	msg := sprintf("%s: reserved key %s", [h.prefix(input.object), k])
}

deny contains {"msg": sprintf("%s: no version", [h.prefix(input.object)]), "field": "spec.version"} if {
	input.object.kind == "RBLNDriver"
	not input.object.spec.version
}

warn contains sprintf("%s: %d labels", [h.prefix(input.object), count(labels)]) if {
	count(labels) > 2
}
`,
	"team/b.rego": `package driverguard.team

deny contains msg if {
	input.object.kind == "RBLNDriver"
	every k, v in labels {
		is_string(v)
		k != ""
	}
	bad := [k | some k, v in labels; contains(v, "_")]
	count(bad) > 0
	print("bad labels", bad)
	msg := sprintf("underscores in %v", [bad])
}

deny contains msg if {
	input.object.kind == "RBLNDriver"
	canary with input.object.metadata.name as "x-canary"
	not canary
	msg := sprintf("%s: not a canary", [input.object.metadata.name])
}

canary if endswith(input.object.metadata.name, "-canary")

warn contains "denied, and warned about it" if count(deny) > 0
`,
	"other.rego": `package driverguard.other

deny contains m if {
	input.object.kind == "RBLNClusterPolicy"
	m := "a cluster policy"
}

warn contains m if {
	some m in ["one", "two", "two"]
	input.operation == "CREATE"
}
`,
}

func TestDecisionEqualsEachPackagesRules(t *testing.T) {
	dir := t.TempDir()
	for name, src := range trickyPolicies {
		writeFile(t, dir, name, src)
	}
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true})
	direct := directEvaluator(t, []string{dir}, e.Policies())
	objects := []map[string]any{
		{"apiVersion": "rebellions.ai/v1alpha1", "kind": "RBLNDriver", "metadata": map[string]any{"name": "d-canary"},
			"spec": map[string]any{"version": "3.2.2", "nodeSelector": map[string]any{"a": "x_y", "rebellions.ai/npu.driver.x": "true", "c": "d"}}},
		{"apiVersion": "rebellions.ai/v1alpha1", "kind": "RBLNDriver", "metadata": map[string]any{"name": "plain"},
			"spec": map[string]any{"nodeSelector": map[string]any{}}},
		{"apiVersion": "rebellions.ai/v1alpha1", "kind": "RBLNClusterPolicy", "metadata": map[string]any{"name": "rbln-cluster-policy"}, "spec": map[string]any{}},
	}
	for _, obj := range objects {
		for _, op := range []string{policy.OperationCreate, policy.OperationUpdate} {
			in := &policy.Input{Object: obj, Operation: op, Source: policy.SourceRender}
			got, err := e.Evaluate(t.Context(), in)
			require.NoError(t, err)
			want := direct(t, in, map[string]any{})
			assert.Equal(t, want, got, "%s %s", obj["metadata"], op)
		}
	}
	// The inputs above reach every rule: the comparison is not vacuous.
	in := &policy.Input{Object: objects[0], Operation: policy.OperationCreate, Source: policy.SourceRender}
	d, err := e.Evaluate(t.Context(), in)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"driverguard.team: RBLNDriver/d-canary: reserved key rebellions.ai/npu.driver.x",
		"driverguard.team: underscores in [\"a\"]",
	}, msgs(d.Deny))
	assert.Equal(t, []string{
		"driverguard.other: one", "driverguard.other: two",
		"driverguard.team: RBLNDriver/d-canary: 3 labels", "driverguard.team: denied, and warned about it",
	}, msgs(d.Warn))
}

// TestLibraryDecisionEqualsEachPackagesRules replays releases that break every bundled rule
// and a few that break none, comparing each evaluation with the library's packages evaluated
// directly against the same input and the cluster view of that moment.
func TestLibraryDecisionEqualsEachPackagesRules(t *testing.T) {
	libFiles, err := filepath.Glob("library/*.rego")
	require.NoError(t, err)
	libFiles = slices.DeleteFunc(libFiles, func(f string) bool { return strings.HasSuffix(f, "_test.rego") })
	direct := directEvaluator(t, libFiles, newEngine(t, policy.Options{}).Policies())

	dir := t.TempDir()
	breaking := writeFile(t, dir, "breaking.yaml", `driver:
  nodeSelector: {pool: npu}
  image: {repository: rebellions/atom/rbln-driver, tag: latest}
  manager: {image: {tag: v0.2.1}}
  smd: {image: {registry: repo.rebellions.ai, repository: rebellions/rbln-smd}}
  upgradePolicy: {maxParallelUpgrades: 0, reboot: {enable: true}, drain: {enable: false, deleteEmptyDirData: true}}
  instances:
    same: {nodeSelector: {pool: npu}}
    apart:
      nodeSelector: {env: prod}
      image: {tag: 3.3.0-rc1}
      manager: {image: {tag: nightly}}
`)
	selectors := writeFile(t, dir, "selectors.yaml", `driver:
  nodeSelector: {pool: npu}
  instances:
    same: {nodeSelector: {pool: npu}}
    apart: {nodeSelector: {env: prod}}
    canary: {nodeSelector: {pool: npu, env: canary}, image: {tag: 3.3.0-rc1}}
`)
	values := []string{exampleValues, breaking, selectors}
	corpus, err := filepath.Glob("../test/testdata/values/ok-*.yaml")
	require.NoError(t, err)
	values = append(values, corpus...)
	nodes := readNodes(t, exampleNodes)
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	evaluations, messages := 0, 0
	for _, v := range values {
		vals, err := render.LoadValues(render.ValuesOptions{ValueFiles: []string{v}})
		require.NoError(t, err, v)
		r, err := render.Render(ch, vals, render.Options{})
		if err != nil {
			continue // rejected at render time: nothing to evaluate
		}
		e := newEngine(t, policy.Options{})
		check := &webhooktest.Evaluator{Fn: func(ctx context.Context, in *policy.Input) (*policy.Decision, error) {
			got, err := e.Evaluate(ctx, in)
			require.NoError(t, err)
			doc, err := e.ClusterDocument()
			require.NoError(t, err)
			assert.Equal(t, direct(t, in, map[string]any{policy.ClusterKey: doc}), got, "%s: %s", filepath.Base(v), objectName(in))
			evaluations++
			messages += len(got.Deny) + len(got.Warn)
			return got, nil
		}}
		_, err = release.Apply(t.Context(), release.FromRender(r, render.DefaultReleaseName), cluster.FromLists(slices.Clone(nodes), nil, nil, nil),
			release.Options{Decider: &decision.Decider{Policy: check}, Data: e})
		require.NoError(t, err, v)
	}
	assert.Greater(t, evaluations, 50)
	assert.Greater(t, messages, 12, "the breaking releases fire the library's rules (13 since reboot without drain and identical selectors are Go's alone)")
}

// TestBuiltInRulesAreNotRepeatedByTheLibrary: facts the built-in rules judge are reported
// once, by their Go rule, with the bundled library evaluating too — reboot without drain
// (api/validation, UpgradePolicy) and an instance's selector identical to the default's
// (routing, IdenticalNodeSelector); the library repeated both.
func TestBuiltInRulesAreNotRepeatedByTheLibrary(t *testing.T) {
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	nodes := readNodes(t, exampleNodes)
	findings := func(t *testing.T, values, about string) []string {
		file := writeFile(t, t.TempDir(), "values.yaml", values)
		vals, err := render.LoadValues(render.ValuesOptions{ValueFiles: []string{file}})
		require.NoError(t, err)
		r, err := render.Render(ch, vals, render.Options{})
		require.NoError(t, err)
		e := newEngine(t, policy.Options{})
		res, err := release.Apply(t.Context(), release.FromRender(r, render.DefaultReleaseName), cluster.FromLists(slices.Clone(nodes), nil, nil, nil),
			release.Options{Decider: &decision.Decider{Policy: e}, Data: e})
		require.NoError(t, err)
		var out []string
		for _, o := range res.Objects {
			for _, f := range o.Verdict.Denials {
				if strings.Contains(f.Message, about) {
					out = append(out, "deny "+o.Kind+"/"+o.Name+" "+f.Rule)
				}
			}
			for _, f := range o.Verdict.Warnings {
				if strings.Contains(f.Message, about) {
					out = append(out, "warn "+o.Kind+"/"+o.Name+" "+f.Rule)
				}
			}
		}
		return out
	}
	assert.Equal(t, []string{"warn RBLNClusterPolicy/rbln-cluster-policy " + finding.RuleUpgradePolicy},
		findings(t, "driver:\n  upgradePolicy: {reboot: {enable: true}, drain: {enable: false}}\n", "reboot"))
	assert.Equal(t, []string{"deny RBLNDriver/rbln-driver-same " + finding.RuleIdenticalNodeSelector},
		findings(t, "driver:\n  nodeSelector: {pool: npu}\n  instances:\n    same: {nodeSelector: {pool: npu}}\n", "identical"))
}

// directEvaluator evaluates the deny and warn rules of every policy with OPA directly, over the
// modules of paths, an input (as JSON) and a data document.
func directEvaluator(t *testing.T, paths []string, policies []policy.PolicyInfo) func(*testing.T, *policy.Input, any) *policy.Decision {
	t.Helper()
	var modules []func(*rego.Rego)
	for _, p := range paths {
		require.NoError(t, filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(f, ".rego") {
				return err
			}
			src, err := os.ReadFile(f)
			modules = append(modules, rego.Module(f, string(src)))
			return err
		}))
	}
	var query []string
	for _, p := range policies {
		for _, rule := range p.Rules {
			query = append(query, binding(p.Package, rule)+" := data."+p.Package+"."+rule)
		}
	}
	return func(t *testing.T, in *policy.Input, data any) *policy.Decision {
		t.Helper()
		raw, err := json.Marshal(in)
		require.NoError(t, err)
		var input any
		require.NoError(t, json.Unmarshal(raw, &input))
		var store map[string]any
		raw, err = json.Marshal(data)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &store))
		if store == nil {
			store = map[string]any{}
		}
		opts := append([]func(*rego.Rego){rego.Query(strings.Join(query, "; ")), rego.Input(input), rego.Store(inmem.NewFromObject(store))}, modules...)
		rs, err := rego.New(opts...).Eval(t.Context())
		require.NoError(t, err)
		require.Len(t, rs, 1)
		d := &policy.Decision{Deny: []policy.Message{}, Warn: []policy.Message{}}
		for _, p := range policies {
			for _, rule := range p.Rules {
				set, _ := rs[0].Bindings[binding(p.Package, rule)].([]any)
				var out []policy.Message
				for _, m := range set {
					out = append(out, policy.Message{Package: p.Package, Rule: rule, Msg: policy.MessageText(m)})
				}
				slices.SortFunc(out, func(a, b policy.Message) int { return strings.Compare(a.Msg, b.Msg) })
				if rule == "deny" {
					d.Deny = append(d.Deny, out...)
				} else {
					d.Warn = append(d.Warn, out...)
				}
			}
		}
		return d
	}
}

func binding(pkg, rule string) string {
	return rule + "_" + strings.ReplaceAll(pkg, ".", "_")
}

package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/release"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// These tests are the cases of issue #8, where check, preview and review used to disagree:
// each now reaches the webhook's verdict with the exit code README.md "Exit codes" states.

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// tieValues: two instances whose selectors tie on the example's canary nodes.
const tieValues = `driver:
  instances:
    canary:
      image: {tag: "3.3.0"}
      nodeSelector: {env: canary}
    atom:
      image: {tag: "3.2.3"}
      nodeSelector: {rebellions.ai/npu.family: atom}
`

func TestTieAmongInstancesFailsEverywhere(t *testing.T) {
	values := writeTemp(t, "values.yaml", tieValues)
	check := run(t, "", "check", "-f", values, "--nodes", exampleNodes)
	assert.Equal(t, ExitInvalid, check.code, check.stdout)
	assert.Contains(t, check.stdout, "RBLNDriver/rbln-driver-canary\n  FAIL  ConflictingNodeSelector: spec.nodeSelector: Invalid value: \"{env=canary}\": ties with RBLNDriver \"rbln-driver-atom\" on existing node(s) npu-atom-canary-01, npu-atom-canary-02")

	preview := run(t, "", "preview", "-f", values, "--nodes", exampleNodes)
	assert.Equal(t, ExitInvalid, preview.code, "preview gives check's verdict")
	assert.Contains(t, preview.stdout, "RBLNDriver/rbln-driver-canary: DENIED, not applied: ConflictingNodeSelector")

	// review of the same CREATE, with the drivers Helm applied before it in the cluster.
	rendered := run(t, "", "render", "-f", values)
	require.Equal(t, ExitOK, rendered.code)
	drivers := writeTemp(t, "drivers.yaml", rendered.stdout)
	var canary *v1alpha1.RBLNDriver
	stored, err := cluster.ReadDrivers(context.Background(), drivers, cluster.ReadOptions{})
	require.NoError(t, err)
	var before []string
	for i := range stored {
		if stored[i].Name == "rbln-driver-canary" {
			canary = &stored[i]
		}
	}
	require.NotNil(t, canary)
	var others strings.Builder
	for _, d := range stored {
		if d.Name != "rbln-driver-canary" {
			before = append(before, d.Name)
			others.WriteString("---\n")
			others.Write(wt.MustJSON(d))
			others.WriteString("\n")
		}
	}
	assert.Equal(t, []string{"rbln-driver", "rbln-driver-atom"}, before)
	req := writeTemp(t, "req.json", string(wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, canary, nil)))))
	review := run(t, "", "review", "-f", req, "--drivers", writeTemp(t, "others.yaml", others.String()), "--nodes", exampleNodes)
	assert.Equal(t, ExitInvalid, review.code, review.stdout)
	var answered admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal([]byte(review.stdout), &answered))
	require.NotNil(t, answered.Response.Result.Details)
	assert.Equal(t, "ConflictingNodeSelector", string(answered.Response.Result.Details.Causes[0].Type))
}

func TestDriverLossFailsUnlessAcknowledged(t *testing.T) {
	args := []string{"-f", exampleValues, "--set", "driver.deployDefault=false", "--nodes", exampleNodes}
	for _, cmd := range []string{"check", "preview"} {
		r := run(t, "", append([]string{cmd}, args...)...)
		assert.Equal(t, ExitInvalid, r.code, "%s: %s", cmd, r.stdout)
		want := map[string]string{
			"check":   "npu-atom-02: owned by rbln-driver now, would get no driver (NoMatchingDriver)",
			"preview": "npu-atom-02: lose-driver rbln-driver -> - (NoMatchingDriver)",
		}[cmd]
		assert.Contains(t, r.stdout, want)
		assert.Contains(t, r.stdout, "--allow-driver-loss")
		acked := run(t, "", append([]string{cmd, "--allow-driver-loss"}, args...)...)
		assert.Equal(t, ExitOK, acked.code, "%s: %s", cmd, acked.stdout)
	}
	r := run(t, "", append([]string{"check", "-o", "json"}, args...)...)
	var rep release.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.NotEmpty(t, rep.DriverLoss)
	assert.False(t, rep.DriverLossAllowed)
	assert.Equal(t, len(rep.DriverLoss), rep.Failures)
}

func TestRenderWarningsCount(t *testing.T) {
	// An instance that differs from the default only by its selector is a render warning.
	values := writeTemp(t, "values.yaml", "driver:\n  instances:\n    atom:\n      nodeSelector: {rebellions.ai/npu.family: atom}\n")
	r := run(t, "", "check", "-f", values, "--fail-on-warn")
	assert.Equal(t, ExitInvalid, r.code, r.stdout)
	assert.Contains(t, r.stdout, "RENDER WARNINGS\n  driver.instances.atom: rbln-driver-atom differs from rbln-driver only by its nodeSelector")
	assert.Contains(t, r.stdout, "0 failures, 1 warning; FAILED (--fail-on-warn)")
	js := run(t, "", "check", "-f", values, "-o", "json")
	assert.Equal(t, ExitOK, js.code)
	var rep release.Report
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &rep))
	assert.Equal(t, 1, rep.Warnings)
	require.Len(t, rep.RenderWarnings, 1)
	assert.Equal(t, "driver.instances.atom", rep.RenderWarnings[0].Path)
}

// TestOneLoader: policy test, check and review refuse the same modules with the same words.
func TestOneLoader(t *testing.T) {
	for name, tt := range map[string]struct{ file, content, want string }{
		"deny is not a set":              {"a.rego", "package driverguard.team\n\ndeny := \"no\"\n", "a.rego:3:1: deny must collect messages as a set"},
		"a package outside driverguard.": {"b.rego", "package team\n\ndeny contains \"x\" if false\n", "b.rego:1:1: package team: driverguard evaluates only packages under driverguard."},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.content), 0o600))
			req := writeTemp(t, "req.json", string(wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver", nil), nil)))))
			for _, args := range [][]string{
				{"policy", "test", dir},
				{"check", "-f", exampleValues, "--policy", dir},
				{"review", "-f", req, "--policy", dir},
				{"policy", "list", "--policy", dir},
				{"serve", "--policy-dir", dir, "--kubeconfig", filepath.Join(dir, "no-kubeconfig")},
			} {
				r := run(t, "", args...)
				assert.Equal(t, ExitUsage, r.code, "%v", args)
				assert.Contains(t, r.stderr, "Error: loading policies: policy: "+filepath.Join(dir, tt.want), "%v", args)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	r := run(t, "", "version", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var bi BuildInfo
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &bi))
	assert.True(t, strings.HasPrefix(bi.GoVersion, "go1."), bi.GoVersion)
	assert.NotEmpty(t, bi.Version)
	flag := run(t, "", "--version")
	require.Equal(t, ExitOK, flag.code)
	assert.Regexp(t, `^driverguard \S+ \(revision \S+.*, go1\.\d+.*\)\n$`, flag.stdout)
	table := run(t, "", "version")
	assert.Contains(t, table.stdout, "Go version:")
}

func TestCLIConventions(t *testing.T) {
	dupNodes := writeTemp(t, "nodes.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n")
	nameless := writeTemp(t, "nameless.yaml", "apiVersion: v1\nkind: Node\nmetadata: {labels: {x: y}}\n")
	big := writeTemp(t, "big.json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","kind":{"group":"rebellions.ai","version":"v1alpha1","kind":"RBLNDriver"},"operation":"CREATE","object":{"metadata":{"name":"x","annotations":{"a":"`+strings.Repeat("a", 8<<20)+`"}}}}}`)
	long := strings.Repeat("x", 1<<20)
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stderr string
	}{
		{"a bad -o fails while parsing", "", []string{"check", "-f", exampleValues, "-o", "xml"}, ExitUsage, `invalid argument "xml" for "-o, --output" flag: unsupported output format "xml": use one of table, json, yaml`},
		{"a bad -o is not echoed whole", "", []string{"route", "-o", long}, ExitUsage, "... (1048576 bytes)"},
		{"duplicate nodes", "", []string{"check", "-f", exampleValues, "--nodes", dupNodes}, ExitUsage, `a second Node named "a"`},
		{"nameless nodes", "", []string{"preview", "-f", exampleValues, "--nodes", nameless}, ExitUsage, "the Node has no metadata.name"},
		{"stdin twice: check", "x", []string{"check", "-f", "-", "--nodes", "-"}, ExitUsage, "-f, --nodes all read standard input ('-'); only one input can"},
		{"stdin twice: render", "x", []string{"render", "-f", "-", "-f", "-"}, ExitUsage, "only one input can"},
		{"stdin twice: review", "x", []string{"review", "-f", "-", "--drivers", "-"}, ExitUsage, "only one input can"},
		{"stdin twice: policy input", "x", []string{"policy", "input", "-f", "-", "--drivers", "-"}, ExitUsage, "only one input can"},
		{"stdin twice: route", "x", []string{"route", "--drivers", "-", "--nodes", "-"}, ExitUsage, "only one input can"},
		{"an oversized AdmissionReview cannot be judged", "", []string{"review", "-f", big}, ExitUsage, ""},
		{"--set hint for a number", "", []string{"render", "--set", "driver.image.tag=3"}, ExitInvalid, "--set reads 3 as the number 3: pass it with --set-string 'driver.image.tag=3'"},
		{"--set hint quotes what was given", "", []string{"render", "--set", "driver.instances.x.nodeSelector.a=True"}, ExitInvalid, "--set reads True as the boolean true: pass it with --set-string 'driver.instances.x.nodeSelector.a=True'"},
		{"--set hint for a dotted label key", "", []string{"render", "--set", "driver.instances.x.nodeSelector.rebellions.ai/npu.family=atom"}, ExitInvalid,
			`escape its dots: --set 'driver.instances.x.nodeSelector.rebellions\.ai/npu\.family=atom'`},
		{"a 1 MB value is not echoed", "", []string{"render", "--set-string", "driver.instances.x.nodeSelector.env=" + long}, ExitInvalid, "... (1048576 bytes)"},
		{"a type clash with the chart's defaults is one error, not Helm's log line too", "", []string{"render", "--set", "driver.image=foo"}, ExitInvalid, `Error: invalid values, nothing rendered:
  driver.image: Invalid value: "foo": must be a map of registry, repository, tag and pullPolicy
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.stdin, tt.args...)
			assert.Equal(t, tt.code, r.code, "stdout %.300s\nstderr %.500s", r.stdout, r.stderr)
			assert.Contains(t, r.stderr, tt.stderr)
			assert.Less(t, len(r.stderr), 10000, "no long echo")
			for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				if line != "" && !strings.HasPrefix(line, "Error: ") && !strings.HasPrefix(line, "Warning: ") && !strings.HasPrefix(line, "  ") {
					t.Errorf("a raw line on stderr: %q", line)
				}
			}
		})
	}
}

func TestReviewOutputs(t *testing.T) {
	req := writeTemp(t, "req.json", string(wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", nil), nil)))))
	table := run(t, "", "review", "-f", req, "-o", "table")
	assert.Equal(t, ExitInvalid, table.code)
	assert.Contains(t, table.stdout, "RBLNDriver/rbln-driver-x CREATE: DENIED (422 Invalid)\n  DENY  FieldValueRequired: spec.nodeSelector: Required value: only the default resource rbln-driver may have an empty selector")
	y := run(t, "", "review", "-f", req, "-o", "yaml")
	assert.Equal(t, ExitInvalid, y.code)
	assert.Contains(t, y.stdout, "kind: AdmissionReview\n")
}

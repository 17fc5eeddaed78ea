package app

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	exampleValues = "../../../examples/multi-driver.yaml"
	exampleNodes  = "../../../examples/nodes.yaml"
)

type result struct {
	code   int
	stdout string
	stderr string
}

// The clock and the version every test's run records (plan's inputs): golden files stay put.
var (
	testTime    = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	testVersion = "driverguard v0.0.0-test (revision unknown, go, test)"
)

func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	s := Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut, Now: func() time.Time { return testTime }, Version: testVersion}
	code := Run(context.Background(), s, args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cmd/driverguard/app -update to create it")
	assert.Equal(t, string(want), got, "output differs from %s (run with -update if the change is intended)", path)
}

func TestRenderGolden(t *testing.T) {
	r := run(t, "", "render", "-f", exampleValues)
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	golden(t, "render-multi-driver.yaml", r.stdout)
	again := run(t, "", "render", "-f", exampleValues)
	assert.Equal(t, r.stdout, again.stdout, "render output is byte-for-byte stable")
}

func TestRenderJSONIsAList(t *testing.T) {
	r := run(t, "", "render", "-f", exampleValues, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var list struct {
		Kind  string
		Items []struct{ Kind string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	assert.Equal(t, "List", list.Kind)
	require.Len(t, list.Items, 4)
	assert.Equal(t, "RBLNClusterPolicy", list.Items[0].Kind)
	assert.Equal(t, "RBLNDriver", list.Items[1].Kind)
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("driver: {instances: {atom: {imgae: {tag: x}, nodeSelector: {k: a}}}}"), 0o600))
	broken := filepath.Join(dir, "broken.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("driver: [unclosed"), 0o600))
	twoDocs := filepath.Join(dir, "two.yaml")
	require.NoError(t, os.WriteFile(twoDocs, []byte("driver: {image: {tag: \"3.2.2\"}}\n---\ndriver: {image: {tag: \"9.9.9\"}}\n"), 0o600))
	trailing := filepath.Join(dir, "trailing.yaml")
	require.NoError(t, os.WriteFile(trailing, []byte("---\ndriver: {image: {tag: \"3.2.2\"}}\n---\n# nothing\n"), 0o600))
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStderr string
	}{
		{"invalid values", []string{"render", "-f", bad}, ExitInvalid, `driver.instances.atom.imgae: Unsupported value: "imgae": unknown field, did you mean "image"?`},
		{"unparsable values file", []string{"render", "-f", broken}, ExitUsage, "broken.yaml"},
		{"missing values file", []string{"render", "-f", filepath.Join(dir, "nope.yaml")}, ExitUsage, "nope.yaml"},
		{"two YAML documents in a values file (Helm drops the second)", []string{"render", "-f", twoDocs}, ExitUsage, "two.yaml: the file holds more than one YAML document (document 2"},
		{"empty documents around one", []string{"render", "-f", trailing}, ExitOK, ""},
		{"release name Helm refuses", []string{"render", "--release-name", "Bad_Name"}, ExitUsage, `--release-name "Bad_Name": invalid release name`},
		{"release name over 53 characters", []string{"check", "--release-name", strings.Repeat("a", 54)}, ExitUsage, "invalid release name"},
		{"unknown flag", []string{"render", "--bogus"}, ExitUsage, "unknown flag: --bogus"},
		{"unknown command", []string{"rendr"}, ExitUsage, `unknown command "rendr"`},
		{"bad output format", []string{"render", "-o", "xml"}, ExitUsage, `unsupported output format "xml"`},
		{"preview invalid values", []string{"preview", "-f", bad}, ExitInvalid, "did you mean"},
		{"route without files", []string{"route"}, ExitUsage, "both --drivers and --nodes are required"},
		{"route with a missing nodes file", []string{"route", "--drivers", exampleValues, "--nodes", filepath.Join(dir, "nope.yaml")}, ExitUsage, "reading"},
		{"check-images without nodes", []string{"preview", "-f", exampleValues, "--check-images"}, ExitUsage, "--check-images needs the nodes (--nodes or --live)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.args...)
			assert.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, tt.wantStderr)
			if tt.code != ExitOK {
				assert.Empty(t, r.stdout, "no partial output on bad input")
			}
		})
	}
}

func TestPreviewGolden(t *testing.T) {
	r := run(t, "", "preview", "-f", exampleValues, "--nodes", exampleNodes)
	require.Equal(t, ExitOK, r.code, r.stderr)
	golden(t, "preview-multi-driver.txt", r.stdout)
}

func TestPreviewJSON(t *testing.T) {
	r := run(t, "", "preview", "-f", exampleValues, "--nodes", exampleNodes, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep struct {
		Resources []struct {
			Name       string
			Version    string
			Overridden []struct{ Field string }
		}
		Nodes struct {
			FamilyLabelMissing []string
			ChangingDriver     []struct{ Node, From, To string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Resources, 3)
	assert.Equal(t, "rbln-driver-atom-canary", rep.Resources[1].Name)
	assert.Equal(t, "3.3.0-rc1", rep.Resources[1].Version)
	var fields []string
	for _, f := range rep.Resources[1].Overridden {
		fields = append(fields, f.Field)
	}
	assert.ElementsMatch(t, []string{"version", "resources.limits.memory", "nodeSelector"}, fields)
	assert.NotEmpty(t, rep.Nodes.FamilyLabelMissing)
}

// TestPreviewNodesThatLoseTheirDriver: deployDefault=false removes the fallback; nodes owned
// by rbln-driver today are listed.
func TestPreviewNodesThatLoseTheirDriver(t *testing.T) {
	r := run(t, "", "preview", "-f", exampleValues, "--set", "driver.deployDefault=false", "--nodes", exampleNodes, "-o", "json")
	require.Equal(t, ExitInvalid, r.code, "as check: an unacknowledged driver loss fails; %s", r.stderr)
	var rep struct {
		Nodes struct {
			LosingDriver []struct{ Node, From string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.NotEmpty(t, rep.Nodes.LosingDriver)
	for _, l := range rep.Nodes.LosingDriver {
		assert.Equal(t, "rbln-driver", l.From)
	}
	table := run(t, "", "preview", "-f", exampleValues, "--set", "driver.deployDefault=false", "--nodes", exampleNodes)
	assert.Contains(t, table.stdout, "npu-atom-02: lose-driver rbln-driver -> - (NoMatchingDriver)")
	assert.Contains(t, table.stdout, "acknowledge with --allow-driver-loss")
	acked := run(t, "", "preview", "-f", exampleValues, "--set", "driver.deployDefault=false", "--nodes", exampleNodes, "--allow-driver-loss")
	assert.Equal(t, ExitOK, acked.code, acked.stdout)
}

func TestPreviewWarnsSameAsDefault(t *testing.T) {
	r := run(t, "", "preview", "-f", exampleValues, "--set-string", "driver.instances.same.nodeSelector.zone=a")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "rbln-driver-same differs from rbln-driver only by its nodeSelector")
}

// TestRouteJSONStableAcrossInputOrder: identical output across runs and input orders.
func TestRouteJSONStableAcrossInputOrder(t *testing.T) {
	rendered := run(t, "", "render", "-f", exampleValues)
	require.Equal(t, ExitOK, rendered.code)
	dir := t.TempDir()
	drivers := filepath.Join(dir, "drivers.yaml")
	require.NoError(t, os.WriteFile(drivers, []byte(rendered.stdout), 0o600))

	first := run(t, "", "route", "--drivers", drivers, "--nodes", exampleNodes, "-o", "json")
	require.Equal(t, ExitOK, first.code, first.stderr)
	golden(t, "route-multi-driver.json", first.stdout)

	// Reverse the drivers and the nodes (as a plain Node stream instead of a List).
	docs := strings.Split(rendered.stdout, "---\n")
	slices.Reverse(docs)
	require.NoError(t, os.WriteFile(drivers, []byte(strings.Join(docs, "---\n")), 0o600))
	raw, err := os.ReadFile(exampleNodes)
	require.NoError(t, err)
	var list struct{ Items []map[string]any }
	require.NoError(t, yaml.Unmarshal(raw, &list))
	slices.Reverse(list.Items)
	var stream []string
	for _, item := range list.Items {
		item["apiVersion"], item["kind"] = "v1", "Node"
		b, err := yaml.Marshal(item)
		require.NoError(t, err)
		stream = append(stream, string(b))
	}
	nodes := filepath.Join(dir, "nodes.yaml")
	require.NoError(t, os.WriteFile(nodes, []byte(strings.Join(stream, "---\n")), 0o600))
	second := run(t, "", "route", "--drivers", drivers, "--nodes", nodes, "-o", "json")
	require.Equal(t, ExitOK, second.code, second.stderr)
	assert.Equal(t, first.stdout, second.stdout)

	// And from standard input.
	third := run(t, strings.Join(stream, "---\n"), "route", "--drivers", drivers, "--nodes", "-", "-o", "json")
	assert.Equal(t, first.stdout, third.stdout)
}

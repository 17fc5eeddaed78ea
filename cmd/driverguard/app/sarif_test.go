package app

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driverguard/driverguard/output/sariftest"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sarifSchema compiles the SARIF 2.1.0 schema, formats asserted.
func sarifSchema(t *testing.T) *jsonschema.Schema { return sariftest.Schema(t) }

// sarifDoc is what these tests read back of a SARIF log.
type sarifDoc struct {
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Rules []struct {
					ID string `json:"id"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Results []sarifResultDoc `json:"results"`
	} `json:"runs"`
}

// sarifResultDoc is what these tests read back of a SARIF result.
type sarifResultDoc struct {
	RuleID    string `json:"ruleId"`
	RuleIndex int    `json:"ruleIndex"`
	Level     string `json:"level"`
	Message   struct {
		Text string `json:"text"`
	} `json:"message"`
	Locations []struct {
		PhysicalLocation *struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region struct {
				StartLine   int `json:"startLine"`
				StartColumn int `json:"startColumn"`
			} `json:"region"`
		} `json:"physicalLocation"`
		LogicalLocations []struct {
			FullyQualifiedName string `json:"fullyQualifiedName"`
		} `json:"logicalLocations"`
	} `json:"locations"`
	Properties map[string]string `json:"properties"`
}

// validSARIF validates out against the schema and decodes it.
func validSARIF(t *testing.T, schema *jsonschema.Schema, out string) sarifDoc {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	require.NoError(t, err, out)
	require.NoError(t, schema.Validate(inst), "not SARIF 2.1.0:\n%s", out)
	var doc sarifDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, "2.1.0", doc.Version)
	require.Len(t, doc.Runs, 1)
	for _, r := range doc.Runs[0].Results { // ruleIndex points at its rule
		require.Less(t, r.RuleIndex, len(doc.Runs[0].Tool.Driver.Rules))
		require.Equal(t, r.RuleID, doc.Runs[0].Tool.Driver.Rules[r.RuleIndex].ID)
	}
	return doc
}

// sarifAt is a result's rule, level, object and file:line:col ("" without a file).
type sarifAt struct{ rule, level, object, at string }

func sarifResults(doc sarifDoc) map[sarifAt]string {
	out := map[sarifAt]string{}
	for _, r := range doc.Runs[0].Results {
		k := sarifAt{rule: r.RuleID, level: r.Level}
		if len(r.Locations) > 0 {
			l := r.Locations[0]
			if len(l.LogicalLocations) > 0 {
				k.object = l.LogicalLocations[0].FullyQualifiedName
			}
			if p := l.PhysicalLocation; p != nil {
				k.at = filepath.Base(p.ArtifactLocation.URI) + ":" + itoa(p.Region.StartLine) + ":" + itoa(p.Region.StartColumn)
			}
		}
		out[k] = r.Message.Text
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestCheckSARIF: check -o sarif is SARIF 2.1.0; each result is at the values key that
// produced it, across several values files; a value given with --set has no line and the
// result says so; deny is error, warn warning, audit note.
func TestCheckSARIF(t *testing.T) {
	schema := sarifSchema(t)
	dir := t.TempDir()
	files := map[string]string{
		"base.yaml": `driver:
  nodeSelector: {env: prod}
  image:
    tag: "2.0.0"
`,
		"team.yaml": `driver:
  instances:
    atom:
      nodeSelector:
        rebellions.ai/npu.family: atom
    legacy:
      nodeSelector: {env: legacy}
`,
		"policies/names.rego": suiteFiles["policies/names.rego"],
		"policies/trial.rego": `package driverguard.team.trial

deny contains msg if {
	input.object.kind == "RBLNDriver"
	msg := sprintf("driver %s: on trial", [input.object.metadata.name])
}
`,
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	res := run(t, "", "check", "-f", filepath.Join(dir, "base.yaml"), "-f", filepath.Join(dir, "team.yaml"),
		"--set", "driver.instances.twin.nodeSelector.env=prod",
		"--policy", filepath.Join(dir, "policies"), "--enforcement", "team.trial=audit", "-o", "sarif")
	require.Equal(t, 1, res.code, res.stderr)
	got := sarifResults(validSARIF(t, schema, res.stdout))
	// The schema bites: a level SARIF does not know is refused.
	bad, err := jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(res.stdout, `"level": "error"`, `"level": "fatal"`, 1)))
	require.NoError(t, err)
	require.Error(t, schema.Validate(bad))

	want := map[sarifAt]string{
		// a potential tie: the instance's own selector key, in the second file
		{"PotentialConflict", "warning", "RBLNDriver/rbln-driver-atom", "team.yaml:4:7"}: "RBLNDriver/rbln-driver-atom: spec.nodeSelector: could tie",
		// a policy denial: the instance's key
		{"driverguard.team.names.deny", "error", "RBLNDriver/rbln-driver-legacy", "team.yaml:6:5"}: "legacy drivers are retired",
		// audit enforcement: a note, at the default driver's key in the last file that writes it
		{"driverguard.team.trial.deny", "note", "RBLNDriver/rbln-driver", "team.yaml:1:1"}: "driver rbln-driver: on trial",
		// an instance only --set wrote: no line, and the result says so
		{"IdenticalNodeSelector", "error", "RBLNDriver/rbln-driver-twin", ""}: "written on the command line (--set driver.instances.twin.nodeSelector.env=prod): no file line",
	}
	for k, msg := range want {
		require.Contains(t, got, k, "results: %v", got)
		assert.Contains(t, got[k], msg)
	}

	// A relative values path stays relative: code scanning resolves it from the repository root.
	rel, err := filepath.Rel(mustGetwd(t), filepath.Join(dir, "team.yaml"))
	require.NoError(t, err)
	res = run(t, "", "check", "-f", rel, "-o", "sarif")
	require.Equal(t, 0, res.code, res.stderr)
	doc := validSARIF(t, schema, res.stdout)
	require.NotEmpty(t, doc.Runs[0].Results)
	for _, r := range doc.Runs[0].Results {
		if p := r.Locations[0].PhysicalLocation; p != nil {
			assert.Equal(t, filepath.ToSlash(rel), p.ArtifactLocation.URI)
		}
	}
}

// TestCheckSARIFInvalidValues: values that do not render are SARIF too (exit 1): one
// InvalidValues error per problem at its key's line, the message on stderr as without -o.
func TestCheckSARIFInvalidValues(t *testing.T) {
	schema := sarifSchema(t)
	path := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`driver:
  instances:
    canary:
      nodeSelector: {env: canary}
      imagee: {tag: "2.0.0"}
`), 0o644))
	res := run(t, "", "check", "-f", path, "-o", "sarif")
	require.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "invalid values")
	got := sarifResults(validSARIF(t, schema, res.stdout))
	msg, ok := got[sarifAt{rule: "InvalidValues", level: "error", object: "Values/values", at: "bad.yaml:5:7"}]
	require.True(t, ok, "results: %v", got)
	assert.Contains(t, msg, "unknown field")
}

// TestAuditSARIFAndJUnit: audit -o sarif is SARIF 2.1.0 with every result that is not a pass;
// audit -o junit parses, one test case per result, failed by what fails the audit.
func TestAuditSARIFAndJUnit(t *testing.T) {
	schema := sarifSchema(t)
	args := []string{"audit", "--nodes", exampleNodes, "--drivers", "../../../examples/drivers.yaml"}
	res := run(t, "", append(args, "-o", "sarif")...)
	require.Equal(t, 1, res.code, res.stderr)
	got := sarifResults(validSARIF(t, schema, res.stdout))
	_, ok := got[sarifAt{rule: "DriverFamilyLabelMissing", level: "error", object: "RBLNDriver/rbln-driver"}]
	assert.True(t, ok, "results: %v", got)

	res = run(t, "", append(args, "-o", "junit")...)
	require.Equal(t, 1, res.code, res.stderr)
	var doc junitDoc
	require.NoError(t, xml.Unmarshal([]byte(res.stdout), &doc))
	require.NotEmpty(t, doc.Suites)
	failed := map[string]bool{}
	cases := 0
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			cases++
			if c.Failure != nil {
				failed[c.Name] = true
			}
		}
	}
	assert.Equal(t, doc.Tests, cases)
	assert.Equal(t, doc.Failures, len(failed))
	assert.True(t, failed["RBLNDriver/rbln-driver DriverFamilyLabelMissing"], "failed: %v", failed)
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

// TestTestSARIF: test -o sarif is SARIF 2.1.0: a missed expectation is an error at its line
// in the suite file; a rule no case fires is a note.
func TestTestSARIF(t *testing.T) {
	schema := sarifSchema(t)
	path := writeSuite(t, strings.Replace(passingCases, `message: "legacy drivers are retired"`, `message: "legacy drivers are welcome"`, 1))
	res := run(t, "", "test", path, "-o", "sarif")
	require.Equal(t, 1, res.code, res.stderr)
	doc := validSARIF(t, schema, res.stdout)
	lines := strings.Split(mustRead(t, path), "\n")
	var blocks []string
	uncovered := 0
	for _, r := range doc.Runs[0].Results {
		switch r.RuleID {
		case "TestCaseFailed":
			require.Equal(t, "error", r.Level)
			p := r.Locations[0].PhysicalLocation
			require.NotNil(t, p)
			assert.Equal(t, "file://"+filepath.ToSlash(path), p.ArtifactLocation.URI, "an absolute path is a file URI")
			blocks = append(blocks, strings.Join(lines[p.Region.StartLine-1:min(p.Region.StartLine+4, len(lines))], "\n")+"\n=> "+r.Message.Text)
		case "RuleNeverFired":
			uncovered++
			assert.Equal(t, "note", r.Level)
		}
	}
	// The result that missed, at its own lines (which hold the message expected), and the
	// finding the case did not list (exhaustive), at the case's line.
	require.Len(t, blocks, 2)
	assert.Contains(t, blocks[0], `message: "legacy drivers are welcome"`)
	assert.Contains(t, blocks[0], "=> TestCase/legacy drivers are retired: expected fail RBLNDriver/rbln-driver-legacy driverguard.team.names matching /legacy drivers are welcome/")
	assert.Contains(t, blocks[1], "- name: legacy drivers are retired")
	assert.Contains(t, blocks[1], "expected nothing else (exhaustive)")
	assert.Positive(t, uncovered, "the library's rules no case fires")
}

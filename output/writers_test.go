package output_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/output"
)

// write writes r in format f.
func write(t *testing.T, f output.Format, r *output.Report) string {
	t.Helper()
	w, ok := output.For(f)
	require.True(t, ok, f)
	var b bytes.Buffer
	require.NoError(t, w.Write(&b, r))
	return b.String()
}

var (
	driverA = finding.Object{Kind: "RBLNDriver", Name: "a"}
	nodeN1  = finding.Object{Kind: finding.KindNode, Name: "n1"}
)

func TestGitHub(t *testing.T) {
	tests := []struct {
		name string
		f    finding.Finding
		want string
	}{
		{name: "deny at a line and column",
			f: finding.Finding{Rule: "FieldValueInvalid", Level: finding.Deny, Object: driverA, Field: "spec.version", Message: "bad",
				Location: &finding.Location{File: "values.yaml", Line: 3, Column: 5}},
			want: "::error file=values.yaml,line=3,col=5,title=FieldValueInvalid::RBLNDriver/a: spec.version: bad"},
		{name: "warn at a line without a column",
			f: finding.Finding{Rule: "PotentialConflict", Level: finding.Warn, Object: driverA, Message: "could tie",
				Location: &finding.Location{File: "v.yaml", Line: 7}},
			want: "::warning file=v.yaml,line=7,title=PotentialConflict::RBLNDriver/a: could tie"},
		{name: "audit is a notice; no location",
			f:    finding.Finding{Rule: "StaleOwnerLabel", Level: finding.Audit, Object: nodeN1, Message: "drift"},
			want: "::notice title=StaleOwnerLabel::Node/n1: drift"},
		{name: "a location without a line gives no file",
			f: finding.Finding{Rule: "UpgradePolicy", Level: finding.Warn, Object: driverA, Message: "risky",
				Location: &finding.Location{File: "values.yaml", ValuesPath: "driver.upgradePolicy"}},
			want: "::warning title=UpgradePolicy::RBLNDriver/a: risky"},
		{name: "a value from a flag gives no file",
			f: finding.Finding{Rule: "UpgradePolicy", Level: finding.Warn, Object: driverA, Message: "risky",
				Location: &finding.Location{Flag: "--set driver.x=1", ValuesPath: "driver.x"}},
			want: "::warning title=UpgradePolicy::RBLNDriver/a: risky"},
		{name: "standard input gives no file",
			f: finding.Finding{Rule: "InvalidValues", Level: finding.Deny, Object: finding.Object{Kind: finding.KindValues, Name: "values"}, Message: "x: bad",
				Location: &finding.Location{File: "<stdin>", Line: 2, Column: 1}},
			want: "::error title=InvalidValues::Values/values: x: bad"},
		{name: "the message escapes %, CR and LF",
			f:    finding.Finding{Rule: "team.deny", Level: finding.Deny, Object: driverA, Message: "100% wrong\r\nsecond line\nthird %0A"},
			want: "::error title=team.deny::RBLNDriver/a: policy team: 100%25 wrong%0D%0Asecond line%0Athird %250A"},
		{name: "properties escape ':' and ',' too",
			f: finding.Finding{Rule: "odd:rule,name", Level: finding.Deny, Object: driverA, Message: "m: a, b",
				Location: &finding.Location{File: "dir,x/c:d%\n.yaml", Line: 1}},
			want: "::error file=dir%2Cx/c%3Ad%25%0A.yaml,line=1,title=odd%3Arule%2Cname::RBLNDriver/a: m: a, b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := write(t, output.GitHub, &output.Report{Findings: []finding.Finding{tt.f}})
			assert.Equal(t, tt.want+"\n", got)
		})
	}
	t.Run("a line per finding, in order", func(t *testing.T) {
		got := write(t, output.GitHub, &output.Report{Findings: []finding.Finding{tests[0].f, tests[2].f}})
		assert.Equal(t, tests[0].want+"\n"+tests[2].want+"\n", got)
	})
	t.Run("no findings, no lines", func(t *testing.T) {
		assert.Empty(t, write(t, output.GitHub, &output.Report{}))
	})
}

func TestMarkdown(t *testing.T) {
	tests := []struct {
		name string
		f    finding.Finding
		row  string
	}{
		{name: "plain",
			f:   finding.Finding{Rule: "FieldValueInvalid", Level: finding.Deny, Object: driverA, Field: "spec.version", Message: "bad"},
			row: "| deny | `RBLNDriver/a` | `FieldValueInvalid` | spec.version: bad |"},
		{name: "pipes, angle brackets, backticks and newlines are escaped",
			f:   finding.Finding{Rule: "team.warn", Level: finding.Warn, Object: driverA, Message: "a|b <script> `code`\nnext\r\nlast"},
			row: "| warn | `RBLNDriver/a` | `team.warn` | policy team: a\\|b \\<script> \\`code\\`\\\\nnext\\\\r\\\\nlast |"},
		{name: "the object is a code span, its pipe escaped",
			f:   finding.Finding{Rule: "StaleOwnerLabel", Level: finding.Audit, Object: finding.Object{Kind: finding.KindNode, Name: "n|<1>`"}, Message: "drift"},
			row: "| audit | `` Node/n\\|<1>` `` | `StaleOwnerLabel` | drift |"},
		{name: "no object",
			f:   finding.Finding{Rule: "InputWarning", Level: finding.Warn, Message: "no nodes"},
			row: "| warn | `-` | `InputWarning` | no nodes |"},
	}
	const header = "| level | object | rule | message |\n|---|---|---|---|\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := write(t, output.Markdown, &output.Report{Findings: []finding.Finding{tt.f}})
			assert.Equal(t, header+tt.row+"\n", got)
			assert.Equal(t, 3, strings.Count(got, "\n"), "one row per finding")
		})
	}
	t.Run("no findings: the header", func(t *testing.T) {
		assert.Equal(t, header, write(t, output.Markdown, &output.Report{}))
	})
	t.Run("the command's markdown", func(t *testing.T) {
		r := &output.Report{Findings: []finding.Finding{tests[0].f}, Markdown: func(w io.Writer) error {
			_, err := io.WriteString(w, "# own\n")
			return err
		}}
		assert.Equal(t, "# own\n", write(t, output.Markdown, r))
	})
}

// TestHTML: -o html is the command's page; a report without one is an error, not an empty
// page, and a command that has none does not offer the format.
func TestHTML(t *testing.T) {
	t.Run("the command's page", func(t *testing.T) {
		r := &output.Report{HTML: func(w io.Writer) error {
			_, err := io.WriteString(w, "<!doctype html><title>own</title>\n")
			return err
		}}
		assert.Equal(t, "<!doctype html><title>own</title>\n", write(t, output.HTML, r))
	})
	t.Run("no page", func(t *testing.T) {
		w, ok := output.For(output.HTML)
		require.True(t, ok)
		var b strings.Builder
		err := w.Write(&b, &output.Report{Findings: []finding.Finding{{Rule: "r", Level: finding.Deny, Object: driverA}}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no HTML page")
		assert.Empty(t, b.String())
	})
}

func TestTable(t *testing.T) {
	fs := []finding.Finding{
		{Rule: "FieldValueInvalid", Level: finding.Deny, Object: driverA, Field: "spec.version", Message: "bad\nsecond line"},
		{Rule: "team.warn", Level: finding.Warn, Object: driverA, Message: "careful"},
		{Rule: "StaleOwnerLabel", Level: finding.Audit, Object: nodeN1, Message: "drift"},
		{Rule: "InputWarning", Level: finding.Warn, Message: "no nodes"},
	}
	got := write(t, output.Table, &output.Report{Findings: fs})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	require.Len(t, lines, 7, got)
	assert.Regexp(t, `^LEVEL +OBJECT +RULE +MESSAGE$`, lines[0])
	assert.Regexp(t, `^FAIL +RBLNDriver/a +FieldValueInvalid +spec.version: bad\\nsecond line$`, lines[1], "one line per finding: the line break escaped")
	assert.Regexp(t, `^WARN +RBLNDriver/a +team.warn +policy team: careful$`, lines[2])
	assert.Regexp(t, `^AUDIT +Node/n1 +StaleOwnerLabel +drift$`, lines[3])
	assert.Regexp(t, `^WARN +- +InputWarning +no nodes$`, lines[4], "no object: a dash")
	assert.Equal(t, "", lines[5])
	assert.Equal(t, "4 findings: 1 deny, 2 warn, 1 audit", lines[6])

	own := &output.Report{Findings: fs, Table: func(w io.Writer) error {
		_, err := io.WriteString(w, "own table\n")
		return err
	}}
	assert.Equal(t, "own table\n", write(t, output.Table, own))
}

func TestDocument(t *testing.T) {
	f := finding.Finding{Rule: "FieldValueInvalid", Level: finding.Deny, Object: driverA, Field: "spec.version", Message: "bad",
		Location: &finding.Location{File: "values.yaml", Line: 3, Column: 5, ValuesPath: "driver.image.tag"}, Nodes: []string{"n1"}, Count: 2}
	type doc struct {
		Findings []finding.Finding `json:"findings"`
		Passed   bool              `json:"passed"`
	}
	tests := []struct {
		name   string
		report *output.Report
		json   string
	}{
		{name: "no findings: an empty list, never null", report: &output.Report{},
			json: `{"findings": []}`},
		{name: "the findings", report: &output.Report{Findings: []finding.Finding{f}},
			json: `{"findings": [{"rule": "FieldValueInvalid", "level": "deny", "object": {"kind": "RBLNDriver", "name": "a"}, "field": "spec.version",
				"message": "bad", "location": {"valuesPath": "driver.image.tag", "file": "values.yaml", "line": 3, "column": 5}, "nodes": ["n1"], "count": 2}]}`},
		{name: "the command's document", report: &output.Report{Findings: []finding.Finding{f}, Document: doc{Findings: []finding.Finding{}, Passed: true}},
			json: `{"findings": [], "passed": true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := write(t, output.JSON, tt.report)
			assert.JSONEq(t, tt.json, got)
			assert.True(t, strings.HasSuffix(got, "}\n"), "ends with a newline")
			y := write(t, output.YAML, tt.report)
			asJSON, err := yaml.YAMLToJSON([]byte(y))
			require.NoError(t, err)
			assert.JSONEq(t, tt.json, string(asJSON), "the YAML is the same document:\n%s", y)
		})
	}
	t.Run("the enforcement stays out of the findings JSON", func(t *testing.T) {
		g := f
		g.Enforcement = finding.Warn
		var back struct{ Findings []map[string]any }
		require.NoError(t, json.Unmarshal([]byte(write(t, output.JSON, &output.Report{Findings: []finding.Finding{g}})), &back))
		require.Len(t, back.Findings, 1)
		assert.NotContains(t, back.Findings[0], "enforcement")
	})
	t.Run("the command's YAML", func(t *testing.T) {
		r := &output.Report{Findings: []finding.Finding{f}, YAML: func(w io.Writer) error {
			_, err := io.WriteString(w, "---\nkind: ClusterReport\n")
			return err
		}}
		assert.Equal(t, "---\nkind: ClusterReport\n", write(t, output.YAML, r))
		assert.JSONEq(t, tests[1].json, write(t, output.JSON, r), "JSON keeps the document")
	})
}

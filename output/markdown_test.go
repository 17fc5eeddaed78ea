package output_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark/ast"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/output"
	"github.com/driverguard/driverguard/output/inerttest"
)

// TestMarkdownHelpersMakeNoLink renders every hostile value through each Markdown helper — as
// prose, in a table cell, as a code span, in a fenced block — with goldmark's GFM (Linkify
// included, as code hosts render): no link, image, autolink or HTML is made of any, and each
// value comes back as the text (or code) it was, one line, one cell.
func TestMarkdownHelpersMakeNoLink(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Values\n\n| text | code |\n|---|---|\n")
	values := inerttest.All()
	for _, v := range values {
		fmt.Fprintf(&b, "| %s | %s |\n", output.MarkdownText(v), output.MarkdownCodeCell(v))
	}
	b.WriteString("\n")
	for _, v := range values {
		fmt.Fprintf(&b, "- text %s and code %s.\n", output.MarkdownText(v), output.MarkdownCode(v))
	}
	for _, v := range values {
		lines := strings.Split(v, "\n")
		f := output.MarkdownFence(lines)
		fmt.Fprintf(&b, "\n%ssh\n%s\n%s\n", f, strings.Join(lines, "\n"), f)
	}
	source := []byte(b.String())
	assert.Zero(t, inerttest.AssertNoLiveMarkdown(t, source), "the helpers make no link of their own")

	// Each row is one row of two cells, and each code span holds the value, escaped.
	doc := inerttest.Parse(source)
	var rows, codes []string
	require.NoError(t, ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.Kind().String() {
		case "TableRow":
			rows = append(rows, fmt.Sprint(n.ChildCount()))
		case "CodeSpan":
			var s strings.Builder
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				s.Write(c.(*ast.Text).Segment.Value(source))
			}
			codes = append(codes, s.String())
		}
		return ast.WalkContinue, nil
	}))
	assert.Equal(t, strings.Fields(strings.Repeat("2 ", len(values))), rows, "a row of two cells per value")
	require.Len(t, codes, 2*len(values))
	for i, v := range values {
		assert.Equal(t, output.Escape(v), codes[i], "the code span in the table holds the value")
		assert.Equal(t, output.Escape(v), codes[len(values)+i], "the code span in the list holds the value")
	}
}

// TestMarkdownCode: the span is longer than any run of backticks inside it, padded where
// CommonMark would strip or merge.
func TestMarkdownCode(t *testing.T) {
	for in, want := range map[string]string{
		"plain":      "`plain`",
		"":           "` `",
		"a`b":        "``a`b``",
		"a``b```c":   "````a``b```c````",
		"`start":     "`` `start ``",
		"end`":       "`` end` ``",
		" both ":     "`  both  `",
		" one":       "` one`",
		"a|b":        "`a|b`",
		"new\nline":  "`new\\nline`",
		"\x1b[31mre": "`\\x1b[31mre`",
	} {
		assert.Equal(t, want, output.MarkdownCode(in), "%q", in)
	}
	assert.Equal(t, "`a\\|b`", output.MarkdownCodeCell("a|b"))
	assert.Equal(t, "```", output.MarkdownFence([]string{"no ticks"}), "at least three")
	assert.Equal(t, "``````", output.MarkdownFence([]string{"a`````b", "``"}))
}

// TestMarkdownFindingsMakeNoLink: -o markdown of findings whose object, rule and message are
// hostile is a table of one row per finding holding no link, image, autolink or HTML.
func TestMarkdownFindingsMakeNoLink(t *testing.T) {
	var fs []finding.Finding
	for _, v := range inerttest.All() {
		fs = append(fs, finding.Finding{Rule: "team.deny" + v, Level: finding.Deny, Object: finding.Object{Kind: "RBLNDriver", Name: v},
			Field: "spec" + v, Message: "message " + v})
	}
	got := write(t, output.Markdown, &output.Report{Findings: fs})
	assert.Equal(t, len(fs)+2, strings.Count(got, "\n"), "one row per finding:\n%s", got)
	inerttest.AssertInert(t, got)
	assert.Zero(t, inerttest.AssertNoLiveMarkdown(t, []byte(got)))
}

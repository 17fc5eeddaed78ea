package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/output"
)

// Output formats: the same words wherever -o applies (README.md "Commands").
const (
	formatTable    = "table"
	formatJSON     = "json"
	formatYAML     = "yaml"
	formatMarkdown = "markdown"
)

// outputFlag is -o/--output: a pflag.Value, so an unsupported format fails while the flags
// are parsed (exit 2), before anything runs.
type outputFlag struct {
	format  string
	allowed []string
}

func newOutput(def string, allowed ...string) outputFlag {
	return outputFlag{format: def, allowed: allowed}
}

func (o *outputFlag) String() string { return o.format }
func (o *outputFlag) Type() string   { return "format" }

func (o *outputFlag) Set(s string) error {
	if !slices.Contains(o.allowed, s) {
		return fmt.Errorf("unsupported output format %q: use one of %s", truncateValue(s), strings.Join(o.allowed, ", "))
	}
	o.format = s
	return nil
}

// register adds -o/--output to fs.
func (o *outputFlag) register(fs *pflag.FlagSet) {
	fs.VarP(o, "output", "o", "output format: "+strings.Join(o.allowed, ", "))
}

// print writes v as JSON or YAML, or calls table for the table form, through
// output.InertWriter: what the table quotes from the input reaches the terminal without a
// control character.
func (o *outputFlag) print(w io.Writer, v any, table func(io.Writer) error) error {
	switch o.format {
	case formatJSON:
		return writeJSON(w, v)
	case formatYAML:
		return writeYAML(w, v)
	}
	return table(output.InertWriter(w))
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeYAML(w io.Writer, v any) error {
	data, err := output.MarshalYAML(v)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// newTable returns a tabwriter for aligned, human-readable columns, writing through
// output.InertWriter: a control character in a cell reaches w escaped. A writer escapes each
// value from the input itself (output.Escape), so that a tab or a line break in it cannot
// break the columns either.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(output.InertWriter(w), 0, 0, 2, ' ', 0)
}

// printWarnings writes render warnings to stderr, one line each, escaped (output.Escape: a
// value a warning quotes cannot act on the terminal or start a line): the first
// maxListedProblems, then how many more.
func printWarnings(w io.Writer, warnings []action.Warning) {
	for i, wn := range warnings {
		if i == maxListedProblems {
			fmt.Fprintf(w, "Warning: ... and %d more warnings (%d in all)\n", len(warnings)-i, len(warnings))
			return
		}
		fmt.Fprintln(w, "Warning:", output.Escape(validation.Truncate(wn.String(), maxMessageLine)))
	}
}

// maxListedProblems bounds the errors or warnings a message lists (README.md "Exit codes"): the rest are
// counted. It is the renderer's bound on value errors.
const maxListedProblems = action.MaxListedWarnings

// maxMessageLine bounds one line of a message built from user input (each value in it is cut
// already; this is the backstop).
const maxMessageLine = 2000

// truncateValue shortens a user value for a message: a 50 MB string is never echoed. The
// bound is the one every component quotes values with (validation.MaxQuotedValue).
func truncateValue(s string) string {
	return validation.Truncate(s, validation.MaxQuotedValue)
}

// judgingFormats are the formats of every command that judges (docs/output.md "Formats").
var judgingFormats = []output.Format{output.Table, output.JSON, output.YAML, output.JUnit, output.SARIF, output.Markdown, output.GitHub}

// registerOutput adds -o/--output, repeatable, to fs.
func registerOutput(fs *pflag.FlagSet, o *output.Flag) {
	fs.VarP(o, "output", "o", "output format, repeatable, each to standard output or =FILE: "+
		"table, json, yaml, junit, sarif, markdown, github (workflow annotations); e.g. -o table -o sarif=results.sarif")
}

// writeInvalid writes values that do not render as findings (one InvalidValues denial per
// problem, located at its values key) in every format asked for, and returns err, which
// says so on stderr and exits 1; any other error is returned as it is.
func writeInvalid(s Streams, formats *output.Flag, tool string, err error) error {
	var invalid *action.InvalidError
	if !errors.As(err, &invalid) {
		return err
	}
	fs, omitted := invalid.Findings()
	doc := invalidDocument{Findings: fs, Passed: false}
	r := &output.Report{Tool: tool, Findings: fs, Omitted: omitted, Document: doc, Rules: action.NewRuleRegistry()}
	r.Table = func(w io.Writer) error { return nil } // the message on stderr is the table's
	if werr := output.Write(s.Out, formats.Targets(), r); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// invalidDocument is the JSON of values that do not render.
type invalidDocument struct {
	Findings []action.Finding `json:"findings"`
	Passed   bool             `json:"passed"`
}

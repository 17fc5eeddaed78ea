package output

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/driverguard/driverguard/finding"
)

// findingsDocument is the document of a report that has none of its own.
type findingsDocument struct {
	Findings []finding.Finding `json:"findings"`
}

func document(r *Report) any {
	if r.Document != nil {
		return r.Document
	}
	fs := r.Findings
	if fs == nil {
		fs = []finding.Finding{}
	}
	return findingsDocument{Findings: fs}
}

func writeJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(document(r))
}

func writeYAML(w io.Writer, r *Report) error {
	if r.YAML != nil {
		return r.YAML(w)
	}
	data, err := MarshalYAML(document(r))
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// writeTable is the command's table, else the findings grouped by object. Either way it is
// written through InertWriter: whatever a command's table quotes from the input reaches the
// terminal without a control character.
func writeTable(w io.Writer, r *Report) error {
	w = InertWriter(w)
	if r.Table != nil {
		return r.Table(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LEVEL\tOBJECT\tRULE\tMESSAGE")
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", Label(f.Level), Escape(dash(f.Object.String())), Escape(f.Rule), Escape(f.Text()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := finding.Count(r.Findings)
	_, err := fmt.Fprintf(w, "\n%d findings: %d deny, %d warn, %d audit\n", len(r.Findings), c.Deny, c.Warn, c.Audit)
	return err
}

// writeMarkdown is the command's markdown, else the findings as a table: the object and the
// rule code spans, the message escaped text (MarkdownText), each finding one row.
func writeMarkdown(w io.Writer, r *Report) error {
	if r.Markdown != nil {
		return r.Markdown(inertWriterKeeping(w, "\t\n")) // the tabs of a fenced block are the value's
	}
	var b strings.Builder
	b.WriteString("| level | object | rule | message |\n|---|---|---|---|\n")
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", MarkdownText(string(f.Level)), MarkdownCodeCell(dash(f.Object.String())), MarkdownCodeCell(f.Rule), MarkdownText(f.Text()))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// errNoHTML is -o html of a report without a page of its own.
var errNoHTML = errors.New("-o html: this command has no HTML page (plan has one); choose another format")

// writeHTML is the command's page; a report without one has no HTML form.
func writeHTML(w io.Writer, r *Report) error {
	if r.HTML == nil {
		return errNoHTML
	}
	return r.HTML(w)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/finding"
)

// printClusterReports prints the ClusterReports as a YAML stream.
func printClusterReports(w io.Writer, res *audit.RunResult) error {
	for i := range res.Reports {
		data, err := MarshalYAML(&res.Reports[i])
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}

// AuditTable prints each report's findings, FAIL, WARN and AUDIT lines (a policy on trial),
// its passes counted, then the totals.
func AuditTable(w io.Writer, res *audit.RunResult) error {
	out := res.Outcome
	for _, r := range out.Reports {
		title := "RBLNDriver/" + r.Driver
		if r.Driver == "" {
			title = r.Name + " (what no RBLNDriver owns)"
		} else if r.Instance != "" {
			title += " (instance " + r.Instance + ")"
		}
		fmt.Fprintln(w, Escape(title))
		for _, f := range r.Results {
			if f.Status == audit.Pass {
				continue
			}
			label := strings.ToUpper(string(f.Status))
			if f.Enforcement == "audit" {
				label = "AUDIT"
			}
			fmt.Fprintf(w, "  %-5s  %s\n", Escape(label), Escape(auditLine(f)))
		}
		if r.Omitted > 0 {
			fmt.Fprintf(w, "  ... and %d more results (--max-results; a report lists at most 1 MiB)\n", r.Omitted)
		}
		if r.Summary.Pass > 0 {
			fmt.Fprintf(w, "  PASS   %s\n", plural(r.Summary.Pass, "rule"))
		}
	}
	if out.ImageCheck.Checked {
		fmt.Fprintf(w, "\n%s\n", Escape(sentence(out.ImageCheck.String())))
		if c := out.ImageCheck.Caveat(); c != "" {
			fmt.Fprintf(w, "Warning: %s.\n", Escape(c))
		}
	}
	printSection(w, "JUDGED AGAINST", inputLines(res.Inputs, "")) // input warnings: driverguard-cluster's WARN results
	verdict := "passed"
	if out.Enforced > 0 {
		verdict = "FAILED"
	}
	_, err := fmt.Fprintf(w, "\n%d reports: %d fail (%d enforced), %d warn, %d pass; %s\n",
		len(out.Reports), out.Summary.Fail, out.Enforced, out.Summary.Warn, out.Summary.Pass, verdict)
	return err
}

// auditJSON is `audit -o json`: every finding, the outcome (the reports with their results,
// passes included), with what it was judged against.
type auditJSON struct {
	Findings []finding.Finding `json:"findings"`
	*audit.Outcome
	Inputs        cluster.Sources `json:"inputs"`
	InputWarnings []string        `json:"inputWarnings"`
}

// auditLine is a finding as one line: the policy package or the built-in rule, then the
// message.
func auditLine(f audit.Result) string {
	if pkg := f.Policy(); pkg != "" {
		return pkg + ": " + f.Message
	}
	return f.Rule + ": " + f.Description()
}

// AuditReport is an audit for the writers: every result that is not a pass a finding; each
// result a JUnit case of its report (a pass passes); -o yaml the ClusterReports.
func AuditReport(res *audit.RunResult) *Report {
	fs := res.Findings()
	r := &Report{Tool: "driverguard audit", Findings: fs, Rules: finding.NewRegistry(),
		Document:   auditJSON{fs, res.Outcome, res.Inputs, nonNilStrings(res.InputWarnings)},
		Properties: map[string]any{"inputs": res.Inputs, "judgedAgainst": inputLines(res.Inputs, "")},
		Table:      func(w io.Writer) error { return AuditTable(w, res) },
		YAML:       func(w io.Writer) error { return printClusterReports(w, res) }}
	if res.Outcome.ImageCheck.Checked { // what the check covered: a pass is no result
		r.Properties["imageCheck"] = res.Outcome.ImageCheck
	}
	seen := map[string]bool{}
	for _, rep := range res.Outcome.Reports {
		r.Omitted += rep.Omitted
		for _, f := range rep.Results {
			obj := finding.Object{Kind: finding.KindCluster, Name: rep.Name}
			if s := f.Subjects(); len(s) > 0 {
				obj = finding.Object{Kind: s[0].Kind, Name: s[0].Name}
			}
			rule := f.Rule
			if pkg := f.Policy(); pkg != "" && f.Status == audit.Pass {
				rule = pkg // a pass of the policy as a whole
			}
			name := obj.String() + " " + rule
			if seen[rep.Name+"\x00"+name] {
				continue
			}
			seen[rep.Name+"\x00"+name] = true
			sub := Subject{Name: name, Object: obj, Group: rep.Name, Class: rep.Name, Rules: []string{rule}}
			if f.Status == audit.Error {
				sub.Error = f.Description()
			}
			if f.Status == audit.Pass && f.Message != "" { // what the image check covered
				sub.Output = []string{"PASS  " + f.Message}
			}
			r.Judged = append(r.Judged, sub)
		}
	}
	r.Judged = append(r.Judged, Subject{Name: "cluster inputs " + finding.RuleInputWarning, Group: "inputs", Class: "Inputs",
		AnyObject: true, Rules: []string{finding.RuleInputWarning}, Output: inputLines(res.Inputs, "")})
	return r
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

package output

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/suite"
)

// CheckTable prints the verdicts grouped by object, conftest style: FAIL and WARN lines with
// the rule or policy package, PASS for an object without findings, then driver losses, render
// warnings and a summary. Every value from the input is escaped (Escape): an object's
// title here, the findings' lines in findingLine, the sections' lines in printSection.
func CheckTable(w io.Writer, rep *release.Report) error {
	byObject := verdictFindings(rep.Findings)
	for _, res := range rep.Resources {
		title := res.Kind + "/" + res.Name
		if res.Operation == "UPDATE" {
			fmt.Fprintln(w, Escape(title), "(update)")
		} else {
			fmt.Fprintln(w, Escape(title))
		}
		printObjectFindings(w, title, byObject[finding.Object{Kind: res.Kind, Name: res.Name}])
	}
	var lines []string
	for _, d := range rep.Deleted {
		lines = append(lines, "RBLNDriver/"+d+": owned by the release and no longer rendered")
	}
	printSection(w, "DELETED BY THE UPGRADE", lines)
	lines = nil
	for _, l := range rep.DriverLoss {
		lines = append(lines, lossLine(l))
	}
	if rep.DriverLossOmitted > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more nodes (driverguard plan lists every node)", rep.DriverLossOmitted))
	}
	title := "NODES THAT WOULD LOSE THEIR DRIVER (FAIL: acknowledge with --allow-driver-loss)"
	if rep.DriverLossAllowed {
		title = "NODES THAT WOULD LOSE THEIR DRIVER (WARN: --allow-driver-loss)"
	}
	printSection(w, title, lines)
	lines = nil
	for _, wn := range rep.RenderWarnings {
		lines = append(lines, wn.String())
	}
	if rep.RenderWarningsOmitted > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more", rep.RenderWarningsOmitted))
	}
	printSection(w, "RENDER WARNINGS", lines)
	printJudgedAgainst(w, rep)
	verdict := "passed"
	if !rep.Passed {
		verdict = "FAILED"
		if rep.Failures == 0 && rep.FailOnWarn {
			verdict = "FAILED (--fail-on-warn)"
		}
	}
	audited := ""
	if rep.Audited > 0 { // audit-mode policies: listed, never enforced
		audited = ", " + plural(rep.Audited, "audit finding")
	}
	_, err := fmt.Fprintf(w, "\n%d resources, %d policies: %s, %s%s; %s\n", len(rep.Resources), len(rep.Policies),
		plural(rep.Failures, "failure"), plural(rep.Warnings, "warning"), audited, verdict)
	return err
}

// printObjectFindings prints an object's findings under its title: PASS when none denies or
// warns, then a FAIL, WARN or AUDIT line each, then how many more the verdict counted.
func printObjectFindings(w io.Writer, title string, mine []finding.Finding) {
	if !slices.ContainsFunc(mine, func(f finding.Finding) bool { return f.Level != finding.Audit }) {
		fmt.Fprintln(w, "  PASS")
	}
	for _, level := range finding.Levels {
		for _, f := range mine {
			if f.Level != level {
				continue
			}
			if f.Rule == finding.RuleOmittedFindings {
				fmt.Fprintf(w, "  %s  ... and %d more\n", Label(level), f.Count)
				continue
			}
			fmt.Fprintf(w, "  %s  %s\n", Label(level), findingLine(f, title))
		}
	}
}

// verdictFindings are the findings of each object's verdict, by object, in order (render
// warnings have their own section): one pass, however many objects a table prints.
func verdictFindings(all []finding.Finding) map[finding.Object][]finding.Finding {
	out := map[finding.Object][]finding.Finding{}
	for _, f := range all {
		if f.Rule != finding.RuleRenderWarning {
			out[f.Object] = append(out[f.Object], f)
		}
	}
	return out
}

// ofLevel are the findings of level, without the count of those not listed (the
// ObjectReport's Omitted* say it).
func ofLevel(fs []finding.Finding, level finding.Level) []finding.Finding {
	var out []finding.Finding
	for _, f := range fs {
		if f.Level == level && f.Rule != finding.RuleOmittedFindings {
			out = append(out, f)
		}
	}
	return out
}

// findingLine is one finding under its object's title: the policy package or the rule, then
// the message (without a repeated "<Kind>/<name>: " prefix), escaped to one printable line
// (Escape: a message quoting a value may hold line breaks or escape sequences).
func findingLine(f finding.Finding, title string) string {
	if pkg := f.Policy(); pkg != "" {
		return Escape(pkg + ": " + strings.TrimPrefix(f.Message, title+": "))
	}
	line := f.Message
	if f.Field != "" {
		line = f.Field + ": " + line
	}
	return Escape(f.Rule + ": " + line)
}

func lossLine(l release.NodeLoss) string {
	return fmt.Sprintf("%s: owned by %s now, would get no driver (%s)", l.Node, l.From, dash(l.Reason))
}

// printJudgedAgainst says what the release was judged against and what was not seen: the
// input warnings, the drift now (not caused by the values), and each part of the cluster read
// (or not given).
func printJudgedAgainst(w io.Writer, rep *release.Report) {
	printSection(w, "INPUT WARNINGS", rep.InputWarnings)
	printSection(w, "DRIFT NOW (not caused by these values; the audit reports it too)", driftLines(rep))
	printSection(w, "JUDGED AGAINST", inputLines(rep.Inputs, rep.Basis))
}

// driftLines are the drift now, a line per node and kind, then how many more there are
// (printSection escapes them).
func driftLines(rep *release.Report) []string {
	var lines []string
	for _, d := range rep.Drift {
		lines = append(lines, d.Node+": "+d.Kind+": "+d.Detail)
	}
	if rep.DriftOmitted > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more (driverguard audit lists every one)", rep.DriftOmitted))
	}
	return lines
}

// CheckReport is a release's verdict for the writers: every finding, each object judged by
// the policies and the built-in rules (a JUnit case each), the nodes judged by DriverLoss,
// and what the release was judged against.
func CheckReport(tool string, rep *release.Report, registry *finding.Registry) *Report {
	r := &Report{Tool: tool, Findings: rep.Findings, Document: rep, Rules: registry,
		Properties: map[string]any{"inputs": rep.Inputs, "judgedAgainst": inputLines(rep.Inputs, rep.Basis)}}
	rules := append(slices.Clone(rep.Policies), suite.BuiltInRules...)
	rules = slices.DeleteFunc(rules, func(r string) bool { return r == finding.RuleDriverLoss })
	for _, res := range rep.Resources {
		r.Judged = append(r.Judged, Subject{Object: finding.Object{Kind: res.Kind, Name: res.Name}, Rules: rules})
	}
	r.Judged = append(r.Judged,
		Subject{Name: "nodes keep their driver " + finding.RuleDriverLoss, Group: "", Class: "Nodes", AnyObject: true, Rules: []string{finding.RuleDriverLoss}},
		Subject{Name: "cluster inputs " + finding.RuleInputWarning, Class: "Inputs", AnyObject: true, Rules: []string{finding.RuleInputWarning},
			Output: inputLines(rep.Inputs, rep.Basis)},
		Subject{Name: "cluster drift now", Class: "Drift", AnyObject: true, Rules: finding.DriftRules})
	return r
}

// PostRenderPass says that the rendered objects passed, what they were judged against, and every
// warning and audit finding, one line each, every value escaped (Escape: the context
// and server judged against, the objects' names, the findings' messages, the nodes).
func PostRenderPass(rep *release.Report, against string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "driverguard post-render: %d resources passed (%s", len(rep.Resources), plural(rep.Warnings, "warning"))
	if rep.Audited > 0 {
		fmt.Fprintf(&b, ", %s", plural(rep.Audited, "audit finding"))
	}
	fmt.Fprintf(&b, "), judged against %s\n", Escape(against))
	byObject := verdictFindings(rep.Findings)
	for _, r := range rep.Resources {
		title := r.Kind + "/" + r.Name
		shown := Escape(title)
		for _, f := range ofLevel(byObject[finding.Object{Kind: r.Kind, Name: r.Name}], finding.Warn) {
			fmt.Fprintf(&b, "  WARN   %s: %s\n", shown, findingLine(f, title))
		}
		if r.OmittedWarn > 0 {
			fmt.Fprintf(&b, "  WARN   %s: ... and %d more\n", shown, r.OmittedWarn)
		}
		for _, f := range ofLevel(byObject[finding.Object{Kind: r.Kind, Name: r.Name}], finding.Audit) {
			fmt.Fprintf(&b, "  AUDIT  %s: %s\n", shown, findingLine(f, title))
		}
	}
	for _, l := range rep.DriverLoss { // acknowledged with --allow-driver-loss
		fmt.Fprintf(&b, "  WARN   Node/%s (--allow-driver-loss)\n", Escape(lossLine(l)))
	}
	for _, w := range rep.InputWarnings {
		fmt.Fprintf(&b, "  WARN   %s\n", Escape(w))
	}
	return b.Bytes()
}

package app

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/output"
)

func newCheckCommand(s Streams) *cobra.Command {
	job := action.NewCheck(s.cfg)
	formats := output.NewFlag(output.Table, judgingFormats...)
	cmd := &cobra.Command{
		Use:   "check -f values.yaml [--live | --nodes nodes.yaml [--drivers current.yaml] [--cluster-policy cp.yaml]] [--policy DIR] [--allow-driver-loss] [--fail-on-warn] [-o FORMAT[=FILE]]...",
		Short: "Judge every rendered object exactly as the admission webhook would, before helm upgrade",
		Long: `check renders the values like 'render' and judges every rendered object — the RBLNClusterPolicy,
then each RBLNDriver, in the order Helm applies them — with the webhook's own decision: the
built-in rules (names, selector syntax, reserved keys), selector conflicts against the node
inventory and the drivers applied before it, and the OPA policies (the bundled library plus every
--policy directory). An object the webhook would deny fails the check and is not applied for the
objects after it, as in the cluster. Without --nodes, conflicts are judged on the selectors alone
(identical selectors deny, possible ties warn), as the webhook does on a cluster without nodes.
With --drivers (the drivers in the cluster now), a rendered driver of the same name is an UPDATE
and the drivers the release owns but no longer renders are deleted. --live (or --kubeconfig) reads
the Nodes, RBLNDrivers and RBLNClusterPolicy from the cluster instead of files (list only), as
'plan --live' does. The output says what was judged against (JUDGED AGAINST; "inputs" in JSON),
warns about a --nodes file without nodes, and lists the drift the cluster has now (stale owner
labels, ties, unowned nodes: not caused by the values, never a failure).

Nodes that have a driver now and would get none — deployDefault false, a narrowed selector, a
removed instance, a new tie — fail the check unless --allow-driver-loss acknowledges them. A
node's driver now is the one the current RBLNDrivers route to it (--drivers or --live); without
them, the one its rebellions.ai/npu.driver.owner label names (said in the output). A label that
names no stored RBLNDriver is drift (StaleOwnerLabel), never a driver loss; without them, so is
a label no RBLNDriver can be named (not a DNS-1123 subdomain).

Policies read the object as input (with input.routing: the nodes, pools and ties routing gives
it) and the cluster as data.driverguard_cluster; 'driverguard policy input' and 'policy data'
print both. Render warnings count as warnings.

-o junit writes JUnit XML for CI: one test case per object and rule (every policy evaluated and
every built-in rule), failed by the rule's denials; warnings and audit findings are the case's
output. -o sarif writes SARIF 2.1.0 for code scanning: every denial (error), warning (warning)
and audit finding (note), each located at the file, line and column of the values key the
object or field came from (a value given with --set has no line: the result says so); values
that do not render are one InvalidValues error per problem, located the same way. Both list
the drift now: a passing JUnit case, SARIF notes at each node.

Exit codes: 0 passed; 1 a denial, an unacknowledged driver loss, invalid values, or (with
--fail-on-warn) a warning; 2 unusable input: unreadable files, a policy that does not compile
or fails to evaluate.`,
		Example: `  driverguard check -f examples/multi-driver.yaml --nodes examples/nodes.yaml
  kubectl get nodes -o yaml > nodes.yaml; kubectl get rblndrivers -o yaml > drivers.yaml
  driverguard check -f values.yaml --nodes nodes.yaml --drivers drivers.yaml --policy policies/ --fail-on-warn
  driverguard check -f values.yaml --live --fail-on-warn          # against the cluster of the current context
  driverguard check -f values.yaml --policy policies/ -o json > check.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := job.Run(cmd.Context())
			if err != nil {
				return writeInvalid(s, formats, "driverguard check", err)
			}
			report := checkReport("driverguard check", rep, job.Rules())
			report.Table = func(w io.Writer) error { return printCheck(w, rep) }
			if err := output.Write(s.Out, formats.Targets(), report); err != nil {
				return err
			}
			return failedUnless(rep.Passed)
		},
	}
	addJudgeFlags(cmd.Flags(), &job.Judge)
	addLiveFlags(cmd.Flags(), &job.Live, "Nodes, RBLNDrivers and the RBLNClusterPolicy, what the webhook judges against")
	cmd.Flags().BoolVar(&job.FailOnWarn, "fail-on-warn", false, "exit 1 on warnings too (object, policy and render warnings)")
	registerOutput(cmd.Flags(), formats)
	return cmd
}

// printCheck prints the verdicts grouped by object, conftest style: FAIL and WARN lines with
// the rule or policy package, PASS for an object without findings, then driver losses, render
// warnings and a summary. Every value from the input is escaped (output.Escape): an object's
// title here, the findings' lines in findingLine, the sections' lines in printSection.
func printCheck(w io.Writer, rep *action.CheckReport) error {
	byObject := verdictFindings(rep.Findings)
	for _, res := range rep.Resources {
		title := res.Kind + "/" + res.Name
		if res.Operation == "UPDATE" {
			fmt.Fprintln(w, output.Escape(title), "(update)")
		} else {
			fmt.Fprintln(w, output.Escape(title))
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
func printObjectFindings(w io.Writer, title string, mine []action.Finding) {
	if !slices.ContainsFunc(mine, func(f action.Finding) bool { return f.Level != finding.Audit }) {
		fmt.Fprintln(w, "  PASS")
	}
	for _, level := range finding.Levels {
		for _, f := range mine {
			if f.Level != level {
				continue
			}
			if f.Rule == finding.RuleOmittedFindings {
				fmt.Fprintf(w, "  %s  ... and %d more\n", output.Label(level), f.Count)
				continue
			}
			fmt.Fprintf(w, "  %s  %s\n", output.Label(level), findingLine(f, title))
		}
	}
}

// verdictFindings are the findings of each object's verdict, by object, in order (render
// warnings have their own section): one pass, however many objects a table prints.
func verdictFindings(all []action.Finding) map[finding.Object][]action.Finding {
	out := map[finding.Object][]action.Finding{}
	for _, f := range all {
		if f.Rule != finding.RuleRenderWarning {
			out[f.Object] = append(out[f.Object], f)
		}
	}
	return out
}

// ofLevel are the findings of level, without the count of those not listed (the
// ObjectReport's Omitted* say it).
func ofLevel(fs []action.Finding, level finding.Level) []action.Finding {
	var out []action.Finding
	for _, f := range fs {
		if f.Level == level && f.Rule != finding.RuleOmittedFindings {
			out = append(out, f)
		}
	}
	return out
}

// findingLine is one finding under its object's title: the policy package or the rule, then
// the message (without a repeated "<Kind>/<name>: " prefix), escaped to one printable line
// (output.Escape: a message quoting a value may hold line breaks or escape sequences).
func findingLine(f action.Finding, title string) string {
	if pkg := f.Policy(); pkg != "" {
		return output.Escape(pkg + ": " + strings.TrimPrefix(f.Message, title+": "))
	}
	line := f.Message
	if f.Field != "" {
		line = f.Field + ": " + line
	}
	return output.Escape(f.Rule + ": " + line)
}

func lossLine(l action.NodeLoss) string {
	return fmt.Sprintf("%s: owned by %s now, would get no driver (%s)", l.Node, l.From, dash(l.Reason))
}

// printJudgedAgainst says what the release was judged against and what was not seen: the
// input warnings, the drift now (not caused by the values), and each part of the cluster read
// (or not given).
func printJudgedAgainst(w io.Writer, rep *action.CheckReport) {
	printSection(w, "INPUT WARNINGS", rep.InputWarnings)
	printSection(w, "DRIFT NOW (not caused by these values; the audit reports it too)", driftLines(rep))
	printSection(w, "JUDGED AGAINST", inputLines(rep.Inputs, rep.Basis))
}

// driftLines are the drift now, a line per node and kind, then how many more there are
// (printSection escapes them).
func driftLines(rep *action.CheckReport) []string {
	var lines []string
	for _, d := range rep.Drift {
		lines = append(lines, d.Node+": "+d.Kind+": "+d.Detail)
	}
	if rep.DriftOmitted > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more (driverguard audit lists every one)", rep.DriftOmitted))
	}
	return lines
}

// inputLines say what each part of the cluster was read from, and what a node's driver now
// is read from. They quote the files and the context given as they are, for the JUnit and
// JSON outputs too: printSection escapes them where a table prints them.
func inputLines(in action.Inputs, basis string) []string {
	if !in.Nodes.Given && !in.Drivers.Given && !in.ClusterPolicy.Given {
		return []string{"the rendered objects alone: no nodes, RBLNDrivers or RBLNClusterPolicy were read (conflicts are judged on the selectors alone)"}
	}
	lines := []string{in.Nodes.Describe("node", "nodes")}
	drivers := in.Drivers.Describe("RBLNDriver", "RBLNDrivers")
	if basis == action.BasisOwnerLabels && in.Nodes.Given {
		drivers += " (a node's driver now is the one its " + operator.LabelOwner + " label names; give --drivers or --live to tell a stale label from a driver)"
	}
	lines = append(lines, drivers, in.ClusterPolicy.Describe("RBLNClusterPolicy", "RBLNClusterPolicy"))
	if in.Workloads.Given {
		lines = append(lines, in.Workloads.Describe("pod", "pods"))
	}
	return lines
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// checkReport is a release's verdict for the writers: every finding, each object judged by
// the policies and the built-in rules (a JUnit case each), the nodes judged by DriverLoss,
// and what the release was judged against.
func checkReport(tool string, rep *action.CheckReport, registry *finding.Registry) *output.Report {
	r := &output.Report{Tool: tool, Findings: rep.Findings, Document: rep, Rules: registry,
		Properties: map[string]any{"inputs": rep.Inputs, "judgedAgainst": inputLines(rep.Inputs, rep.Basis)}}
	rules := append(slices.Clone(rep.Policies), action.BuiltInRules...)
	rules = slices.DeleteFunc(rules, func(r string) bool { return r == action.RuleDriverLoss })
	for _, res := range rep.Resources {
		r.Judged = append(r.Judged, output.Subject{Object: finding.Object{Kind: res.Kind, Name: res.Name}, Rules: rules})
	}
	r.Judged = append(r.Judged,
		output.Subject{Name: "nodes keep their driver " + action.RuleDriverLoss, Group: "", Class: "Nodes", AnyObject: true, Rules: []string{action.RuleDriverLoss}},
		output.Subject{Name: "cluster inputs " + action.RuleInputWarning, Class: "Inputs", AnyObject: true, Rules: []string{action.RuleInputWarning},
			Output: inputLines(rep.Inputs, rep.Basis)},
		output.Subject{Name: "cluster drift now", Class: "Drift", AnyObject: true, Rules: action.DriftRules})
	return r
}

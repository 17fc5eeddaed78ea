package app

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/api/v1alpha1"
)

func newCheckCommand(s Streams) *cobra.Command {
	job := action.NewCheck(s.cfg)
	output := newOutput(formatTable, formatTable, formatJSON, formatYAML, formatJUnit, formatSARIF)
	cmd := &cobra.Command{
		Use:   "check -f values.yaml [--live | --nodes nodes.yaml [--drivers current.yaml] [--cluster-policy cp.yaml]] [--policy DIR] [--allow-driver-loss] [--fail-on-warn] [-o table|json|yaml|junit|sarif]",
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
			var invalid *action.InvalidError
			if output.format == formatSARIF && errors.As(err, &invalid) {
				if perr := writeInvalidSARIF(s.Out, invalid); perr != nil {
					return perr
				}
			}
			if err != nil {
				return err
			}
			table := func(w io.Writer) error { return printCheck(w, rep) }
			switch output.format {
			case formatJUnit:
				table = func(w io.Writer) error { return writeCheckJUnit(w, rep) }
			case formatSARIF:
				table = func(w io.Writer) error { return writeCheckSARIF(w, rep, job) }
			}
			if err := output.print(s.Out, rep, table); err != nil {
				return err
			}
			return failedUnless(rep.Passed)
		},
	}
	addJudgeFlags(cmd.Flags(), &job.Judge)
	addLiveFlags(cmd.Flags(), &job.Live, "Nodes, RBLNDrivers and the RBLNClusterPolicy, what the webhook judges against")
	cmd.Flags().BoolVar(&job.FailOnWarn, "fail-on-warn", false, "exit 1 on warnings too (object, policy and render warnings)")
	output.register(cmd.Flags())
	return cmd
}

// printCheck prints the verdicts grouped by object, conftest style: FAIL and WARN lines with
// the rule or policy package, PASS for an object without findings, then driver losses, render
// warnings and a summary.
func printCheck(w io.Writer, rep *action.CheckReport) error {
	for _, res := range rep.Resources {
		title := res.Kind + "/" + res.Name
		if res.Operation == "UPDATE" {
			fmt.Fprintln(w, title, "(update)")
		} else {
			fmt.Fprintln(w, title)
		}
		if len(res.Deny)+len(res.Warn) == 0 {
			fmt.Fprintln(w, "  PASS")
		}
		for _, group := range []struct {
			label    string
			findings []action.Finding
			omitted  int
		}{{"FAIL", res.Deny, res.OmittedDeny}, {"WARN", res.Warn, res.OmittedWarn}, {"AUDIT", res.Audit, res.OmittedAudit}} {
			for _, f := range group.findings {
				fmt.Fprintf(w, "  %s  %s\n", group.label, findingLine(f, title))
			}
			if group.omitted > 0 {
				fmt.Fprintf(w, "  %s  ... and %d more\n", group.label, group.omitted)
			}
		}
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

// findingLine is one finding under its object's title: the policy package or the rule, then
// the message (without a repeated "<Kind>/<name>: " prefix).
func findingLine(f action.Finding, title string) string {
	if f.Package != "" {
		return f.Package + ": " + strings.TrimPrefix(f.Message, title+": ")
	}
	line := f.Message
	if f.Field != "" {
		line = f.Field + ": " + line
	}
	return f.Rule + ": " + line
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

// driftLines are the drift now, a line per node and kind, then how many more there are.
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
// is read from.
func inputLines(in action.Inputs, basis string) []string {
	if !in.Nodes.Given && !in.Drivers.Given && !in.ClusterPolicy.Given {
		return []string{"the rendered objects alone: no nodes, RBLNDrivers or RBLNClusterPolicy were read (conflicts are judged on the selectors alone)"}
	}
	lines := []string{in.Nodes.Describe("node", "nodes")}
	drivers := in.Drivers.Describe("RBLNDriver", "RBLNDrivers")
	if basis == action.BasisOwnerLabels && in.Nodes.Given {
		drivers += " (a node's driver now is the one its " + v1alpha1.LabelOwner + " label names; give --drivers or --live to tell a stale label from a driver)"
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

// writeCheckJUnit writes the check as JUnit XML: one test case per object and rule, failed
// by the rule's denials (one failure, every message in its text); warnings and audit
// findings are the case's output. Nodes that would lose their driver are one more case, what
// the cluster was judged against one more, and the drift now one more (it passes).
func writeCheckJUnit(w io.Writer, rep *action.CheckReport) error {
	suite := junitSuite{Name: "driverguard check"}
	rules := append(slices.Clone(rep.Policies), action.BuiltInRules...)
	for _, res := range rep.Resources {
		object := res.Kind + "/" + res.Name
		for _, rule := range rules {
			if rule == action.RuleDriverLoss {
				continue
			}
			jc := junitCase{Name: object + " " + rule, Classname: object}
			var denials, other []string
			for _, f := range res.Deny {
				if findingRule(f) == rule {
					denials = append(denials, findingLine(f, object))
				}
			}
			for _, g := range []struct {
				label    string
				findings []action.Finding
			}{{"WARN", res.Warn}, {"AUDIT", res.Audit}} {
				for _, f := range g.findings {
					if findingRule(f) == rule {
						other = append(other, g.label+"  "+findingLine(f, object))
					}
				}
			}
			if len(denials) > 0 {
				jc.Failure = &junitProblem{Message: denials[0], Type: "deny", Text: strings.Join(denials, "\n")}
				suite.Failures++
			}
			if len(other) > 0 {
				jc.Output = strings.Join(other, "\n")
			}
			suite.Tests++
			suite.Cases = append(suite.Cases, jc)
		}
		// Syntax findings carry field error types: each is a case of its own.
		for _, f := range res.Deny {
			if r := findingRule(f); !slices.Contains(rules, r) {
				suite.Cases = append(suite.Cases, junitCase{Name: object + " " + r, Classname: object,
					Failure: &junitProblem{Message: findingLine(f, object), Type: "deny", Text: findingLine(f, object)}})
				suite.Tests++
				suite.Failures++
			}
		}
	}
	loss := junitCase{Name: "nodes keep their driver " + action.RuleDriverLoss, Classname: "Nodes"}
	var lines []string
	for _, l := range rep.DriverLoss {
		lines = append(lines, lossLine(l))
	}
	if len(lines) > 0 && !rep.DriverLossAllowed {
		loss.Failure = &junitProblem{Message: lines[0], Type: "deny", Text: strings.Join(lines, "\n")}
		suite.Failures++
	} else if len(lines) > 0 {
		loss.Output = strings.Join(lines, "\n")
	}
	suite.Tests++
	suite.Cases = append(suite.Cases, loss)
	// What the release was judged against, and the inputs that look like a failed read.
	inputs := junitCase{Name: "cluster inputs " + action.RuleInputWarning, Classname: "Inputs",
		Output: strings.Join(append(inputLines(rep.Inputs, rep.Basis), rep.InputWarnings...), "\n")}
	suite.Tests++
	suite.Cases = append(suite.Cases, inputs)
	// The drift now: listed, never a failure (the values did not cause it).
	suite.Tests++
	suite.Cases = append(suite.Cases, junitCase{Name: "cluster drift now", Classname: "Drift", Output: strings.Join(driftLines(rep), "\n")})
	return writeXML(w, junitSuites{Name: "driverguard check", Tests: suite.Tests, Failures: suite.Failures, Suites: []junitSuite{suite}})
}

// findingRule is the rule of a finding: its policy's package, else its built-in rule.
func findingRule(f action.Finding) string {
	if f.Package != "" {
		return f.Package
	}
	return f.Rule
}

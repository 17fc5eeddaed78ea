package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/output"
)

func newAuditCommand(s Streams) *cobra.Command {
	job := action.NewAudit(s.cfg)
	formats := output.NewFlag(output.Table, judgingFormats...)
	cmd := &cobra.Command{
		Use:   "audit (--live | --kubeconfig FILE | --nodes nodes.yaml --drivers drivers.yaml [--cluster-policy policy.yaml]) [--check-images] [-o FORMAT[=FILE]]...",
		Short: "The cluster's standing now: every stored RBLNDriver judged as if created now, the nodes' drift, missing images",
		Long: `audit runs once what 'driverguard serve' keeps doing (SPEC §9): every RBLNDriver and the
RBLNClusterPolicy of the cluster judged by the webhook's decision as if created now against the
current cluster (built-in rules, ties, policies with their enforcement), the drift of the nodes
(Unowned, NFDLabelMissing, DriverFamilyLabelMissing, PoolNameCollision, DaemonSetNotCreated,
InvalidImageTag, StaleOwnerLabel; ties are the drivers' ConflictingNodeSelector), as
rbln-npu-operator will act on them, and, with --check-images, every image a pool or RSMD DaemonSet pulls
that its registry answers 404 for (DriverImageNotFound).

One report per RBLNDriver, and driverguard-cluster for what no driver owns. A policy in audit
enforcement reports its findings without failing anything: trial a rule, read what it flags,
then enforce it.

-o yaml prints the openreports.io ClusterReports serve's audit writes; -o json the reports with
every result field; -o junit one test suite per report, one test case per result (failed by
what fails the audit); -o sarif every result that is not a pass (error, warning, or note for a
policy in audit enforcement), located at the objects it is about.

Exit codes: 0 no rule that denies fails; 1 one does (a deny finding, drift, a missing image);
2 the audit could not run.`,
		Example: `  driverguard audit --live
  driverguard audit --nodes examples/nodes.yaml --drivers examples/drivers.yaml
  driverguard audit --live --policy ./policies --enforcement team.new_rule=audit -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkMaxResults("max-results", job.MaxResults); err != nil {
				return err
			}
			res, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			if formats.Has(output.YAML) {
				// The reports carry them (driverguard-cluster); standard error tells whoever
				// redirected them to a file.
				printInputWarnings(s.Err, res.InputWarnings)
			}
			if err := output.Write(s.Out, formats.Targets(), auditReport(res)); err != nil {
				return err
			}
			return failedUnless(res.Outcome.Enforced == 0)
		},
	}
	f := cmd.Flags()
	addClusterFlags(f, &job.Cluster)
	addPolicyFlags(f, &job.Policy, "policy")
	f.BoolVar(&job.PolicyFailOpen, "policy-fail-open", false, "judge an object whose policy evaluation fails without its policies (with a warning), as serve --audit --policy-fail-open does; default: the audit fails (exit 2)")
	addLiveFlags(f, &job.Live, "Nodes, RBLNDrivers, the RBLNClusterPolicy")
	f.IntVar(&job.MaxResults, "max-results", action.DefaultAuditMaxResults, "the most results a report lists (its summary counts every one)")
	addImageFlags(f, &job.RegistryCheck, true, "HEAD every image a pool or RSMD DaemonSet pulls in its registry (only a 404 counts as missing)", "timeout of one registry request")
	registerOutput(f, formats)
	return cmd
}

// checkMaxResults rejects a --max-results (or --audit-max-results) below 1.
func checkMaxResults(flag string, n int) error {
	if n < 1 {
		return fmt.Errorf("--%s %d: a report lists at least one result (its summary counts every one); give 1 or more (default %d)", flag, n, action.DefaultAuditMaxResults)
	}
	return nil
}

// printClusterReports prints the ClusterReports as a YAML stream.
func printClusterReports(w io.Writer, res *action.AuditResult) error {
	for i := range res.Reports {
		data, err := output.MarshalYAML(&res.Reports[i])
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}

// printAudit prints each report's findings, FAIL, WARN and AUDIT lines (a policy on trial),
// its passes counted, then the totals.
func printAudit(w io.Writer, res *action.AuditResult) error {
	out := res.Outcome
	for _, r := range out.Reports {
		title := "RBLNDriver/" + r.Driver
		if r.Driver == "" {
			title = r.Name + " (what no RBLNDriver owns)"
		} else if r.Instance != "" {
			title += " (instance " + r.Instance + ")"
		}
		fmt.Fprintln(w, output.Escape(title))
		for _, f := range r.Results {
			if f.Result == action.AuditPass {
				continue
			}
			label := strings.ToUpper(string(f.Result))
			if f.Enforcement == "audit" {
				label = "AUDIT"
			}
			fmt.Fprintf(w, "  %-5s  %s\n", output.Escape(label), output.Escape(auditLine(f)))
		}
		if r.Omitted > 0 {
			fmt.Fprintf(w, "  ... and %d more results (--max-results; a report lists at most 1 MiB)\n", r.Omitted)
		}
		if r.Summary.Pass > 0 {
			fmt.Fprintf(w, "  PASS   %s\n", plural(r.Summary.Pass, "rule"))
		}
	}
	if out.ImageCheck.Checked {
		fmt.Fprintf(w, "\n%s\n", output.Escape(sentence(out.ImageCheck.String())))
		if c := out.ImageCheck.Caveat(); c != "" {
			fmt.Fprintf(w, "Warning: %s.\n", output.Escape(c))
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
	Findings []action.Finding `json:"findings"`
	*action.AuditOutcome
	Inputs        action.Inputs `json:"inputs"`
	InputWarnings []string      `json:"inputWarnings"`
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// auditLine is a finding as one line: the policy package or the built-in rule, then the
// message.
func auditLine(f action.AuditFinding) string {
	if f.Policy != "driverguard" {
		return f.Policy + ": " + strings.TrimPrefix(f.Message, "policy "+f.Policy+": ")
	}
	return f.Rule + ": " + f.Message
}

// printable is output.Escape, under the name review's and test's views call it by.
func printable(s string) string { return output.Escape(s) }

// auditReport is an audit for the writers: every result that is not a pass a finding; each
// result a JUnit case of its report (a pass passes); -o yaml the ClusterReports.
func auditReport(res *action.AuditResult) *output.Report {
	fs := res.Findings()
	r := &output.Report{Tool: "driverguard audit", Findings: fs, Rules: action.NewRuleRegistry(),
		Document:   auditJSON{fs, res.Outcome, res.Inputs, nonNilStrings(res.InputWarnings)},
		Properties: map[string]any{"inputs": res.Inputs, "judgedAgainst": inputLines(res.Inputs, "")},
		Table:      func(w io.Writer) error { return printAudit(w, res) },
		YAML:       func(w io.Writer) error { return printClusterReports(w, res) }}
	if res.Outcome.ImageCheck.Checked { // what the check covered: a pass is no result
		r.Properties["imageCheck"] = res.Outcome.ImageCheck
	}
	seen := map[string]bool{}
	for _, rep := range res.Outcome.Reports {
		r.Omitted += rep.Omitted
		for _, f := range rep.Results {
			obj := finding.Object{Kind: finding.KindCluster, Name: rep.Name}
			if len(f.Subjects) > 0 {
				obj = finding.Object{Kind: f.Subjects[0].Kind, Name: f.Subjects[0].Name}
			}
			rule := f.Rule
			if f.Policy != action.AuditBuiltinPolicy {
				rule = f.Policy
				if f.Rule != "" {
					rule = finding.RegoRule(f.Policy, f.Rule)
				}
			}
			name := obj.String() + " " + rule
			if seen[rep.Name+"\x00"+name] {
				continue
			}
			seen[rep.Name+"\x00"+name] = true
			sub := output.Subject{Name: name, Object: obj, Group: rep.Name, Class: rep.Name, Rules: []string{rule}}
			if f.Result == action.AuditError {
				sub.Error = f.Message
			}
			if f.Result == action.AuditPass && f.Message != "" { // what the image check covered
				sub.Output = []string{"PASS  " + f.Message}
			}
			r.Judged = append(r.Judged, sub)
		}
	}
	r.Judged = append(r.Judged, output.Subject{Name: "cluster inputs " + action.RuleInputWarning, Group: "inputs", Class: "Inputs",
		AnyObject: true, Rules: []string{action.RuleInputWarning}, Output: inputLines(res.Inputs, "")})
	return r
}

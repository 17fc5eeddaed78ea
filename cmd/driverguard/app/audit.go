package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
)

func newAuditCommand(s Streams) *cobra.Command {
	job := action.NewAudit(s.cfg)
	formats := output.NewFlag(output.Table, judgingFormats...)
	cmd := &cobra.Command{
		Use:   "audit (--live | --kubeconfig FILE | --nodes nodes.yaml --drivers drivers.yaml [--cluster-policy policy.yaml]) [--check-images] [-o FORMAT[=FILE]]...",
		Short: "The cluster's standing now: every stored RBLNDriver judged as if created now, the nodes' drift, missing images",
		Long: `audit runs once what 'driverguard serve' keeps doing (docs/audit.md): every RBLNDriver and the
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
				output.InputWarnings(s.Err, res.InputWarnings)
			}
			if err := output.Write(s.Out, formats.Targets(), output.AuditReport(res)); err != nil {
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

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

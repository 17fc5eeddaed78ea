package app

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
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
			report := output.CheckReport("driverguard check", rep, job.Rules())
			report.Table = func(w io.Writer) error { return output.CheckTable(w, rep) }
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

package app

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
)

func newPreviewCommand(s Streams) *cobra.Command {
	job := action.NewPreview(s.cfg) // with provenance: preview explains where each field came from
	formats := output.NewFlag(output.Table, judgingFormats...)
	cmd := &cobra.Command{
		Use:   "preview -f values.yaml [--live | --nodes nodes.yaml [--drivers current.yaml]] [--check-images] [--allow-driver-loss]",
		Short: "Explain what values will render and, with a node inventory, which driver each node gets",
		Long: `preview renders the values like 'render' and explains each RBLNDriver: its version, its selector,
and which fields the instance set or cleared versus inherited from driver.* or the chart's
defaults. It warns about an instance that differs from the default only by its selector.

It then judges the release exactly as 'check' does (the same flags, the same verdict and exit
code) and, with --nodes (the output of 'kubectl get nodes -o yaml', or a stream of Node
documents), shows the cluster after it: the owner of every node, pools with their DaemonSets and
composed images, ties, unowned nodes, nodes missing a family label, and the nodes that would
lose or change their driver compared with their driver now: the one the current RBLNDrivers
route to them (--drivers or --live), else the one their rebellions.ai/npu.driver.owner label
names (given the current RBLNDrivers, a label that names none of them is drift, not a driver
to lose).
An object the webhook would deny is not applied, so the routing shown is without it.
--check-images asks the registry for every composed image (only a 404 fails a pool).

Exit codes: as check: 0 passed, 1 a denial or an unacknowledged driver loss (or invalid values)
or, with --check-images, an image its registry does not have; 2 unusable input.`,
		Example: `  driverguard preview -f examples/multi-driver.yaml --nodes examples/nodes.yaml
  kubectl get nodes -o yaml | driverguard preview -f values.yaml --nodes - -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			r := &output.Report{Tool: "driverguard preview", Findings: rep.Findings, Document: rep, Rules: action.NewRuleRegistry(),
				Table: func(w io.Writer) error { return output.PreviewTable(w, rep) }}
			if err := output.Write(s.Out, formats.Targets(), r); err != nil {
				return err
			}
			return failedUnless(rep.Passed)
		},
	}
	addJudgeFlags(cmd.Flags(), &job.Judge)
	addLiveFlags(cmd.Flags(), &job.Live, "Nodes, RBLNDrivers and the RBLNClusterPolicy")
	addImageFlags(cmd.Flags(), &job.RegistryCheck, true, "HEAD every composed driver image in its registry (needs --nodes)", "timeout of one registry request")
	registerOutput(cmd.Flags(), formats)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package app

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/render/preview"
)

type previewOptions struct {
	valuesFlags
	nodesFile string
	images    imageCheckFlags
	output    outputFlag
}

func newPreviewCommand(s Streams) *cobra.Command {
	o := &previewOptions{output: outputFlag{format: "table", allowed: []string{"table", "json", "yaml"}}}
	cmd := &cobra.Command{
		Use:   "preview -f values.yaml [--nodes nodes.yaml] [--check-images]",
		Short: "Explain what values will render and, with a node inventory, which driver each node gets",
		Long: `preview renders the values like 'render' and explains each RBLNDriver: its version, its selector,
and which fields the instance set or cleared versus inherited from driver.* or the chart's
defaults. It warns about an instance that differs from the default only by its selector.

With --nodes (the output of 'kubectl get nodes -o yaml', or a stream of Node documents) it also
routes the drivers onto the nodes: the owner of every node, pools with their DaemonSets and
composed images, ties, unowned nodes, nodes missing a family label, and the nodes that would
lose or change their driver compared with their current rebellions.ai/npu.driver.owner label.
--check-images asks the registry for every composed image (only a 404 fails a pool).`,
		Example: `  driverguard preview -f examples/multi-driver.yaml --nodes examples/nodes.yaml
  kubectl get nodes -o yaml | driverguard preview -f values.yaml --nodes - -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.output.validate(); err != nil {
				return err
			}
			if o.images.enabled && o.nodesFile == "" {
				return usageError(fmt.Errorf("--check-images needs --nodes: images are composed per node pool"))
			}
			r, err := o.render()
			if err != nil {
				return err
			}
			rep := preview.Build(r)
			if o.nodesFile != "" {
				nodes, err := readNodes(o.nodesFile, s)
				if err != nil {
					return err
				}
				rep.WithNodes(r.Drivers, nodes)
				if o.images.enabled {
					rep.Nodes.Images = o.images.check(cmd.Context(), rep.Nodes.Routing)
				}
			}
			switch o.output.format {
			case "json":
				return writeJSON(s.Out, rep)
			case "yaml":
				return writeYAML(s.Out, rep)
			}
			return printPreview(s.Out, rep)
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.nodesFile, "nodes", "", "node inventory: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin)")
	cmd.Flags().BoolVar(&o.images.enabled, "check-images", false, "HEAD every composed driver image in its registry (needs --nodes)")
	cmd.Flags().DurationVar(&o.images.timeout, "image-timeout", 10*time.Second, "timeout of one registry request")
	cmd.Flags().StringVarP(&o.output.format, "output", "o", o.output.format, "output format: table, json or yaml")
	return cmd
}

func printPreview(w io.Writer, rep *preview.Report) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "RESOURCE\tVERSION\tSELECTOR\tSET ON INSTANCE\tINHERITED")
	for _, r := range rep.Resources {
		sel := formatSelector(r.Selector)
		if len(r.Selector) == 0 {
			sel = "{} (fallback for every candidate node)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", r.Name, r.Version, sel, len(r.Overridden), len(r.Inherited))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Resources {
		fmt.Fprintf(w, "\n%s (version %s)\n", r.Name, r.Version)
		tw = newTable(w)
		fmt.Fprintln(tw, "  FIELD\tVALUE\tORIGIN\tFROM")
		for _, f := range append(append([]render.FieldOrigin(nil), r.Overridden...), r.Inherited...) {
			if f.Field == "nodeSelector" {
				continue
			}
			origin := string(f.Origin)
			if f.Inherited() && r.InstanceKey != "" {
				origin = "inherited (" + origin + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Field, truncateCell(f.Value, 60), origin, f.ValuesPath)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintln(w, "\nWARNINGS")
		for _, wn := range rep.Warnings {
			fmt.Fprintf(w, "  %s\n", wn)
		}
	}
	if rep.Nodes != nil {
		return printNodeReport(w, rep.Nodes)
	}
	return nil
}

func printNodeReport(w io.Writer, nr *preview.NodeReport) error {
	fmt.Fprintln(w)
	printRouting(w, nr.Routing)
	var lines []string
	for _, n := range nr.Unowned {
		lines = append(lines, fmt.Sprintf("%s (%s)", n.Name, n.Reason))
	}
	printSection(w, "UNOWNED CANDIDATE NODES", lines)
	printSection(w, "NODES WITHOUT A VALID FAMILY LABEL (DriverFamilyLabelMissing: no pool; existing DaemonSets are kept)", nr.FamilyLabelMissing)
	lines = nil
	for _, c := range nr.LosingDriver {
		lines = append(lines, fmt.Sprintf("%s: owned by %s now, would get no driver (%s)", c.Node, c.From, dash(c.Reason)))
	}
	printSection(w, "NODES THAT WOULD LOSE THEIR DRIVER", lines)
	lines = nil
	for _, c := range nr.ChangingDriver {
		lines = append(lines, fmt.Sprintf("%s: %s -> %s", c.Node, c.From, c.To))
	}
	printSection(w, "NODES THAT WOULD CHANGE DRIVER", lines)
	printImages(w, nr.Images)
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncateCell(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
)

func newRouteCommand(s Streams) *cobra.Command {
	job := action.NewRoute(s.cfg)
	output := newOutput(formatTable, formatTable, formatJSON, formatYAML)
	cmd := &cobra.Command{
		Use:   "route --drivers drivers.yaml --nodes nodes.yaml [-o json|table] [--check-images]",
		Short: "Decide the owner, pool, DaemonSet and image of every node from files",
		Long: `route applies the routing rules to RBLNDrivers and Nodes read from files: which driver owns each
node (the most specific matching selector), ties, invalid resources, pools with their DaemonSet
names and composed images.

--drivers takes any stream of RBLNDriver documents (for example the output of 'driverguard
render'; other kinds are skipped). --nodes takes 'kubectl get nodes -o yaml' output or a Node
stream. -o json prints the stable contract:
  {"nodes":[{"name","owner","pool","image","reason"}],"conflicts":[{"resources","nodes"}],
   "invalid":[{"resource","reason"}],"pools":[{"name","daemonSet","owner","image","nodes"}]}
with every list sorted by name. The exit code is 0 whenever the files could be read; read the
output for ties and invalid resources.`,
		Example: `  driverguard render -f values.yaml > drivers.yaml
  kubectl get nodes -o yaml > nodes.yaml
  driverguard route --drivers drivers.yaml --nodes nodes.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			printInputWarnings(s.Err, res.InputWarnings)
			out := routeJSON{RouteContract: res.Routing.Contract(), ImageCheck: res.ImageCheck, Images: res.Images, InputWarnings: nonNilStrings(res.InputWarnings)}
			return output.print(s.Out, out, func(w io.Writer) error {
				printRouting(w, res.Routing)
				printImages(w, res.Images, res.ImageCheck)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&job.Drivers, "drivers", "", "RBLNDriver documents, e.g. the output of render ('-' for stdin)")
	cmd.Flags().StringVar(&job.Nodes, "nodes", "", "node inventory: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin)")
	cmd.Flags().StringVar(&job.ClusterPolicy, "cluster-policy", "", "the RBLNClusterPolicy (optional): the operator splits pools by rebellions.ai/rds.present when its spec.rds.enabled is true ('-' for stdin)")
	addImageFlags(cmd.Flags(), &job.RegistryCheck, false, "HEAD every composed driver image in its registry; only a 404 fails a pool", "timeout of one image check")
	output.register(cmd.Flags())
	return cmd
}

// routeJSON is the route contract and what the registry check covered (keys added to the
// contract, as SPEC §7 allows): imageCheck always (checked false without --check-images), the
// registry's answer per image with --check-images.
type routeJSON struct {
	action.RouteContract
	ImageCheck action.ImageCheck    `json:"imageCheck"`
	Images     []action.ImageResult `json:"images,omitempty"`
	// InputWarnings are also said on stderr.
	InputWarnings []string `json:"inputWarnings"`
}

// printRouting prints nodes, pools, ties and invalid resources as aligned tables, every
// value escaped (output.Escape: a line break or a tab in a name stays in its cell).
func printRouting(w io.Writer, res *action.Routing) {
	esc := output.Escape
	fmt.Fprintln(w, "NODES")
	tw := newTable(w)
	fmt.Fprintln(tw, "  NODE\tOWNER\tPOOL\tIMAGE\tREASON")
	for _, n := range res.Nodes {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", esc(n.Name), esc(dash(n.Owner)), esc(dash(n.Pool)), esc(dash(n.Image)), esc(dash(string(n.Reason))))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nDAEMONSETS")
	tw = newTable(w)
	fmt.Fprintln(tw, "  DAEMONSET\tOWNER\tNODES\tIMAGE\tSTATUS")
	for _, p := range res.Pools {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\n", esc(p.DaemonSet), esc(p.Owner), len(p.Nodes), esc(dash(p.Image)), esc(dash(strings.TrimSpace(string(p.Reason)+" "+p.Detail))))
	}
	for _, smd := range res.SMD {
		fmt.Fprintf(tw, "  %s\t%s\tall owned\t%s\t%s\n", esc(smd.DaemonSet), esc(smd.Resource), esc(dash(smd.Image)), esc(dash(smd.Detail)))
	}
	tw.Flush()
	var lines []string
	for _, c := range res.Conflicts {
		lines = append(lines, fmt.Sprintf("%s tie on %d node(s), e.g. %s; make one selector a strict superset of the other or change a selector",
			strings.Join(c.Resources, " and "), c.Total, strings.Join(c.Nodes, ", ")))
	}
	printSection(w, "TIES (ConflictingNodeSelector)", lines)
	lines = nil
	for _, inv := range res.Invalid {
		lines = append(lines, fmt.Sprintf("%s: %s: %s", inv.Resource, inv.Reason, inv.Message))
	}
	printSection(w, "INVALID RESOURCES (take no part in routing)", lines)
}

// printImages prints what the registry check covered — how many images were found, missing
// and not verified, and why — then every image not found or not verified; nothing without a
// check.
func printImages(w io.Writer, images []action.ImageResult, check action.ImageCheck) {
	if !check.Checked {
		return
	}
	lines := []string{check.String()}
	if c := check.Caveat(); c != "" {
		lines = append(lines, c)
	}
	for _, img := range images {
		switch img.Status {
		case action.ImageFound:
		case action.ImageNotFound:
			lines = append(lines, fmt.Sprintf("%s: %s %s", img.Image, img.Status, img.Message))
		default:
			lines = append(lines, fmt.Sprintf("%s: NOT VERIFIED (%s): %s", img.Image, img.Reason, img.Cause()))
		}
	}
	printSection(w, "IMAGE CHECK", lines)
}

// printSection prints a titled section, a line each, each line escaped (output.Escape): the
// lines quote values from the input (node names, file names, messages), and a line break or a
// tab in one cannot start a line of its own. The writer's own text in a line holds no
// character Escape changes, and a line escaped already is unchanged.
func printSection(w io.Writer, title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", output.Escape(l))
	}
}

// printInputWarnings says on standard error the inputs that look like a failed read, a line
// each, escaped (they quote the file names given).
func printInputWarnings(w io.Writer, warnings []string) {
	for _, wn := range warnings {
		fmt.Fprintln(w, "Warning:", output.Escape(wn))
	}
}

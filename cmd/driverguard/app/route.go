package app

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
)

func newRouteCommand(s Streams) *cobra.Command {
	job := action.NewRoute(s.cfg)
	format := newOutput(formatTable, formatTable, formatJSON, formatYAML)
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
			output.InputWarnings(s.Err, res.InputWarnings)
			out := routeJSON{RouteContract: res.Routing.Contract(), ImageCheck: res.ImageCheck, Images: res.Images, InputWarnings: nonNilStrings(res.InputWarnings)}
			return format.print(s.Out, out, func(w io.Writer) error {
				output.RouteTable(w, res.Routing)
				output.RouteImages(w, res.Images, res.ImageCheck)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&job.Drivers, "drivers", "", "RBLNDriver documents, e.g. the output of render ('-' for stdin)")
	cmd.Flags().StringVar(&job.Nodes, "nodes", "", "node inventory: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin)")
	cmd.Flags().StringVar(&job.ClusterPolicy, "cluster-policy", "", "the RBLNClusterPolicy (optional): the operator splits pools by rebellions.ai/rds.present when its spec.rds.enabled is true ('-' for stdin)")
	addImageFlags(cmd.Flags(), &job.RegistryCheck, false, "HEAD every composed driver image in its registry; only a 404 fails a pool", "timeout of one image check")
	format.register(cmd.Flags())
	return cmd
}

// routeJSON is the route contract and what the registry check covered (keys added to the
// contract, as docs/routing.md "`route -o json` contract" allows): imageCheck always (checked false without --check-images), the
// registry's answer per image with --check-images.
type routeJSON struct {
	action.RouteContract
	ImageCheck action.ImageCheck    `json:"imageCheck"`
	Images     []action.ImageResult `json:"images,omitempty"`
	// InputWarnings are also said on stderr.
	InputWarnings []string `json:"inputWarnings"`
}

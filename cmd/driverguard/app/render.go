package app

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
)

func newRenderCommand(s Streams) *cobra.Command {
	job := action.NewRender(s.cfg)
	output := newOutput(formatYAML, formatYAML, formatJSON, formatTable)
	cmd := &cobra.Command{
		Use:   "render -f values.yaml [-f more.yaml] [--set key=value]",
		Short: "Render the RBLNDriver and RBLNClusterPolicy objects helm template would render",
		Long: `render expands driver values into RBLNDriver resources (one per driver.instances entry plus the
default) and the RBLNClusterPolicy, exactly as 'helm template' renders them with the chart embedded
in this binary. Unlike Helm it rejects, with the values path and a fix, what Helm would let through
silently. On any invalid input nothing is printed to stdout and the exit code is 1.`,
		Example: `  driverguard render -f examples/multi-driver.yaml
  driverguard render -f values.yaml --set driver.instances.atom-canary.image.tag=3.3.1 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			printWarnings(s.Err, r.Warnings)
			return printRender(s.Out, output.format, r)
		},
	}
	addValuesFlags(cmd.Flags(), &job.RenderOptions)
	output.register(cmd.Flags())
	return cmd
}

// printRender prints the rendered objects: a YAML stream as helm template prints it, a v1
// List in JSON, or a table.
func printRender(w io.Writer, format string, r *action.Rendered) error {
	switch format {
	case formatJSON:
		list, err := asList(r)
		if err != nil {
			return err
		}
		return writeJSON(w, list)
	case formatTable:
		return output.RenderTable(w, r)
	}
	data, err := action.Manifest(r)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// asList wraps the rendered objects in a v1 List, as kubectl prints several objects in JSON.
func asList(r *action.Rendered) (*metav1.List, error) {
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	objs := []any{&r.ClusterPolicy}
	for i := range r.Drivers {
		objs = append(objs, &r.Drivers[i])
	}
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", o, err)
		}
		list.Items = append(list.Items, runtime.RawExtension{Raw: raw})
	}
	return list, nil
}

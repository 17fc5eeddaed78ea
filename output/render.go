package output

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/driverguard/driverguard/render"
)

// RenderTable lists the rendered objects, one line each, the names, versions and selectors
// (from the values) escaped (Escape).
func RenderTable(w io.Writer, r *render.Result) error {
	esc := Escape
	tw := newTable(w)
	fmt.Fprintln(tw, "KIND\tNAME\tVERSION\tSELECTOR")
	fmt.Fprintf(tw, "RBLNClusterPolicy\t%s\t-\t-\n", esc(r.ClusterPolicy.Name))
	for _, d := range r.Drivers {
		fmt.Fprintf(tw, "RBLNDriver\t%s\t%s\t%s\n", esc(d.Name), esc(d.Spec.Version), esc(formatSelector(d.Spec.NodeSelector)))
	}
	return tw.Flush()
}

// formatSelector prints a selector as sorted k=v pairs; the empty selector is "{}".
func formatSelector(sel map[string]string) string {
	if len(sel) == 0 {
		return "{}"
	}
	return labels.Set(sel).String()
}

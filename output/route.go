package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/routing"
)

// RouteTable prints nodes, pools, ties and invalid resources as aligned tables, every
// value escaped (Escape: a line break or a tab in a name stays in its cell).
func RouteTable(w io.Writer, res *routing.Result) {
	esc := Escape
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

// RouteImages prints what the registry check covered — how many images were found, missing
// and not verified, and why — then every image not found or not verified; nothing without a
// check.
func RouteImages(w io.Writer, images []registry.ImageResult, check registry.Summary) {
	if !check.Checked {
		return
	}
	lines := []string{check.String()}
	if c := check.Caveat(); c != "" {
		lines = append(lines, c)
	}
	for _, img := range images {
		switch img.Status {
		case registry.Found:
		case registry.NotFound:
			lines = append(lines, fmt.Sprintf("%s: %s %s", img.Image, img.Status, img.Message))
		default:
			lines = append(lines, fmt.Sprintf("%s: NOT VERIFIED (%s): %s", img.Image, img.Reason, img.Cause()))
		}
	}
	printSection(w, "IMAGE CHECK", lines)
}

// InputWarnings says on standard error the inputs that look like a failed read, a line
// each, escaped (they quote the file names given).
func InputWarnings(w io.Writer, warnings []string) {
	for _, wn := range warnings {
		fmt.Fprintln(w, "Warning:", Escape(wn))
	}
}

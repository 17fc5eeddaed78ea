package output

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/release"
)

// sentence starts s with a capital and ends it with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// imageChange is a node's image old -> new for the table: the tags only when the repository
// stays (a driver rollout changes the tag), the whole references when it changes.
func imageChange(old, new string) string {
	oldRepo, oldTag := splitTag(old)
	newRepo, newTag := splitTag(new)
	if old == "" || new == "" || oldRepo != newRepo {
		return arrow(old, new)
	}
	return arrow(oldTag, newTag)
}

// splitTag splits an image reference into its repository and tag (no tag: "").
func splitTag(ref string) (string, string) {
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

func arrow(old, new string) string {
	switch {
	case old == new:
		return dash(new)
	case old == "":
		return "- -> " + new
	case new == "":
		return old + " -> -"
	}
	return old + " -> " + new
}

// inputLines say what each part of the cluster was read from, and what a node's driver now
// is read from. They quote the files and the context given as they are, for the JUnit and
// JSON outputs too: printSection escapes them where a table prints them.
func inputLines(in cluster.Sources, basis string) []string {
	if !in.Nodes.Given && !in.Drivers.Given && !in.ClusterPolicy.Given {
		return []string{"the rendered objects alone: no nodes, RBLNDrivers or RBLNClusterPolicy were read (conflicts are judged on the selectors alone)"}
	}
	lines := []string{in.Nodes.Describe("node", "nodes")}
	drivers := in.Drivers.Describe("RBLNDriver", "RBLNDrivers")
	if basis == release.BasisOwnerLabels && in.Nodes.Given {
		drivers += " (a node's driver now is the one its " + operator.LabelOwner + " label names; give --drivers or --live to tell a stale label from a driver)"
	}
	lines = append(lines, drivers, in.ClusterPolicy.Describe("RBLNClusterPolicy", "RBLNClusterPolicy"))
	if in.Workloads.Given {
		lines = append(lines, in.Workloads.Describe("pod", "pods"))
	}
	return lines
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printSection prints a titled section, a line each, each line escaped (Escape): the
// lines quote values from the input (node names, file names, messages), and a line break or a
// tab in one cannot start a line of its own. The writer's own text in a line holds no
// character Escape changes, and a line escaped already is unchanged.
func printSection(w io.Writer, title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", Escape(l))
	}
}

// newTable returns a tabwriter for aligned, human-readable columns, writing through
// InertWriter: a control character in a cell reaches w escaped. A writer escapes each
// value from the input itself (Escape), so that a tab or a line break in it cannot
// break the columns either.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(InertWriter(w), 0, 0, 2, ' ', 0)
}

package output

import (
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/release"
)

// PreviewTable is preview's table and text, every value from the input escaped
// (Escape): names, versions, selectors, fields' values and values paths, warnings.
func PreviewTable(w io.Writer, rep *release.PreviewReport) error {
	esc := Escape
	tw := newTable(w)
	fmt.Fprintln(tw, "RESOURCE\tVERSION\tSELECTOR\tSET ON INSTANCE\tINHERITED")
	for _, r := range rep.Resources {
		sel := esc(formatSelector(r.Selector))
		if len(r.Selector) == 0 {
			sel = "{} (fallback for every candidate node)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", esc(r.Name), esc(r.Version), sel, len(r.Overridden), len(r.Inherited))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Resources {
		fmt.Fprintf(w, "\n%s (version %s)\n", esc(r.Name), esc(r.Version))
		tw = newTable(w)
		fmt.Fprintln(tw, "  FIELD\tVALUE\tORIGIN\tFROM")
		for _, f := range slices.Concat(r.Overridden, r.Inherited) {
			if f.Field == "nodeSelector" {
				continue
			}
			origin := string(f.Origin)
			if f.Inherited() && r.InstanceKey != "" {
				origin = "inherited (" + origin + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", esc(f.Field), truncateCell(f.Value, 60), esc(origin), esc(f.ValuesPath))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintln(w, "\nWARNINGS")
		for _, wn := range rep.Warnings {
			fmt.Fprintf(w, "  %s\n", esc(wn.String()))
		}
	}
	if rep.Nodes != nil {
		if err := printNodeReport(w, rep.Nodes); err != nil {
			return err
		}
	}
	if err := printVerdict(w, rep.Verdict); err != nil {
		return err
	}
	if n := rep.MissingImages(); n > 0 {
		_, err := fmt.Fprintf(w, "FAILED: %s missing from its registry (--check-images, IMAGE CHECK above): the pools that pull it cannot start their driver\n", plural(n, "image"))
		return err
	}
	return nil
}

// printVerdict prints the check verdict of the previewed release: the objects denied or
// warned, then the summary.
func printVerdict(w io.Writer, rep *release.Report) error {
	var lines []string
	byObject := verdictFindings(rep.Findings)
	for _, res := range rep.Resources {
		title := res.Kind + "/" + res.Name
		for _, f := range ofLevel(byObject[finding.Object{Kind: res.Kind, Name: res.Name}], finding.Deny) {
			lines = append(lines, fmt.Sprintf("%s: DENIED, not applied: %s", title, findingLine(f, title)))
		}
		if res.OmittedDeny > 0 {
			lines = append(lines, fmt.Sprintf("%s: DENIED, ... and %d more", title, res.OmittedDeny))
		}
		for _, f := range ofLevel(byObject[finding.Object{Kind: res.Kind, Name: res.Name}], finding.Warn) {
			lines = append(lines, fmt.Sprintf("%s: WARN %s", title, findingLine(f, title)))
		}
		if res.OmittedWarn > 0 {
			lines = append(lines, fmt.Sprintf("%s: WARN ... and %d more", title, res.OmittedWarn))
		}
	}
	if loss := len(rep.DriverLoss) + rep.DriverLossOmitted; !rep.DriverLossAllowed && loss > 0 {
		lines = append(lines, fmt.Sprintf("%d node(s) would lose their driver (above); acknowledge with --allow-driver-loss", loss))
	}
	printSection(w, "VERDICT (as driverguard check and the admission webhook decide)", lines)
	printJudgedAgainst(w, rep)
	verdict := "passed"
	if !rep.Passed {
		verdict = "FAILED"
	}
	_, err := fmt.Fprintf(w, "\n%d resources, %d policies: %s, %s; %s\n", len(rep.Resources), len(rep.Policies),
		plural(rep.Failures, "failure"), plural(rep.Warnings, "warning"), verdict)
	return err
}

func printNodeReport(w io.Writer, nr *release.NodeReport) error {
	fmt.Fprintln(w)
	RouteTable(w, nr.Routing)
	var lines []string
	for _, n := range nr.Unowned {
		lines = append(lines, fmt.Sprintf("%s (%s)", n.Name, n.Reason))
	}
	printSection(w, "UNOWNED CANDIDATE NODES", lines)
	printSection(w, "NODES WITHOUT A VALID FAMILY LABEL (DriverFamilyLabelMissing: no pool; existing DaemonSets are kept)", nr.FamilyLabelMissing)
	printSection(w, "NODES WITHOUT NODE FEATURE DISCOVERY LABELS (NFDLabelMissing: no pool; install Node Feature Discovery)", nr.NFDLabelMissing)
	lines = nil
	for _, n := range nr.NotRunning {
		lines = append(lines, fmt.Sprintf("%s (%s): %s", n.Name, n.Reason, n.Detail))
	}
	printSection(w, "NODES THEIR POOL'S DAEMONSET DOES NOT RUN ON", lines)
	lines = nil
	for _, c := range nr.Changes {
		lines = append(lines, changeLine(c))
	}
	title := "NODE CHANGES (compared with the routing of the current RBLNDrivers, as driverguard plan does; plan also says which are held or blocked)"
	if nr.Basis == release.BasisOwnerLabels {
		title = "NODE CHANGES (compared with the nodes' " + operator.LabelOwner + " labels: the current RBLNDrivers were not given, so upgrades are not known; --drivers or --live compares as driverguard plan does)"
	}
	printSection(w, title, lines)
	RouteImages(w, nr.Images, nr.ImageCheck)
	return nil
}

// changeLine is one node's change: the action, the owner and, for an upgrade, the images
// (printSection escapes it).
func changeLine(c release.NodeChange) string {
	line := fmt.Sprintf("%s: %s %s", c.Node, c.Action, arrow(c.From, c.To))
	if c.Action == plan.NodeUpgrade {
		line += ": " + imageChange(c.OldImage, c.NewImage)
	}
	if c.Reason != "" {
		line += " (" + c.Reason + ")"
	}
	return line
}

func truncateCell(s string, n int) string {
	s = Escape(s) // a value's line breaks and escape sequences: one row per field
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

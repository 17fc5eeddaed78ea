package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/driverguard/driverguard/plan"
)

// PlanRelease is what plan --release read of a release: its name, namespace, revision,
// Helm's status of the revision, and whether that revision is deployed.
type PlanRelease struct {
	Name, Namespace string
	Revision        int
	Status          string
	Deployed        bool
}

// PlanReleaseNotice says which release plan --release read, and warns when its latest
// revision is not deployed. The release's name, namespace and status are escaped
// (Escape): they come from the flags and the cluster's storage.
func PlanReleaseNotice(w io.Writer, d PlanRelease, live bool) {
	name, ns, status := Escape(d.Name), Escape(d.Namespace), Escape(d.Status)
	fmt.Fprintf(w, "Planning from release %s in namespace %s (revision %d, %s): its values are the cluster's RBLNDrivers now%s.\n",
		name, ns, d.Revision, status, map[bool]string{true: " (with --live, the cluster's own RBLNDrivers are)", false: ""}[live])
	if !d.Deployed {
		fmt.Fprintf(w, "Warning: revision %d of release %s is %s, not deployed: its values may not be what the cluster runs (`helm history %s -n %s`).\n", d.Revision, name, status, name, ns)
	}
}

// PlanTable is plan's table and text. Every value from the input — names, versions,
// selectors, owners, pools, images, reasons, the denials' messages, drift, warnings, blockers,
// the rollout's nodes and steps — is escaped (Escape), so that a line break or a tab in
// one cannot start a line or a column; a cell made of values and the writer's own text
// ("old -> new", "-") is escaped whole, which escapes only what the values hold.
func PlanTable(w io.Writer, p *plan.Plan) error {
	esc := Escape
	tw := newTable(w)
	fmt.Fprintln(tw, "RBLNDRIVER\tACTION\tVERSION\tSELECTOR")
	for _, d := range p.Drivers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", esc(d.Name), esc(string(d.Action)), esc(arrow(d.OldVersion, d.NewVersion)), esc(selectorChange(d)))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NODE\tACTION\tOWNER\tPOOL\tIMAGE\tREASON")
	for _, n := range p.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", esc(n.Name), esc(string(n.Action)), esc(arrow(n.OldOwner, n.NewOwner)), esc(dash(n.Pool)),
			esc(imageChange(n.OldImage, n.NewImage)), esc(dash(n.Reason)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printRollout(w, p, "", "")
	printBlockers(w, p, "  ")
	if c := p.BlockerCheck.Caveat(); c != "" {
		fmt.Fprintf(w, "\nWarning: %s\n", esc(c))
	}
	printPlanImages(w, p)
	if len(p.Denials) > 0 {
		fmt.Fprintln(w, "\nDenied (not applied):")
		for _, d := range p.Denials {
			fmt.Fprintf(w, "  %s %s: %s\n", esc(d.Kind), esc(d.Name), esc(strings.Join(d.Findings, "; ")))
		}
	}
	if len(p.Drift) > 0 {
		fmt.Fprintln(w, "\nDrift now:")
		for _, d := range p.Drift {
			fmt.Fprintf(w, "  %s %s: %s\n", esc(d.Node), esc(string(d.Kind)), esc(d.Detail))
		}
	}
	for _, wn := range p.InputWarnings {
		fmt.Fprintf(w, "\nWarning: %s\n", esc(wn))
	}
	printSection(w, "JUDGED AGAINST", planInputLines(p))
	s := p.Summary
	fmt.Fprintf(w, "\nSummary: %d upgrade, %d change owner, %d lose driver, %d gain driver, %d held, %d blocked; %d batch(es)\n",
		s.Upgrade, s.ChangeOwner, s.LoseDriver, s.GainDriver, s.Held, s.Blocked, s.Batches)
	if s.LoseDriver > 0 && p.Inputs.AllowDriverLoss {
		fmt.Fprintf(w, "%d node(s) lose their driver: acknowledged (--allow-driver-loss).\n", s.LoseDriver)
	}
	switch {
	case p.Proceed && p.BlockerCheck.Unchecked():
		fmt.Fprintln(w, "The plan can proceed as far as it could see (drain blockers not checked).")
	case p.Proceed:
		fmt.Fprintln(w, "The plan can proceed.")
	default:
		fmt.Fprintln(w, "The plan cannot proceed as is: "+esc(strings.Join(p.Reasons, "; "))+".")
	}
	return nil
}

// planInputLines say what each part of the cluster was read from, as check's, and the pods:
// without them the drain blockers are not known.
func planInputLines(p *plan.Plan) []string {
	in := p.Inputs.Cluster
	lines := inputLines(in, p.Basis)
	if !in.Workloads.Given {
		lines = append(lines, "pods: not given (drain blockers not checked)")
	}
	return lines
}

// printPlanImages says what the registry check covered, then the images missing and those
// no registry answered for, each value escaped.
func printPlanImages(w io.Writer, p *plan.Plan) {
	esc := Escape
	fmt.Fprintf(w, "\n%s\n", esc(sentence(p.ImageCheck.String())))
	if c := p.ImageCheck.Caveat(); c != "" {
		fmt.Fprintf(w, "Warning: %s.\n", esc(c))
	}
	if len(p.MissingImages) > 0 {
		fmt.Fprintln(w, "Missing images:")
		for _, m := range p.MissingImages {
			fmt.Fprintf(w, "  %s: %s\n", esc(m.Pool), esc(m.Image))
		}
	}
	if len(p.ImageWarnings) > 0 {
		fmt.Fprintln(w, "Not verified:")
		for _, g := range byImage(p.ImageWarnings) {
			fmt.Fprintf(w, "  %s (%s): %s\n    pools: %s\n", esc(g.image), esc(string(g.reason)), esc(g.why), esc(strings.Join(g.pools, ", ")))
		}
	}
}

// imageGroup is one image not verified and the pools that pull it.
type imageGroup struct {
	image, reason, why string
	pools              []string
}

// byImage groups not-verified pools by image, in the order of first appearance: the reason
// is the image's, said once.
func byImage(warnings []plan.MissingImage) []imageGroup {
	var out []imageGroup
	at := map[string]int{}
	for _, m := range warnings {
		i, ok := at[m.Image]
		if !ok {
			i = len(out)
			at[m.Image] = i
			out = append(out, imageGroup{image: m.Image, reason: m.Reason, why: m.Why})
		}
		out[i].pools = append(out[i].pools, m.Pool)
	}
	return out
}

func printRollout(w io.Writer, p *plan.Plan, heading, indent string) {
	r := p.Rollout
	switch {
	case len(p.Batches) > 0:
		fmt.Fprintf(w, "\n%sRollout (autoUpgrade, maxParallelUpgrades %d):\n", heading, r.MaxParallelUpgrades)
		for i, b := range p.Batches {
			fmt.Fprintf(w, "%s  %d. %s\n", indent, i+1, Escape(strings.Join(b, ", ")))
		}
	case len(p.Manual) > 0:
		fmt.Fprintf(w, "\n%sManual rollout (autoUpgrade false: OnDelete DaemonSets), node by node:\n", heading)
		for _, m := range p.Manual {
			fmt.Fprintf(w, "%s  %s:\n", indent, Escape(m.Node))
			for _, st := range m.Steps {
				fmt.Fprintf(w, "%s    %s\n", indent, Escape(st))
			}
		}
	}
}

func printBlockers(w io.Writer, p *plan.Plan, indent string) {
	first := true
	for _, n := range p.Nodes {
		for _, b := range n.Blockers {
			if first {
				fmt.Fprintln(w, "\nDrain blockers:")
				first = false
			}
			verdict := "blocks"
			if !b.Blocks {
				verdict = "warning"
			}
			esc := Escape
			fmt.Fprintf(w, "%s%s %s %s (%s): %s\n", indent, esc(n.Name), esc(string(b.Kind)), esc(b.Pod), verdict, esc(b.Detail))
		}
	}
}

// selectorChange is a driver's nodeSelector, old -> new when an update changes it.
func selectorChange(d plan.DriverPlan) string {
	switch {
	case d.Action == plan.DriverDelete:
		return d.OldSelector
	case d.Action == plan.DriverUpdate && d.SelectorChange:
		return arrow(d.OldSelector, d.NewSelector)
	}
	return d.NewSelector
}

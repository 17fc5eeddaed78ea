package output

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/release"
)

// PlanMarkdown writes the plan as a change ticket a reviewer can approve: what it was
// made from, scope, the rollout (each node's procedure a fenced shell block), blockers, images,
// denials, drift and the rollback values.
//
// Everything the ticket quotes from the cluster, the values or the policies — node, pod and
// pool names, images, selectors, flags, messages, reasons — is escaped where Markdown would
// read it (md: escaped text) or is a code span (mdCode), and every fenced block is fenced
// longer than any run of backticks inside it (fenced): a value cannot close a fence, start a
// list or a heading, or carry a link, an image, an autolink or HTML into the ticket
// (TestPlanMarkdownHostileValuesMakeNoLink).
func PlanMarkdown(w io.Writer, p *plan.Plan, releaseName string) error {
	s := p.Summary
	fmt.Fprintf(w, "# Driver rollout plan\n\n")
	status := "**Can proceed.**"
	if p.BlockerCheck.Unchecked() {
		status = "**Can proceed as far as it could see** (drain blockers not checked)."
	}
	if !p.Proceed {
		status = "**Cannot proceed as is:** " + md(strings.Join(p.Reasons, "; ")) + "."
	}
	fmt.Fprintf(w, "%s\n\n", status)
	printInputsMarkdown(w, p)

	fmt.Fprintf(w, "\n## Scope\n\n%d upgrade, %d change owner, %d lose driver, %d gain driver, %d held, %d blocked; %d batch(es).\n\n",
		s.Upgrade, s.ChangeOwner, s.LoseDriver, s.GainDriver, s.Held, s.Blocked, s.Batches)
	if s.LoseDriver > 0 && p.Inputs.AllowDriverLoss {
		fmt.Fprintf(w, "Acknowledged (`--allow-driver-loss`): the %d node(s) that lose their driver do not stop the plan.\n\n", s.LoseDriver)
	}
	fmt.Fprintln(w, "| RBLNDriver | action | version | selector |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, d := range p.Drivers {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", mdCell(d.Name), mdCell(d.Action), mdCell(arrow(d.OldVersion, d.NewVersion)), mdCodeCell(selectorChange(d)))
	}
	fmt.Fprintln(w, "\n| node | action | owner | pool | image |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, n := range p.Nodes {
		if n.Action == plan.NodeNone {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", mdCell(n.Name), mdCell(n.Action), mdCell(arrow(n.OldOwner, n.NewOwner)), mdCell(dash(n.Pool)), mdCodeCell(arrow(n.OldImage, n.NewImage)))
	}

	fmt.Fprintln(w, "\n## Rollout")
	r := p.Rollout
	switch {
	case len(p.Batches) > 0:
		fmt.Fprintf(w, "\nThe operator upgrades the nodes itself (autoUpgrade), %s at a time:\n\n", maxParallel(r.MaxParallelUpgrades))
		for i, b := range p.Batches {
			names := make([]string, len(b))
			for j, n := range b {
				names[j] = mdCode(n)
			}
			fmt.Fprintf(w, "%d. %s\n", i+1, strings.Join(names, ", "))
		}
		fmt.Fprintf(w, "\n%s\n", md(estimateBasis(p)))
		printMermaidGantt(w, p)
	case len(p.Manual) > 0:
		fmt.Fprintln(w, "\nautoUpgrade is false (OnDelete DaemonSets): nothing restarts until each node's driver pod is deleted. Node by node:")
		for i, m := range p.Manual {
			fmt.Fprintf(w, "\n- [ ] %d. %s\n\n", i+1, mdCode(m.Node))
			fenced(w, "sh", m.Steps, "  ")
		}
	default:
		fmt.Fprintln(w, "\nNo driver pod restarts.")
	}

	fmt.Fprintln(w, "\n## Blockers")
	fmt.Fprintln(w)
	found := false
	for _, n := range p.Nodes {
		for _, b := range n.Blockers {
			found = true
			mark := "blocks"
			if !b.Blocks {
				mark = "warning"
			}
			fmt.Fprintf(w, "- [ ] %s %s %s (%s): %s\n", mdCode(n.Name), mdCode(b.Pod), md(b.Kind), mark, md(b.Detail))
		}
	}
	switch {
	case p.BlockerCheck.Unchecked():
		fmt.Fprintf(w, "**Not checked:** %s.\n", md(p.BlockerCheck.Missed()))
	case !found:
		fmt.Fprintln(w, "None found.")
	}

	fmt.Fprintln(w, "\n## Images")
	fmt.Fprintf(w, "\n%s\n", md(sentence(p.ImageCheck.String())))
	if c := p.ImageCheck.Caveat(); c != "" {
		fmt.Fprintf(w, "\n**Warning:** %s.\n", md(c))
	}
	if len(p.MissingImages)+len(p.ImageWarnings) > 0 {
		fmt.Fprintln(w)
	}
	for _, m := range p.MissingImages {
		fmt.Fprintf(w, "- [ ] missing: %s (pool %s)\n", mdCode(m.Image), mdCode(m.Pool))
	}
	for _, g := range byImage(p.ImageWarnings) {
		pools := make([]string, len(g.pools))
		for i, pl := range g.pools {
			pools[i] = mdCode(pl)
		}
		fmt.Fprintf(w, "- [ ] not verified (%s): %s (pools %s): %s\n", md(g.reason), mdCode(g.image), strings.Join(pools, ", "), md(g.why))
	}

	if len(p.Denials) > 0 {
		fmt.Fprintln(w, "\n## Denied (not applied)")
		fmt.Fprintln(w)
		for _, d := range p.Denials {
			fmt.Fprintf(w, "- %s %s: %s\n", md(d.Kind), mdCode(d.Name), md(strings.Join(d.Findings, "; ")))
		}
	}
	if len(p.Drift) > 0 {
		fmt.Fprintln(w, "\n## Drift now")
		fmt.Fprintln(w)
		for _, d := range p.Drift {
			fmt.Fprintf(w, "- %s %s: %s\n", mdCode(d.Node), md(d.Kind), md(d.Detail))
		}
	}
	printRollbackMarkdown(w, p, releaseName)
	return nil
}

// printInputsMarkdown records what the plan was made from: the values and flags as given,
// the release, where each part of the cluster was read from (and how many objects), the
// driverguard that made it and when.
func printInputsMarkdown(w io.Writer, p *plan.Plan) {
	in := p.Inputs
	fmt.Fprintln(w, "## Inputs")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| input | as given |")
	fmt.Fprintln(w, "|---|---|")
	values := "none"
	switch {
	case len(in.ValuesFiles) > 0:
		values = mdCodeList(in.ValuesFiles, "-f ")
	case len(in.Set) == 0:
		values = "none: no change planned (the drift now)"
	}
	fmt.Fprintf(w, "| values | %s |\n", values)
	if len(in.Set) > 0 {
		fmt.Fprintf(w, "| set | %s |\n", mdCodeList(in.Set, ""))
	}
	if in.Release != "" {
		fmt.Fprintf(w, "| release | %s (`--release`: its values are the RBLNDrivers now) |\n", mdCodeCell(in.Release))
	} else {
		fmt.Fprintf(w, "| release | %s (the objects' release label) |\n", mdCodeCell(in.ReleaseName))
	}
	for _, part := range []struct {
		name      string
		src       cluster.Source
		one, many string
	}{
		{"nodes", in.Cluster.Nodes, "node", "nodes"},
		{"RBLNDrivers", in.Cluster.Drivers, "RBLNDriver", "RBLNDrivers"},
		{"RBLNClusterPolicy", in.Cluster.ClusterPolicy, "RBLNClusterPolicy", "RBLNClusterPolicies"},
		{"pods", in.Cluster.Workloads, "pod", "pods"},
	} {
		desc := "not given"
		if part.src.Given {
			desc = part.src.Describe(part.one, part.many)
		}
		fmt.Fprintf(w, "| %s | %s |\n", part.name, mdCell(desc))
	}
	fmt.Fprintf(w, "| policies | %s |\n", policiesCell(p))
	if in.AllowDriverLoss {
		fmt.Fprintln(w, "| driver loss | acknowledged (`--allow-driver-loss`): a node that loses its driver does not stop the plan |")
	} else {
		fmt.Fprintln(w, "| driver loss | not acknowledged: a node that would lose its driver stops the plan |")
	}
	fmt.Fprintf(w, "| driverguard | %s |\n", mdCell(in.Version))
	fmt.Fprintf(w, "| made | %s |\n", mdCell(in.Time))
	for _, wn := range p.InputWarnings {
		fmt.Fprintf(w, "\n**Warning:** %s\n", md(wn))
	}
	if p.Basis == release.BasisOwnerLabels {
		fmt.Fprintf(w, "\nThe current RBLNDrivers were not given: a node's driver now is the one its %s label names, so upgrades are not known.\n", mdCode(operator.LabelOwner))
	}
}

// policiesCell says which policies judged the plan: the bundled library, the --policy
// directories, and the flags that turn policies off, change their enforcement or let an
// object through when its policies fail.
func policiesCell(p *plan.Plan) string {
	in := p.Inputs
	parts := []string{"the bundled library"}
	if len(in.PolicyDirs) > 0 {
		parts[0] += ", " + mdCodeList(in.PolicyDirs, "--policy ")
	}
	if len(in.Disable) > 0 {
		parts = append(parts, mdCodeList(in.Disable, "--disable "))
	}
	if len(in.Enforcement) > 0 {
		var modes []string
		for _, name := range slices.Sorted(maps.Keys(in.Enforcement)) {
			modes = append(modes, name+"="+in.Enforcement[name])
		}
		parts = append(parts, mdCodeList(modes, "--enforcement "))
	}
	if in.PolicyFailOpen {
		parts = append(parts, "`--policy-fail-open`")
	}
	return strings.Join(parts, "; ")
}

// printRollbackMarkdown writes the values that give the current RBLNDrivers back, or why
// there are none.
func printRollbackMarkdown(w io.Writer, p *plan.Plan, releaseName string) {
	fmt.Fprintln(w, "\n## Rollback")
	fmt.Fprintf(w, "\n%s restores the previous revision of the release (%s shows its values).\n",
		mdCode("helm rollback "+releaseName), mdCode("helm get values "+releaseName+" --revision N"))
	rb := p.Rollback
	if rb == nil {
		fmt.Fprintln(w, "\nNo values were given: nothing changes.")
		return
	}
	if rb.Empty() {
		fmt.Fprintln(w, "\nNothing changes: no values are needed to undo it.")
		return
	}
	var what []string
	if len(rb.Restores) > 0 {
		what = append(what, "sets back "+mdCodeList(rb.Restores, ""))
	}
	if rb.ClusterPolicy {
		what = append(what, "sets back the upgrade policy")
	}
	if len(rb.Removes) > 0 {
		what = append(what, "removes "+mdCodeList(rb.Removes, "")+" (created by this change)")
	}
	if len(what) > 0 {
		fmt.Fprintf(w, "\nOr keep the new values and undo the change with these: this %s.\n", strings.Join(what, "; "))
	}
	if len(rb.DeleteFromValues) > 0 {
		fmt.Fprintf(w, "\n1. Delete %s from the new values: a later values file cannot remove an instance (`null` there is an error).\n",
			mdCodeList(rb.DeleteFromValues, ""))
	}
	if rb.YAML != "" {
		step := "1."
		if len(rb.DeleteFromValues) > 0 {
			step = "2."
		}
		fmt.Fprintf(w, "\n%s Save these values as `rollback.yaml` and give them after the new values (%s):\n\n",
			step, mdCode("helm upgrade "+releaseName+" <chart> -f <new values> -f rollback.yaml"))
		fenced(w, "yaml", strings.Split(strings.TrimSuffix(rb.YAML, "\n"), "\n"), "")
	}
	switch {
	case rb.Verified:
		fmt.Fprintln(w, "\nVerified: the new values with this rollback render exactly the RBLNDrivers (and the upgrade policy) of now.")
	default:
		fmt.Fprintln(w, "\n**Not a complete rollback:**")
		fmt.Fprintln(w)
		for _, pr := range rb.Problems {
			fmt.Fprintf(w, "- %s\n", md(pr))
		}
	}
}

// maxParallel says maxParallelUpgrades in words.
func maxParallel(n int32) string {
	if n <= 0 {
		return "all nodes"
	}
	return plural(int(n), "node")
}

// fenced writes lines as a fenced code block of lang, each prefixed by indent, fenced with
// more backticks than any run inside them (MarkdownFence): nothing in them can close the
// fence. A control character in a line (a newline in a name) is shown escaped: each line stays
// one line.
func fenced(w io.Writer, lang string, lines []string, indent string) {
	f := MarkdownFence(lines)
	fmt.Fprintf(w, "%s%s%s\n", indent, f, lang)
	for _, l := range lines {
		fmt.Fprintf(w, "%s%s\n", indent, escapeControl(l, true))
	}
	fmt.Fprintf(w, "%s%s\n", indent, f)
}

// The ticket's escapes are output's, shared with every Markdown writer: md and mdCell are
// MarkdownText (escaped text: no emphasis, link, autolink, image or HTML; no line or
// cell break), mdCode MarkdownCode (a code span fenced longer than any run of
// backticks in the value), mdCodeCell MarkdownCodeCell (a code span in a table cell).
func md(s string) string         { return MarkdownText(s) }
func mdCell(s string) string     { return MarkdownText(s) }
func mdCode(s string) string     { return MarkdownCode(s) }
func mdCodeCell(s string) string { return MarkdownCodeCell(s) }

// mdCodeList is items as code spans, each prefixed, joined by commas (for a table cell).
func mdCodeList(items []string, prefix string) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = mdCodeCell(prefix + it)
	}
	return strings.Join(out, ", ")
}

// escapeControl shows control characters and other non-printable runes escaped (Escape;
// tabs are kept when keepTabs): a name cannot break a line of the ticket.
func escapeControl(s string, keepTabs bool) string {
	if keepTabs {
		return EscapeKeeping(s, "\t")
	}
	return Escape(s)
}

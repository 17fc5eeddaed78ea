package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
)

func newPlanCommand(s Streams) *cobra.Command {
	job := action.NewPlan(s.cfg)
	formats := output.NewFlag(output.Table, append(judgingFormats[:len(judgingFormats):len(judgingFormats)], output.HTML)...)
	cmd := &cobra.Command{
		Use:   "plan [-f values.yaml] (--live | --kubeconfig FILE | --nodes nodes.yaml [--drivers current.yaml] [--cluster-policy policy.yaml] [--pods pods.yaml]) [--check-images]",
		Short: "What applying the values does to every node: actions, rollout batches, drain blockers, missing images",
		Long: `plan is the terraform-plan of a driver rollout (SPEC §8). It judges the values like 'check' (the
webhook's decision, in Helm's order) against the cluster now, and reports:

  - per RBLNDriver: create, update, delete or unchanged, the version old -> new, a selector change;
  - per node: owner, pool and image old -> new and the action: none, upgrade (the driver pod
    restarts with a new image), change-owner, lose-driver, gain-driver, held (it carries
    rebellions.ai/npu-driver-upgrade.skip=true and keeps its driver) or blocked;
  - the rollout: with autoUpgrade, batches of maxParallelUpgrades nodes (0: all at once) ordered
    by owner, pool and node; without, the manual procedure per node (cordon, drain, the exact
    driver pod to delete, uncordon);
  - drain blockers, with --pods or live: PodDisruptionBudgets that would refuse an eviction (as
    the disruption controller computes them), single-replica workloads without one, pods
    without a controller, emptyDir pods, NPU pods (without the pods: "drain blockers not
    checked", a warning, and "blockerCheck" in JSON);
  - --check-images: every image a pool needs that its registry lacks (only a 404 counts);
  - the drift now: unowned candidate nodes, ties, missing family labels, stale owner labels;
  - what it was judged against (JUDGED AGAINST): each part of the cluster read, or not given.

The cluster is read from files (--nodes, --drivers, --cluster-policy, and --pods: a stream of
Pods, PodDisruptionBudgets, ReplicaSets, Deployments and StatefulSets, e.g. 'kubectl get
pods,pdb,rs,deploy,sts -A -o json') or, with --live or --kubeconfig, from the cluster (list only,
nothing is written). The nodes are required (--nodes, --live or --kubeconfig): a plan over no
nodes has nothing to say. Without -f it plans "no change" and reports the drift: an audit.

With --release NAME the RBLNDrivers and RBLNClusterPolicy now are the deployed release's: its
values (as 'helm get values' shows them), read from its latest revision in Helm's storage in the
release's namespace (HELM_DRIVER secret, the default, or configmap), decompressed through
--max-release-size, rendered with this driverguard's chart; -f/--set are the new values, as for 'helm upgrade'
(not --reuse-values). This answers for nodes the question 'helm diff upgrade' answers for
manifests. With --live the cluster's own RBLNDrivers are read instead (drift included).

-o json is the contract of SPEC §8 plus what the plan was made from ("inputs": the values files
and flags, the release, what each part of the cluster was read from, the policy flags and
--allow-driver-loss, the driverguard, the time)
and the values that undo the change ("rollback"). -o markdown is a change ticket: the same
inputs, the tables, each node's procedure as a shell block, the blockers and images as
checklists, and the rollback values, proven by rendering them after the new values.

Exit codes: 0 the plan can proceed; 1 it cannot as is (a denial the webhook would make, a node
that would lose its driver unacknowledged, a blocked node, a missing image, invalid values);
2 it could not plan (no nodes given, unreadable input, a policy that does not compile, an
unreachable cluster).`,
		Example: `  driverguard plan -f examples/multi-driver.yaml --nodes examples/nodes.yaml
  driverguard plan -f values.yaml --live -o markdown > change-ticket.md
  driverguard plan --live                          # no change: the drift of the cluster now
  driverguard plan --release driverguard -n npu -f new-values.yaml --nodes nodes.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			job.ExplicitReleaseName = cmd.Flags().Changed("release-name")
			job.OnRelease = func(d *action.DeployedRelease, live bool) { printReleaseNotice(s.Err, d, live) }
			job.Now, job.Version = s.Now, s.version()
			res, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			printWarnings(s.Err, res.RenderWarnings)
			r := &output.Report{Tool: "driverguard plan", Findings: res.Plan.Findings, Document: res.Plan, Rules: action.NewRuleRegistry(),
				Table:    func(w io.Writer) error { return printPlan(w, res.Plan) },
				Markdown: func(w io.Writer) error { return printPlanMarkdown(w, res.Plan, res.ReleaseName) },
				HTML:     func(w io.Writer) error { return printPlanHTML(w, res.Plan, res.ReleaseName) }}
			if err := output.Write(s.Out, formats.Targets(), r); err != nil {
				return err
			}
			return failedUnless(res.Plan.Proceed)
		},
	}
	addJudgeFlags(cmd.Flags(), &job.Judge)
	f := cmd.Flags()
	f.StringVar(&job.Cluster.Workloads, "pods", "", "Pods, PodDisruptionBudgets, ReplicaSets, Deployments and StatefulSets in one stream ('kubectl get pods,pdb,rs,deploy,sts -A -o json'; YAML too, slower on large clusters): drain blockers and the driver pods to delete")
	addLiveFlags(f, &job.Live, "Nodes, RBLNDrivers, the RBLNClusterPolicy, Pods, PodDisruptionBudgets, ReplicaSets, Deployments, StatefulSets")
	f.StringVar(&job.Release, "release", "", "plan from a deployed Helm release: its values (as 'helm get values' shows them) rendered are the RBLNDrivers and RBLNClusterPolicy now, and -f/--set the new values, as for 'helm upgrade' (without them: no change)")
	job.MaxReleaseBytes = action.DefaultMaxReleaseBytes
	f.Var((*sizeValue)(&job.MaxReleaseBytes), action.FlagMaxReleaseSize, "the largest --release revision read, decompressed (Helm stores it gzipped), in bytes or as a quantity (64Mi)")
	f.StringVarP(&job.Target.Namespace, "namespace", "n", "", "namespace of the --release (default: the kubeconfig context's; as a Helm plugin, Helm's -n)")
	addImageFlags(f, &job.RegistryCheck, true, "HEAD every image the plan needs in its registry (only a 404 counts as missing)", "timeout of one registry request")
	registerOutput(f, formats)
	return cmd
}

// printReleaseNotice says which release plan --release read, and warns when its latest
// revision is not deployed. The release's name, namespace and status are escaped
// (output.Escape): they come from the flags and the cluster's storage.
func printReleaseNotice(w io.Writer, d *action.DeployedRelease, live bool) {
	name, ns, status := output.Escape(d.Name), output.Escape(d.Namespace), output.Escape(d.Status)
	fmt.Fprintf(w, "Planning from release %s in namespace %s (revision %d, %s): its values are the cluster's RBLNDrivers now%s.\n",
		name, ns, d.Revision, status, map[bool]string{true: " (with --live, the cluster's own RBLNDrivers are)", false: ""}[live])
	if !d.Deployed() {
		fmt.Fprintf(w, "Warning: revision %d of release %s is %s, not deployed: its values may not be what the cluster runs (`helm history %s -n %s`).\n", d.Revision, name, status, name, ns)
	}
}

// printPlan is plan's table and text. Every value from the input — names, versions,
// selectors, owners, pools, images, reasons, the denials' messages, drift, warnings, blockers,
// the rollout's nodes and steps — is escaped (output.Escape), so that a line break or a tab in
// one cannot start a line or a column; a cell made of values and the writer's own text
// ("old -> new", "-") is escaped whole, which escapes only what the values hold.
func printPlan(w io.Writer, p *action.PlanReport) error {
	esc := output.Escape
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
func planInputLines(p *action.PlanReport) []string {
	in := p.Inputs.Cluster
	lines := inputLines(in, p.Basis)
	if !in.Workloads.Given {
		lines = append(lines, "pods: not given (drain blockers not checked)")
	}
	return lines
}

// printPlanImages says what the registry check covered, then the images missing and those
// no registry answered for, each value escaped.
func printPlanImages(w io.Writer, p *action.PlanReport) {
	esc := output.Escape
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
func byImage(warnings []action.MissingImage) []imageGroup {
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

// sentence starts s with a capital and ends it with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

func printRollout(w io.Writer, p *action.PlanReport, heading, indent string) {
	r := p.Rollout
	switch {
	case len(p.Batches) > 0:
		fmt.Fprintf(w, "\n%sRollout (autoUpgrade, maxParallelUpgrades %d):\n", heading, r.MaxParallelUpgrades)
		for i, b := range p.Batches {
			fmt.Fprintf(w, "%s  %d. %s\n", indent, i+1, output.Escape(strings.Join(b, ", ")))
		}
	case len(p.Manual) > 0:
		fmt.Fprintf(w, "\n%sManual rollout (autoUpgrade false: OnDelete DaemonSets), node by node:\n", heading)
		for _, m := range p.Manual {
			fmt.Fprintf(w, "%s  %s:\n", indent, output.Escape(m.Node))
			for _, st := range m.Steps {
				fmt.Fprintf(w, "%s    %s\n", indent, output.Escape(st))
			}
		}
	}
}

func printBlockers(w io.Writer, p *action.PlanReport, indent string) {
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
			esc := output.Escape
			fmt.Fprintf(w, "%s%s %s %s (%s): %s\n", indent, esc(n.Name), esc(string(b.Kind)), esc(b.Pod), verdict, esc(b.Detail))
		}
	}
}

// selectorChange is a driver's nodeSelector, old -> new when an update changes it.
func selectorChange(d action.DriverPlan) string {
	switch {
	case d.Action == action.DriverDelete:
		return d.OldSelector
	case d.Action == action.DriverUpdate && d.SelectorChange:
		return arrow(d.OldSelector, d.NewSelector)
	}
	return d.NewSelector
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

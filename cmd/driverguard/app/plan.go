package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	helmrelease "helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
)

type planOptions struct {
	judgeFlags
	rel        releaseFlags
	podsFile   string
	kubeconfig string
	live       bool
	images     imageCheckFlags
	output     outputFlag
}

func newPlanCommand(s Streams) *cobra.Command {
	o := &planOptions{output: newOutput(formatTable, formatTable, formatJSON, formatMarkdown)}
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
    without a controller, emptyDir pods, NPU pods;
  - --check-images: every image a pool needs that its registry lacks (only a 404 counts);
  - the drift now: unowned candidate nodes, ties, missing family labels, stale owner labels.

The cluster is read from files (--nodes, --drivers, --cluster-policy, and --pods: a stream of
Pods, PodDisruptionBudgets, ReplicaSets, Deployments and StatefulSets, e.g. 'kubectl get
pods,pdb,rs,deploy,sts -A -o json') or, with --live or --kubeconfig, from the cluster (list only,
nothing is written). Without -f it plans "no change" and reports the drift: an audit.

With --release NAME the RBLNDrivers and RBLNClusterPolicy now are the deployed release's: its
values, read through Helm's SDK from the release's namespace (as 'helm get values' shows them),
rendered with this driverguard's chart; -f/--set are the new values, as for 'helm upgrade'
(not --reuse-values). This answers for nodes the question 'helm diff upgrade' answers for
manifests. With --live the cluster's own RBLNDrivers are read instead (drift included).

Exit codes: 0 the plan can proceed; 1 it cannot as is (a denial the webhook would make, a node
that would lose its driver unacknowledged, a blocked node, a missing image, invalid values);
2 it could not plan (unreadable input, a policy that does not compile, an unreachable cluster).`,
		Example: `  driverguard plan -f examples/multi-driver.yaml --nodes examples/nodes.yaml
  driverguard plan -f values.yaml --live -o markdown > change-ticket.md
  driverguard plan --live                          # no change: the drift of the cluster now
  driverguard plan --release driverguard -n npu -f new-values.yaml --nodes nodes.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if o.kubeconfig != "" {
				o.live = true
			}
			if o.live && (o.cluster.nodesFile != "" || o.cluster.driversFile != "" || o.cluster.clusterPolicyFile != "" || o.podsFile != "") {
				return usageError(errors.New("--live/--kubeconfig reads the cluster; --nodes, --drivers, --cluster-policy and --pods read files: use one or the other"))
			}
			if err := oneStdin(append(o.valuesFlags.stdinUsers(), append(o.cluster.stdinUsers(), stdinUser{"--pods", o.podsFile})...)...); err != nil {
				return err
			}
			var deployed *render.Result
			if o.rel.name != "" {
				if o.cluster.driversFile != "" || o.cluster.clusterPolicyFile != "" {
					return usageError(errors.New("--release reads the release's RBLNDrivers and RBLNClusterPolicy from its values; --drivers and --cluster-policy give them by hand: use one or the other"))
				}
				if cmd.Flags().Changed("release-name") && o.releaseName != o.rel.name {
					return usageError(fmt.Errorf("--release-name %q and --release %q differ: the release's name is the one its objects carry", o.releaseName, o.rel.name))
				}
				o.releaseName = o.rel.name
				d, err := o.rel.readRelease(ctx, o.target())
				if err != nil {
					return err
				}
				if deployed, err = renderDeployed(ctx, d); err != nil {
					return err
				}
				fmt.Fprintf(s.Err, "Planning from release %s in namespace %s (revision %d, %s): its values are the cluster's RBLNDrivers now%s.\n",
					d.Name, d.Namespace, d.Revision, d.Status, map[bool]string{true: " (with --live, the cluster's own RBLNDrivers are)", false: ""}[o.live])
				if d.Status != helmrelease.StatusDeployed {
					fmt.Fprintf(s.Err, "Warning: revision %d of release %s is %s, not deployed: its values may not be what the cluster runs (`helm history %s -n %s`).\n", d.Revision, d.Name, d.Status, d.Name, d.Namespace)
				}
			}
			var objs *release.Objects
			var rendered *render.Result
			if o.changes() {
				r, err := o.render(ctx, s)
				if err != nil {
					return err
				}
				rendered = r
				ro := release.FromRender(r, o.releaseName)
				objs = &ro
			}
			cl, wl, err := o.readCluster(ctx, s)
			if err != nil {
				return err
			}
			if deployed != nil && !o.live {
				cl.Drivers, cl.ClusterPolicy = deployed.Drivers, &deployed.ClusterPolicy
			}
			engine, err := o.policy.engine(ctx, s)
			if err != nil {
				return err
			}
			in := plan.Inputs{Objects: objs, Cluster: cl, Workloads: wl, AllowDriverLoss: o.allowDriverLoss,
				Apply: release.Options{Decider: &decision.Decider{Policy: engine, PolicyFailOpen: o.failOpen}, Data: engine}}
			if o.images.enabled {
				in.CheckImages = func(ctx context.Context, images []string) map[string]registry.ImageResult {
					return registry.NewChecker(registry.Options{Timeout: o.images.timeout}).Check(ctx, images)
				}
			}
			p, err := plan.Make(ctx, in)
			if err != nil {
				var u *decision.UnavailableError
				if errors.As(err, &u) {
					return usageError(err)
				}
				return usageError(fmt.Errorf("planning: %w", err))
			}
			if rendered != nil {
				for _, w := range rendered.Warnings {
					fmt.Fprintln(s.Err, "Warning:", w)
				}
			}
			switch o.output.format {
			case formatJSON:
				err = writeJSON(s.Out, p)
			case formatMarkdown:
				err = printPlanMarkdown(s.Out, p, o.releaseName)
			default:
				err = printPlan(s.Out, p)
			}
			if err != nil {
				return err
			}
			if !p.Proceed {
				return invalidError(errSilent)
			}
			return nil
		},
	}
	o.judgeFlags.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.podsFile, "pods", "", "Pods, PodDisruptionBudgets, ReplicaSets, Deployments and StatefulSets in one stream ('kubectl get pods,pdb,rs,deploy,sts -A -o json'; YAML too, slower on large clusters): drain blockers and the driver pods to delete")
	f.BoolVar(&o.live, "live", false, "read the cluster (in-cluster config or KUBECONFIG): Nodes, RBLNDrivers, the RBLNClusterPolicy, Pods, PodDisruptionBudgets, ReplicaSets, Deployments, StatefulSets (list only)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to read (implies --live)")
	f.StringVar(&o.rel.name, "release", "", "plan from a deployed Helm release: its values (read through Helm's SDK, as 'helm get values') rendered are the RBLNDrivers and RBLNClusterPolicy now, and -f/--set the new values, as for 'helm upgrade' (without them: no change)")
	f.StringVarP(&o.rel.namespace, "namespace", "n", "", "namespace of the --release (default: the kubeconfig context's; as a Helm plugin, Helm's -n)")
	f.StringVar(&o.rel.context, "kube-context", "", "kubeconfig context to read (default: the current context; as a Helm plugin, Helm's --kube-context)")
	f.BoolVar(&o.images.enabled, "check-images", false, "HEAD every image the plan needs in its registry (only a 404 counts as missing)")
	f.DurationVar(&o.images.timeout, "image-timeout", 10*time.Second, "timeout of one registry request")
	o.output.register(f)
	return cmd
}

// target is the cluster plan reads (--kubeconfig, --kube-context, -n; Helm's plugin
// environment as their defaults when run as `helm driverguard`).
func (o *planOptions) target() kubeTarget {
	return kubeTarget{kubeconfig: o.kubeconfig, context: o.rel.context, namespace: o.rel.namespace}.withHelmPluginEnv(os.Getenv)
}

// changes reports whether values were given; without them the plan is "no change".
func (o *planOptions) changes() bool {
	v := o.values
	return len(v.ValueFiles)+len(v.Values)+len(v.StringValues)+len(v.JSONValues)+len(v.FileValues) > 0
}

func (o *planOptions) readCluster(ctx context.Context, s Streams) (release.Cluster, *plan.Workloads, error) {
	if o.live {
		return readLive(ctx, o.target())
	}
	cl, err := o.cluster.read(ctx, s)
	if err != nil {
		return cl, nil, err
	}
	if o.podsFile == "" {
		return cl, nil, nil
	}
	wl, err := readWorkloads(ctx, o.podsFile, s)
	if err != nil {
		return cl, nil, err
	}
	return cl, wl, nil
}

// readLive lists what a plan reads from the cluster, nothing else: it needs list on nodes,
// rblndrivers, rblnclusterpolicies, pods, poddisruptionbudgets, replicasets, deployments and
// statefulsets.
func readLive(ctx context.Context, target kubeTarget) (release.Cluster, *plan.Workloads, error) {
	var cl release.Cluster
	cfg, err := target.clientConfig().ClientConfig()
	if err != nil {
		return cl, nil, usageError(fmt.Errorf("no cluster to read (in-cluster config, --kubeconfig or KUBECONFIG): %w", err))
	}
	cfg.UserAgent = "driverguard-plan"
	cfg.QPS, cfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return cl, nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return cl, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return cl, nil, usageError(fmt.Errorf("connecting to the cluster: %w", err))
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var (
		nodes    corev1.NodeList
		drivers  v1alpha1.RBLNDriverList
		policies v1alpha1.RBLNClusterPolicyList
		pods     corev1.PodList
		pdbs     policyv1.PodDisruptionBudgetList
		rss      appsv1.ReplicaSetList
		deploys  appsv1.DeploymentList
		stss     appsv1.StatefulSetList
	)
	for _, l := range []client.ObjectList{&nodes, &drivers, &policies, &pods, &pdbs, &rss, &deploys, &stss} {
		if err := c.List(ctx, l); err != nil {
			if meta.IsNoMatchError(err) {
				continue // the CRDs are not installed: no drivers, no cluster policy
			}
			return cl, nil, usageError(fmt.Errorf("listing %T: %w", l, err))
		}
	}
	cl.Nodes = routing.NodesFromCore(nodes.Items)
	cl.Drivers = drivers.Items
	for i := range policies.Items {
		if policies.Items[i].Name == v1alpha1.ClusterPolicyName {
			cl.ClusterPolicy = &policies.Items[i]
		}
	}
	return cl, &plan.Workloads{Pods: pods.Items, PDBs: pdbs.Items, ReplicaSets: rss.Items, Deployments: deploys.Items, StatefulSets: stss.Items}, nil
}

func printPlan(w io.Writer, p *plan.Plan) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "RBLNDRIVER\tACTION\tVERSION\tSELECTOR")
	for _, d := range p.Drivers {
		sel := selectorChange(d)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Name, d.Action, arrow(d.OldVersion, d.NewVersion), sel)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NODE\tACTION\tOWNER\tPOOL\tIMAGE\tREASON")
	for _, n := range p.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Action, arrow(n.OldOwner, n.NewOwner), dash(n.Pool), imageChange(n.OldImage, n.NewImage), dash(n.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printRollout(w, p, "", "")
	printBlockers(w, p, "  ")
	if len(p.MissingImages) > 0 {
		fmt.Fprintln(w, "\nMissing images:")
		for _, m := range p.MissingImages {
			fmt.Fprintf(w, "  %s: %s\n", m.Pool, m.Image)
		}
	}
	for _, m := range p.ImageWarnings {
		fmt.Fprintf(w, "\nWarning: image %s (%s) could not be checked: %s\n", m.Image, m.Pool, m.Detail)
	}
	if len(p.Denials) > 0 {
		fmt.Fprintln(w, "\nDenied (not applied):")
		for _, d := range p.Denials {
			fmt.Fprintf(w, "  %s %s: %s\n", d.Kind, d.Name, strings.Join(d.Findings, "; "))
		}
	}
	if len(p.Drift) > 0 {
		fmt.Fprintln(w, "\nDrift now:")
		for _, d := range p.Drift {
			fmt.Fprintf(w, "  %s %s: %s\n", d.Node, d.Kind, d.Detail)
		}
	}
	s := p.Summary
	fmt.Fprintf(w, "\nSummary: %d upgrade, %d change owner, %d lose driver, %d gain driver, %d held, %d blocked; %d batch(es)\n",
		s.Upgrade, s.ChangeOwner, s.LoseDriver, s.GainDriver, s.Held, s.Blocked, s.Batches)
	if p.Proceed {
		fmt.Fprintln(w, "The plan can proceed.")
	} else {
		fmt.Fprintln(w, "The plan cannot proceed as is: "+strings.Join(p.Reasons, "; ")+".")
	}
	return nil
}

func printRollout(w io.Writer, p *plan.Plan, heading, indent string) {
	r := p.Rollout
	switch {
	case len(p.Batches) > 0:
		fmt.Fprintf(w, "\n%sRollout (autoUpgrade, maxParallelUpgrades %d):\n", heading, r.MaxParallelUpgrades)
		for i, b := range p.Batches {
			fmt.Fprintf(w, "%s  %d. %s\n", indent, i+1, strings.Join(b, ", "))
		}
	case len(p.Manual) > 0:
		fmt.Fprintf(w, "\n%sManual rollout (autoUpgrade false: OnDelete DaemonSets), node by node:\n", heading)
		for _, m := range p.Manual {
			fmt.Fprintf(w, "%s  %s:\n", indent, m.Node)
			for _, st := range m.Steps {
				fmt.Fprintf(w, "%s    %s\n", indent, st)
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
			fmt.Fprintf(w, "%s%s %s %s (%s): %s\n", indent, n.Name, b.Kind, b.Pod, verdict, b.Detail)
		}
	}
}

// printPlanMarkdown writes the plan as a change ticket a reviewer can approve: scope, batches,
// blockers, missing images and the rollback.
func printPlanMarkdown(w io.Writer, p *plan.Plan, releaseName string) error {
	s := p.Summary
	fmt.Fprintf(w, "# Driver rollout plan\n\n")
	status := "**Can proceed.**"
	if !p.Proceed {
		status = "**Cannot proceed as is:** " + strings.Join(p.Reasons, "; ") + "."
	}
	fmt.Fprintf(w, "%s\n\n", status)
	fmt.Fprintf(w, "## Scope\n\n%d upgrade, %d change owner, %d lose driver, %d gain driver, %d held, %d blocked; %d batch(es).\n\n",
		s.Upgrade, s.ChangeOwner, s.LoseDriver, s.GainDriver, s.Held, s.Blocked, s.Batches)
	fmt.Fprintln(w, "| RBLNDriver | action | version | selector |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, d := range p.Drivers {
		sel := selectorChange(d)
		fmt.Fprintf(w, "| %s | %s | %s | `%s` |\n", d.Name, d.Action, arrow(d.OldVersion, d.NewVersion), sel)
	}
	fmt.Fprintln(w, "\n| node | action | owner | pool | image |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, n := range p.Nodes {
		if n.Action == plan.NodeNone {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | `%s` |\n", n.Name, n.Action, arrow(n.OldOwner, n.NewOwner), dash(n.Pool), arrow(n.OldImage, n.NewImage))
	}
	fmt.Fprintln(w, "\n## Rollout")
	if len(p.Batches) == 0 && len(p.Manual) == 0 {
		fmt.Fprintln(w, "\nNo driver pod restarts.")
	}
	printRollout(w, p, "", "")
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
			fmt.Fprintf(w, "- [ ] %s `%s` %s (%s): %s\n", n.Name, b.Pod, b.Kind, mark, b.Detail)
		}
	}
	if !found {
		fmt.Fprintln(w, "None found.")
	}
	fmt.Fprintln(w, "\n## Images")
	switch {
	case len(p.MissingImages) > 0:
		fmt.Fprintln(w)
		for _, m := range p.MissingImages {
			fmt.Fprintf(w, "- [ ] missing: `%s` (pool %s)\n", m.Image, m.Pool)
		}
	default:
		fmt.Fprintln(w, "\nNo missing image found (with --check-images; without it, images were not checked).")
	}
	if len(p.Drift) > 0 {
		fmt.Fprintln(w, "\n## Drift now")
		fmt.Fprintln(w)
		for _, d := range p.Drift {
			fmt.Fprintf(w, "- %s %s: %s\n", d.Node, d.Kind, d.Detail)
		}
	}
	fmt.Fprintln(w, "\n## Rollback")
	fmt.Fprintf(w, "\n`helm rollback %s` restores the previous revision (`helm get values %s --revision N` shows its values). What this change replaces, as values:\n\n", releaseName, releaseName)
	fmt.Fprint(w, rollbackValues(p.Drivers))
	return nil
}

// rollbackValues is the version and nodeSelector each changed RBLNDriver has now, as the
// values that restore them (rbln-driver is driver.*, rbln-driver-KEY is driver.instances.KEY).
func rollbackValues(drivers []plan.DriverPlan) string {
	var b strings.Builder
	var instances []string
	def := ""
	for _, d := range drivers {
		var block string
		switch d.Action {
		case plan.DriverUpdate, plan.DriverDelete:
			block = fmt.Sprintf("image:\n  tag: %q\n", d.OldVersion)
			if len(d.OldNodeSelector) > 0 {
				block += "nodeSelector:\n"
				for _, k := range slices.Sorted(maps.Keys(d.OldNodeSelector)) {
					block += fmt.Sprintf("  %s: %q\n", k, d.OldNodeSelector[k])
				}
			}
			if d.Action == plan.DriverDelete {
				block = "# deleted by this change; restore the entry:\n" + block
			}
		case plan.DriverCreate:
			block = "# created by this change: remove this entry\n"
		default:
			continue
		}
		if d.Name == v1alpha1.DefaultDriverName {
			def = block
			continue
		}
		key := strings.TrimPrefix(d.Name, v1alpha1.DefaultDriverName+"-")
		instances = append(instances, key+":\n"+indent(block, "  "))
	}
	if def == "" && len(instances) == 0 {
		return "Nothing changes.\n"
	}
	b.WriteString("```yaml\ndriver:\n")
	b.WriteString(indent(def, "  "))
	if len(instances) > 0 {
		b.WriteString("  instances:\n")
		for _, in := range instances {
			b.WriteString(indent(in, "    "))
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
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

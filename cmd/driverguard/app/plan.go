package app

import (
	"io"

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
		Long: `plan is the terraform-plan of a driver rollout (docs/plan.md). It judges the values like 'check' (the
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

-o json is the contract of docs/plan.md "Exit codes and JSON" plus what the plan was made from ("inputs": the values files
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
			job.OnRelease = func(d *action.DeployedRelease, live bool) { output.PlanReleaseNotice(s.Err, planRelease(d), live) }
			job.Now, job.Version = s.Now, s.version()
			res, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			printWarnings(s.Err, res.RenderWarnings)
			r := &output.Report{Tool: "driverguard plan", Findings: res.Plan.Findings, Document: res.Plan, Rules: action.NewRuleRegistry(),
				Table:    func(w io.Writer) error { return output.PlanTable(w, res.Plan) },
				Markdown: func(w io.Writer) error { return output.PlanMarkdown(w, res.Plan, res.ReleaseName) },
				HTML:     func(w io.Writer) error { return output.PlanHTML(w, res.Plan, res.ReleaseName) }}
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

// planRelease is what the notice of plan --release says of the release it read.
func planRelease(d *action.DeployedRelease) output.PlanRelease {
	return output.PlanRelease{Name: d.Name, Namespace: d.Namespace, Revision: d.Revision, Status: d.Status, Deployed: d.Deployed()}
}

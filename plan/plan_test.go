package plan_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/routing"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

const releaseName = "dg"

// owned marks a current driver as the release's, so that not rendering it deletes it.
func owned(d *v1alpha1.RBLNDriver) v1alpha1.RBLNDriver {
	d.Annotations = map[string]string{"meta.helm.sh/release-name": releaseName}
	return *d
}

func node(name, family string, extra ...string) routing.Node {
	l := wt.PoolLabels(family, "ubuntu", "22.04", "6.8.0-90-generic")
	l[operator.LabelDeployDriver] = "true"
	maps.Copy(l, wt.Sel(extra...))
	return routing.Node{Name: name, Labels: l}
}

func version(d *v1alpha1.RBLNDriver, v string) *v1alpha1.RBLNDriver {
	d.Spec.Version = v
	return d
}

func policyWith(mutate func(*v1alpha1.UpgradePolicy)) *v1alpha1.RBLNClusterPolicy {
	cp := wt.ClusterPolicy(true)
	mutate(&cp.Spec.Driver.UpgradePolicy)
	return cp
}

// scenario: every node action once.
//
//	n-none     atom, zone=z: the default, unchanged
//	n-upgrade  rebel: rbln-driver-rebel 3.2.2 -> 3.3.0
//	n-upgrade2 rebel: the same (a second node to batch)
//	n-held     rebel with the skip label: would upgrade
//	n-change   atom, env=canary: rbln-driver -> the new rbln-driver-canary
//	n-lose     ca: rbln-driver-ca is deleted, and no default selects ca... (the default has
//	           a selector here so that a node can lose its driver)
//	n-gain     cr: nothing selects it now; the new rbln-driver-cr does
func scenario(up func(*v1alpha1.UpgradePolicy)) plan.Inputs {
	def := wt.Driver("rbln-driver", wt.Sel("fleet", "npu"))
	nodes := []routing.Node{
		node("n-none", "atom", "fleet", "npu"),
		node("n-upgrade", "rebel", "fleet", "npu"),
		node("n-upgrade2", "rebel", "fleet", "npu"),
		node("n-held", "rebel", "fleet", "npu", plan.LabelUpgradeSkip, "true"),
		node("n-change", "atom", "fleet", "npu", "env", "canary"),
		node("n-lose", "ca", operator.LabelOwner, "rbln-driver-ca"),
		node("n-gain", "cr"),
	}
	current := []v1alpha1.RBLNDriver{
		owned(def.DeepCopy()),
		owned(wt.Driver("rbln-driver-rebel", wt.Sel("fleet", "npu", operator.LabelFamily, "rebel"))),
		owned(wt.Driver("rbln-driver-ca", wt.Sel(operator.LabelFamily, "ca"))),
	}
	rendered := []v1alpha1.RBLNDriver{
		*def.DeepCopy(),
		*version(wt.Driver("rbln-driver-rebel", wt.Sel("fleet", "npu", operator.LabelFamily, "rebel")), "3.3.0"),
		*wt.Driver("rbln-driver-canary", wt.Sel("fleet", "npu", "env", "canary")),
		*wt.Driver("rbln-driver-cr", wt.Sel(operator.LabelFamily, "cr")),
	}
	cp := policyWith(up)
	return plan.Inputs{
		Objects:         &release.Objects{ClusterPolicy: cp, Drivers: rendered, ReleaseName: releaseName},
		Cluster:         cluster.FromLists(nodes, current, []v1alpha1.RBLNClusterPolicy{*cp.DeepCopy()}, nil),
		AllowDriverLoss: true,
	}
}

func actions(p *plan.Plan) map[string]string {
	out := map[string]string{}
	for _, n := range p.Nodes {
		out[n.Name] = n.Action
	}
	return out
}

func TestNodeAndDriverActions(t *testing.T) {
	p, err := plan.Make(t.Context(), scenario(func(u *v1alpha1.UpgradePolicy) { u.MaxParallelUpgrades = 1 }))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"n-none": plan.NodeNone, "n-upgrade": plan.NodeUpgrade, "n-upgrade2": plan.NodeUpgrade, "n-held": plan.NodeHeld,
		"n-change": plan.NodeChangeOwner, "n-lose": plan.NodeLoseDriver, "n-gain": plan.NodeGainDriver,
	}, actions(p))
	drivers := map[string]plan.DriverPlan{}
	for _, d := range p.Drivers {
		drivers[d.Name] = d
	}
	assert.Equal(t, plan.DriverUnchanged, drivers["rbln-driver"].Action)
	assert.Equal(t, plan.DriverPlan{Name: "rbln-driver-rebel", Action: plan.DriverUpdate, OldVersion: "3.2.2", NewVersion: "3.3.0",
		OldSelector: "{fleet=npu,rebellions.ai/npu.family=rebel}", NewSelector: "{fleet=npu,rebellions.ai/npu.family=rebel}",
		OldNodeSelector: map[string]string{"fleet": "npu", operator.LabelFamily: "rebel"}}, drivers["rbln-driver-rebel"])
	assert.Equal(t, plan.DriverCreate, drivers["rbln-driver-canary"].Action)
	assert.Equal(t, plan.DriverDelete, drivers["rbln-driver-ca"].Action)
	assert.Equal(t, []string{"rbln-driver", "rbln-driver-ca", "rbln-driver-canary", "rbln-driver-cr", "rbln-driver-rebel"}, names(p.Drivers))

	var up plan.NodePlan
	for _, n := range p.Nodes {
		if n.Name == "n-upgrade" {
			up = n
		}
	}
	assert.Contains(t, up.OldImage, ":3.2.2-")
	assert.Contains(t, up.NewImage, ":3.3.0-")
	assert.Equal(t, "rbln-driver-rebel", up.NewOwner)
	assert.Equal(t, plan.Summary{Upgrade: 2, ChangeOwner: 1, LoseDriver: 1, GainDriver: 1, Held: 1, Batches: 3}, p.Summary)
	assert.True(t, p.Proceed, p.Reasons)
}

func names(ds []plan.DriverPlan) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

// TestBatches: maxParallelUpgrades 1, N and 0 (all at once), ordered by owner, pool, node;
// held nodes are left out.
func TestBatches(t *testing.T) {
	for _, tt := range []struct {
		max  int32
		want [][]string
	}{
		{1, [][]string{{"n-change"}, {"n-upgrade"}, {"n-upgrade2"}}},
		{2, [][]string{{"n-change", "n-upgrade"}, {"n-upgrade2"}}},
		{0, [][]string{{"n-change", "n-upgrade", "n-upgrade2"}}},
	} {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			p, err := plan.Make(t.Context(), scenario(func(u *v1alpha1.UpgradePolicy) { u.MaxParallelUpgrades = tt.max }))
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.Batches)
			assert.Empty(t, p.Manual)
		})
	}
}

// TestRolloutWaits: the plan carries the cluster policy's waits and timeouts, the input of
// the rollout's estimated timeline (plan -o html, the mermaid gantt).
func TestRolloutWaits(t *testing.T) {
	p, err := plan.Make(t.Context(), scenario(func(u *v1alpha1.UpgradePolicy) {
		u.MaxParallelUpgrades = 2
		u.Drain = v1alpha1.DrainSpec{Enable: true, TimeoutSeconds: 600}
		u.NPUPodDeletion.TimeoutSeconds = 120
		u.WaitForCompletion = v1alpha1.WaitForCompletionSpec{PodSelector: "app=train", TimeoutSeconds: 0}
		u.Reboot = v1alpha1.RebootSpec{Enable: true, RebootTimeoutSeconds: 900}
	}))
	require.NoError(t, err)
	assert.Equal(t, plan.Rollout{AutoUpgrade: true, MaxParallelUpgrades: 2, Drain: true, DrainTimeoutSeconds: 600,
		NPUPodDeletionTimeoutSeconds: 120, WaitForCompletion: true, WaitForCompletionTimeoutSeconds: 0,
		Reboot: true, RebootTimeoutSeconds: 900}, p.Rollout)
}

// TestManualProcedure: with autoUpgrade false, the procedure per node, with the exact driver
// pod to delete when the pods are known, and the drain as the cluster policy configures it.
func TestManualProcedure(t *testing.T) {
	in := scenario(func(u *v1alpha1.UpgradePolicy) {
		u.AutoUpgrade = false
		u.Drain.Enable, u.Drain.DeleteEmptyDirData, u.Drain.TimeoutSeconds = true, true, 300
	})
	p, err := plan.Make(t.Context(), in)
	require.NoError(t, err)
	assert.Empty(t, p.Batches)
	require.Len(t, p.Manual, 3)
	assert.Equal(t, "n-change", p.Manual[0].Node)
	assert.Equal(t, []string{
		"kubectl cordon n-upgrade",
		"kubectl drain n-upgrade --ignore-daemonsets --delete-emptydir-data --timeout=300s",
		"kubectl get pods -A --field-selector spec.nodeName=n-upgrade | grep " + daemonSetOf(t, in, "n-upgrade") + "  # the rbln-driver-rebel driver pod (the pods were not given)",
		"kubectl delete pod -n NAMESPACE POD  # NAMESPACE and POD: the pod found above; its DaemonSet starts the new pod (tag 3.3.0-6.8.0-90-generic-ubuntu22.04)",
		"kubectl uncordon n-upgrade",
	}, p.Manual[1].Steps)

	// With the pods, the exact driver pod.
	ds := daemonSetOf(t, in, "n-upgrade")
	in.Workloads = &plan.Workloads{Pods: []corev1.Pod{pod("rbln-system", ds+"-x7k2p", "n-upgrade", owner("DaemonSet", ds), ready)}}
	p, err = plan.Make(t.Context(), in)
	require.NoError(t, err)
	assert.Contains(t, p.Manual[1].Steps[2], "kubectl delete pod -n rbln-system "+ds+"-x7k2p")
}

func nodeIndex(p *plan.Plan, name string) int {
	for i, n := range p.Nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}

// daemonSetOf is the driver DaemonSet of a node now.
func daemonSetOf(t *testing.T, in plan.Inputs, node string) string {
	t.Helper()
	res := routing.Route(in.Cluster.Drivers(), in.Cluster.Nodes(), routing.Options{})
	for _, pool := range res.Pools {
		for _, n := range pool.Nodes {
			if n == node {
				return pool.DaemonSet
			}
		}
	}
	t.Fatalf("%s is in no pool", node)
	return ""
}

type podOpt func(*corev1.Pod)

var ready podOpt = func(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}

func owner(kind, name string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptr.To(true)}}
	}
}

func labelled(kv ...string) podOpt { return func(p *corev1.Pod) { p.Labels = wt.Sel(kv...) } }

var emptyDir podOpt = func(p *corev1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

var npu podOpt = func(p *corev1.Pod) {
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"rebellions.ai/ATOM": resource.MustParse("1")}
}

func pod(ns, name, node string, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func pdb(ns, name string, minAvailable, maxUnavailable *intstr.IntOrString, sel ...string) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvailable, MaxUnavailable: maxUnavailable, Selector: &metav1.LabelSelector{MatchLabels: wt.Sel(sel...)}}}
}

func rs(ns, name string, replicas int32, deployment string) appsv1.ReplicaSet {
	r := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)}}
	if deployment != "" {
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment, Controller: ptr.To(true)}}
	}
	return r
}

func deployment(ns, name string, replicas int32) appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}}
}

// TestBlockers: every blocker kind on the node that upgrades, each gated by its setting.
func TestBlockers(t *testing.T) {
	wl := &plan.Workloads{
		Pods: []corev1.Pod{
			// a web Deployment of 2 behind minAvailable 2: no disruption allowed
			pod("apps", "web-1", "n-upgrade", labelled("app", "web"), owner("ReplicaSet", "web-rs"), ready),
			pod("apps", "web-2", "n-none", labelled("app", "web"), owner("ReplicaSet", "web-rs"), ready),
			// api: 3 pods, maxUnavailable 1, two on the node: one is evicted, one refused
			pod("apps", "api-1", "n-upgrade", labelled("app", "api"), owner("ReplicaSet", "api-rs"), ready),
			pod("apps", "api-2", "n-upgrade", labelled("app", "api"), owner("ReplicaSet", "api-rs"), ready),
			pod("apps", "api-3", "n-none", labelled("app", "api"), owner("ReplicaSet", "api-rs"), ready),
			// a single replica without a budget
			pod("apps", "solo-1", "n-upgrade", labelled("app", "solo"), owner("ReplicaSet", "solo-rs"), ready),
			pod("apps", "bare", "n-upgrade", ready),
			pod("apps", "cache", "n-upgrade", owner("ReplicaSet", "api-rs"), emptyDir, ready),
			pod("ml", "train", "n-upgrade", npu, ready),
			// left alone by a drain: a DaemonSet pod and a finished pod
			pod("kube-system", "proxy", "n-upgrade", owner("DaemonSet", "kube-proxy"), ready),
			pod("apps", "done", "n-upgrade", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		},
		PDBs: []policyv1.PodDisruptionBudget{
			pdb("apps", "web", ptr.To(intstr.FromInt32(2)), nil, "app", "web"),
			pdb("apps", "api", nil, ptr.To(intstr.FromInt32(1)), "app", "api"),
		},
		ReplicaSets: []appsv1.ReplicaSet{rs("apps", "web-rs", 2, "web"), rs("apps", "api-rs", 3, "api"), rs("apps", "solo-rs", 1, "solo")},
		Deployments: []appsv1.Deployment{deployment("apps", "web", 2), deployment("apps", "api", 3), deployment("apps", "solo", 1)},
	}
	kinds := func(p *plan.Plan) map[string]string {
		out := map[string]string{}
		for _, n := range p.Nodes {
			for _, b := range n.Blockers {
				out[b.Pod] = b.Kind
			}
		}
		return out
	}
	in := scenario(func(u *v1alpha1.UpgradePolicy) { u.Drain.Enable = true })
	in.Workloads = wl
	p, err := plan.Make(t.Context(), in)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"apps/web-1":  plan.BlockerPDB,
		"apps/api-2":  plan.BlockerPDB, // api-1 is the one disruption allowed
		"apps/solo-1": plan.BlockerSingleReplica,
		"apps/bare":   plan.BlockerNoController,
		"apps/cache":  plan.BlockerEmptyDir,
		"ml/train":    plan.BlockerNoController, // and NPUPod, below
	}, without(kinds(p), "ml/train", plan.BlockerNPUPod))
	assert.Equal(t, plan.NodeBlocked, actions(p)["n-upgrade"])
	assert.NotContains(t, p.Batches, []string{"n-upgrade"}, "a blocked node is not rolled out")
	assert.False(t, p.Proceed)
	assert.Contains(t, p.Reasons, "1 node(s) blocked by a drain blocker")
	var npuFound, soloWarns bool
	for _, b := range p.Nodes[nodeIndex(p, "n-upgrade")].Blockers {
		npuFound = npuFound || (b.Kind == plan.BlockerNPUPod && b.Pod == "ml/train")
		if b.Kind == plan.BlockerSingleReplica {
			soloWarns = !b.Blocks
		}
	}
	assert.True(t, npuFound, "the NPU pod without a controller")
	assert.True(t, soloWarns, "a single replica warns, it does not block")

	// The settings lift them: drain.force, deleteEmptyDirData, npuPodDeletion.force; without
	// drain only NPU pods matter; a single replica alone does not block.
	in = scenario(func(u *v1alpha1.UpgradePolicy) {
		u.Drain.Enable, u.Drain.Force, u.Drain.DeleteEmptyDirData, u.NPUPodDeletion.Force = true, true, true, true
	})
	in.Workloads = &plan.Workloads{Pods: wl.Pods[5:9], ReplicaSets: wl.ReplicaSets, Deployments: wl.Deployments}
	p, err = plan.Make(t.Context(), in)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"apps/solo-1": plan.BlockerSingleReplica}, kinds(p))
	assert.Equal(t, plan.NodeUpgrade, actions(p)["n-upgrade"])

	in = scenario(func(*v1alpha1.UpgradePolicy) {})
	in.Workloads = wl
	p, err = plan.Make(t.Context(), in)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"ml/train": plan.BlockerNPUPod}, kinds(p), "without drain: NPU pods only")
}

func without(m map[string]string, key, kind string) map[string]string {
	if m[key] == kind {
		m[key] = plan.BlockerNoController
	}
	return m
}

// TestPercentBudgets: minAvailable and maxUnavailable as percentages scale with the
// controllers' replicas, as the disruption controller computes them.
func TestPercentBudgets(t *testing.T) {
	pods := []corev1.Pod{
		pod("apps", "db-0", "n-upgrade", labelled("app", "db"), owner("StatefulSet", "db"), ready),
		pod("apps", "db-1", "n-none", labelled("app", "db"), owner("StatefulSet", "db"), ready),
		pod("apps", "db-2", "n-none", labelled("app", "db"), owner("StatefulSet", "db")), // not ready
	}
	for _, tt := range []struct {
		name     string
		min, max *intstr.IntOrString
		blocked  bool
	}{
		{"minAvailable 50% of 3: 2 desired, 2 healthy", ptr.To(intstr.FromString("50%")), nil, true},
		{"minAvailable 30% of 3: 1 desired", ptr.To(intstr.FromString("30%")), nil, false},
		{"maxUnavailable 33% of 3: 1 unavailable (rounded up), 2 desired", nil, ptr.To(intstr.FromString("33%")), true},
		{"maxUnavailable 67% of 3: 1 desired", nil, ptr.To(intstr.FromString("67%")), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := scenario(func(u *v1alpha1.UpgradePolicy) { u.Drain.Enable = true })
			in.Workloads = &plan.Workloads{Pods: pods, PDBs: []policyv1.PodDisruptionBudget{pdb("apps", "db", tt.min, tt.max, "app", "db")},
				StatefulSets: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(3))}}}}
			p, err := plan.Make(t.Context(), in)
			require.NoError(t, err)
			assert.Equal(t, tt.blocked, actions(p)["n-upgrade"] == plan.NodeBlocked, "%+v", p.Nodes[nodeIndex(p, "n-upgrade")].Blockers)
		})
	}
}

// TestDriftOnly: without values the plan is "no change": every node none, the drift reported.
func TestDriftOnly(t *testing.T) {
	in := scenario(func(*v1alpha1.UpgradePolicy) {})
	in.Objects = nil
	for _, n := range []routing.Node{node("n-unowned", "atom"), node("n-stale", "rebel", "fleet", "npu", operator.LabelOwner, "rbln-driver-old"),
		{Name: "n-nofamily", Labels: wt.Sel(operator.LabelDeployDriver, "true", "fleet", "npu", operator.LabelOSID, "ubuntu", operator.LabelOSVersion, "22.04", operator.LabelKernel, "6.8.0-90-generic")},
		{Name: "n-nonfd", Labels: wt.Sel(operator.LabelDeployDriver, "true", "fleet", "npu", operator.LabelFamily, "atom")}} {
		in.Cluster.SetNode(n)
	}
	p, err := plan.Make(t.Context(), in)
	require.NoError(t, err)
	for _, n := range p.Nodes {
		assert.Equal(t, plan.NodeNone, n.Action, n.Name)
	}
	var drift []string
	for _, d := range p.Drift {
		drift = append(drift, d.Node+" "+d.Kind)
	}
	assert.Subset(t, drift, []string{"n-unowned Unowned", "n-stale StaleOwnerLabel", "n-nofamily DriverFamilyLabelMissing", "n-nonfd NFDLabelMissing", "n-gain Unowned"})
	assert.Empty(t, p.Batches)
	assert.True(t, p.Proceed)
}

// TestScopeExitLosesTheDriver: a node that left rbln-npu-operator's scope
// (rebellions.ai/npu.deploy.driver no longer "true") but still carries an owner label loses its
// driver when the operator removes the label: the plan shows it, and it needs acknowledging.
func TestScopeExitLosesTheDriver(t *testing.T) {
	in := scenario(func(*v1alpha1.UpgradePolicy) {})
	in.Objects, in.AllowDriverLoss = nil, false
	in.Cluster.SetNode(node("n-left", "atom", operator.LabelDeployDriver, "pre-installed", operator.LabelOwner, "rbln-driver"))
	p, err := plan.Make(t.Context(), in)
	require.NoError(t, err)
	i := slices.IndexFunc(p.Nodes, func(n plan.NodePlan) bool { return n.Name == "n-left" })
	require.GreaterOrEqual(t, i, 0)
	n := p.Nodes[i]
	assert.Equal(t, plan.NodeLoseDriver, n.Action)
	assert.Equal(t, "rbln-driver", n.OldOwner)
	assert.Empty(t, n.NewOwner)
	assert.Equal(t, routing.ReasonOutOfScope, n.Reason)
	assert.False(t, p.Proceed)
	assert.Contains(t, p.Reasons, "1 node(s) would lose their driver (acknowledge with --allow-driver-loss)")
	assert.True(t, slices.ContainsFunc(p.Drift, func(d plan.Drift) bool {
		return d.Node == "n-left" && d.Kind == plan.DriftStaleOwnerLabel && strings.Contains(d.Detail, "loses its driver")
	}))

	in.AllowDriverLoss = true
	p, err = plan.Make(t.Context(), in)
	require.NoError(t, err)
	assert.True(t, p.Proceed, "acknowledged: %v", p.Reasons)
}

// TestCannotProceed: a denial, an unacknowledged driver loss and a missing image each stop the
// plan, and say so.
func TestCannotProceed(t *testing.T) {
	in := scenario(func(*v1alpha1.UpgradePolicy) {})
	in.AllowDriverLoss = false
	in.Objects.Drivers = append(in.Objects.Drivers, *wt.Driver("rbln-driver-tie", wt.Sel(operator.LabelFamily, "atom", "env", "canary")))
	in.CheckImages = func(_ context.Context, images []string, _ *release.Result) map[string]registry.ImageResult {
		out := map[string]registry.ImageResult{}
		for _, img := range images {
			st := registry.Found
			if img == "" || len(img)%2 == 0 { // some missing
				st = registry.NotFound
			}
			out[img] = registry.ImageResult{Image: img, Status: st}
		}
		return out
	}
	p, err := plan.Make(t.Context(), in)
	require.NoError(t, err)
	assert.False(t, p.Proceed)
	require.Len(t, p.Denials, 1)
	assert.Equal(t, "rbln-driver-tie", p.Denials[0].Name)
	assert.Contains(t, p.Reasons, "1 object(s) the webhook would deny")
	assert.Contains(t, p.Reasons, "1 node(s) would lose their driver (acknowledge with --allow-driver-loss)")
	assert.NotEmpty(t, p.MissingImages)
	for _, d := range p.Drivers {
		assert.NotEqual(t, "rbln-driver-tie", d.Name, "a denied new driver is not part of the plan")
	}
}

// TestBudgetsAsTheEvictionAPI: the cases where the Eviction API and the disruption controller
// (test/plan checks them on a real cluster) differ from "healthy pods minus desired".
func TestBudgetsAsTheEvictionAPI(t *testing.T) {
	unready := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	}
	a := func(name, node string, opts ...podOpt) corev1.Pod {
		return pod("apps", name, node, append([]podOpt{labelled("app", "a"), owner("ReplicaSet", "a-rs"), ready}, opts...)...)
	}
	alwaysAllow := func(b policyv1.PodDisruptionBudget) policyv1.PodDisruptionBudget {
		b.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
		return b
	}
	one := ptr.To(intstr.FromInt32(1))
	two := ptr.To(intstr.FromInt32(2))
	for _, tt := range []struct {
		name     string
		pods     []corev1.Pod
		pdbs     []policyv1.PodDisruptionBudget
		replicas int32
		blocked  bool
	}{
		{"neither minAvailable nor maxUnavailable: no pod expected, no disruption",
			[]corev1.Pod{a("a-1", "n-upgrade"), a("a-2", "n-none")}, []policyv1.PodDisruptionBudget{pdb("apps", "a", nil, nil, "app", "a")}, 2, true},
		{"the controller is scaled to 0: no disruption",
			[]corev1.Pod{a("a-1", "n-upgrade"), a("a-2", "n-none")}, []policyv1.PodDisruptionBudget{pdb("apps", "a", nil, one, "app", "a")}, 0, true},
		{"a pod without a controller adds nothing to the scale (2 expected, 3 healthy)",
			[]corev1.Pod{a("a-1", "n-upgrade"), a("a-2", "n-none"), pod("apps", "bare", "n-none", labelled("app", "a"), ready)},
			[]policyv1.PodDisruptionBudget{pdb("apps", "a", nil, one, "app", "a")}, 2, false},
		{"two budgets select the pod: refused whatever they allow",
			[]corev1.Pod{a("a-1", "n-upgrade"), a("a-2", "n-none"), a("a-3", "n-none")},
			[]policyv1.PodDisruptionBudget{pdb("apps", "a", nil, two, "app", "a"), pdb("apps", "all", nil, two)}, 3, true},
		{"not ready, the budget short of healthy pods: it needs a disruption",
			[]corev1.Pod{a("a-1", "n-upgrade", unready), a("a-2", "n-none"), a("a-3", "n-none", unready)},
			[]policyv1.PodDisruptionBudget{pdb("apps", "a", two, nil, "app", "a")}, 3, true},
		{"not ready, unhealthyPodEvictionPolicy AlwaysAllow",
			[]corev1.Pod{a("a-1", "n-upgrade", unready), a("a-2", "n-none"), a("a-3", "n-none", unready)},
			[]policyv1.PodDisruptionBudget{alwaysAllow(pdb("apps", "a", two, nil, "app", "a"))}, 3, false},
		{"not ready, the budget has its desired healthy pods",
			[]corev1.Pod{a("a-1", "n-upgrade", unready), a("a-2", "n-none"), a("a-3", "n-none")},
			[]policyv1.PodDisruptionBudget{pdb("apps", "a", two, nil, "app", "a")}, 3, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := scenario(func(u *v1alpha1.UpgradePolicy) { u.Drain.Enable, u.Drain.Force = true, true })
			in.Workloads = &plan.Workloads{Pods: tt.pods, PDBs: tt.pdbs,
				ReplicaSets: []appsv1.ReplicaSet{rs("apps", "a-rs", tt.replicas, "a")}, Deployments: []appsv1.Deployment{deployment("apps", "a", tt.replicas)}}
			p, err := plan.Make(t.Context(), in)
			require.NoError(t, err)
			blockers := p.Nodes[nodeIndex(p, "n-upgrade")].Blockers
			assert.Equal(t, tt.blocked, slices.ContainsFunc(blockers, func(b plan.Blocker) bool { return b.Pod == "apps/a-1" && b.Kind == plan.BlockerPDB && b.Blocks }), "%+v", blockers)
		})
	}
}

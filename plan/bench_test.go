package plan_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
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
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/routing"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// planShape sizes a generated cluster for the plan benchmarks.
type planShape struct {
	nodes, drivers, pods, pdbs int
}

var (
	// the size (#11), and a tenth of it to measure the scaling
	planFull  = planShape{nodes: 10_000, drivers: 500, pods: 50_000, pdbs: 2_000}
	planSmall = planShape{nodes: 1_000, drivers: 50, pods: 5_000, pdbs: 200}
)

func (s planShape) String() string {
	return fmt.Sprintf("nodes=%d/drivers=%d/pods=%d/pdbs=%d", s.nodes, s.drivers, s.pods, s.pdbs)
}

const (
	benchRelease   = "dg"
	benchOld       = "3.2.2" // wt.Driver's version
	benchNew       = "3.3.0"
	benchBatch     = 10
	benchDriverNS  = "rbln-system"
	benchNamespace = 20 // application namespaces
)

var (
	benchFamilies = []string{"atom", "atom", "rebel", "atom-max"}
	benchOSes     = []struct{ id, version string }{{"ubuntu", "22.04"}, {"ubuntu", "22.04"}, {"ubuntu", "24.04"}, {"rhel", "9.2"}}
	benchKernels  = map[string][]string{
		"ubuntu22.04": {"6.8.0-90-generic", "6.8.0-90-generic", "5.15.0-119-generic"},
		"ubuntu24.04": {"6.8.0-45-generic", "6.11.0-1004-gcp"},
		"rhel9.2":     {"5.14.0-284.11.1.el9_2.x86_64"},
	}
	benchTiers = []string{"frontend", "backend", "batch", "cache"}
)

func benchTeam(i int) string { return fmt.Sprintf("t%03d", i) }

// genPlanInputs builds a realistic cluster and release for plan.Make.
//
// Nodes: candidates on a few NPU families, OS versions and kernels; every node belongs to one
// team (team=tNNN), the team's nodes mostly on the team's family; a few out of scope
// (pre-installed), a few with the upgrade skip label; zones and instance types. The owner label
// is what the current drivers route to.
//
// Drivers: the default rbln-driver (catches team t000 and the nodes off their team's family)
// and one instance per other team: {team, family} for most, {team} alone for every fifth. The
// rendered drivers bump every other instance to a new version (the default too), so about half
// of the nodes upgrade; the cluster policy has autoUpgrade, maxParallelUpgrades 10 and drain.
//
// Pods: one driver DaemonSet pod per owned node (skipped by a drain), the rest in 20
// namespaces: Deployments through a ReplicaSet (some with an old, scaled-down one), some
// StatefulSets, a few controller-less pods; some with emptyDir, some requesting an NPU; most
// Ready. PDBs select a workload by its app label (some also by tier), with minAvailable
// int/percent and maxUnavailable int/percent.
func genPlanInputs(s planShape) plan.Inputs {
	r := rand.New(rand.NewPCG(11, uint64(s.nodes)))

	teamFamily := func(t int) string { return benchFamilies[t%len(benchFamilies)] }
	nodes := make([]routing.Node, s.nodes)
	for i := range nodes {
		name := fmt.Sprintf("npu-%05d", i)
		team := i % s.drivers
		family := teamFamily(team)
		if r.IntN(20) == 0 { // off the team's family: the default driver owns it
			family = benchFamilies[r.IntN(len(benchFamilies))]
		}
		osv := benchOSes[r.IntN(len(benchOSes))]
		kernels := benchKernels[osv.id+osv.version]
		l := wt.PoolLabels(family, osv.id, osv.version, kernels[r.IntN(len(kernels))])
		l[operator.LabelDeployDriver] = "true"
		if r.IntN(100) == 0 {
			l[operator.LabelDeployDriver] = "pre-installed"
		}
		l["kubernetes.io/hostname"] = name
		l["kubernetes.io/os"] = "linux"
		l["kubernetes.io/arch"] = "amd64"
		l["node.kubernetes.io/instance-type"] = []string{"npu.8x", "npu.4x"}[r.IntN(2)]
		l["topology.kubernetes.io/zone"] = []string{"zone-a", "zone-b", "zone-c"}[r.IntN(3)]
		l["team"] = benchTeam(team)
		if r.IntN(100) == 0 {
			l[plan.LabelUpgradeSkip] = "true"
		}
		nodes[i] = routing.Node{Name: name, Labels: l}
	}

	var current []v1alpha1.RBLNDriver
	var rendered []v1alpha1.RBLNDriver
	for t := range s.drivers {
		var d *v1alpha1.RBLNDriver
		if t == 0 {
			d = wt.Driver(v1alpha1.DefaultDriverName, nil)
		} else {
			sel := map[string]string{"team": benchTeam(t), operator.LabelFamily: teamFamily(t)}
			if t%5 == 0 {
				delete(sel, operator.LabelFamily)
			}
			d = wt.Driver("rbln-driver-"+benchTeam(t), sel)
		}
		d.Annotations = map[string]string{"meta.helm.sh/release-name": benchRelease}
		current = append(current, *d.DeepCopy())
		d.Annotations = nil
		if t%2 == 0 {
			d.Spec.Version = benchNew
		}
		rendered = append(rendered, *d)
	}

	// the owner labels and driver pods of the cluster now
	now := routing.Route(current, nodes, routing.Options{})
	byName := make(map[string]int, len(nodes))
	for i, n := range nodes {
		byName[n.Name] = i
	}
	for _, n := range now.Nodes {
		if n.Owner != "" {
			nodes[byName[n.Name]].Labels[operator.LabelOwner] = n.Owner
		}
	}
	w := &plan.Workloads{}
	for _, pool := range now.Pools {
		for _, n := range pool.Nodes {
			w.Pods = append(w.Pods, benchPod(benchDriverNS, fmt.Sprintf("%s-%05d", pool.DaemonSet, byName[n]), n,
				map[string]string{"app": pool.DaemonSet}, benchOwner("DaemonSet", pool.DaemonSet), true))
		}
	}

	// application workloads until the pods are there; the first multi-replica ones get a budget
	pdbs := 0 // (far more multi-replica workloads than budgets: one budget per pod at most)
	for wi := 0; len(w.Pods) < s.pods; wi++ {
		ns := fmt.Sprintf("apps-%02d", wi%benchNamespace)
		name := fmt.Sprintf("w%05d", wi)
		tier := benchTiers[r.IntN(len(benchTiers))]
		lbl := map[string]string{"app": name, "tier": tier}
		replicas := int32([]int{1, 2, 2, 3, 3, 4, 5, 8}[r.IntN(8)])
		replicas = min(replicas, int32(s.pods-len(w.Pods)))
		withEmptyDir := r.IntN(40) == 0
		withNPU := r.IntN(8) == 0
		kind := "Deployment"
		switch x := r.IntN(100); {
		case x < 2:
			kind, replicas = "", 1 // a bare pod, often a notebook or a job on an NPU
			withNPU = withNPU || r.IntN(3) == 0
		case x < 15:
			kind = "StatefulSet"
		}
		var ref metav1.OwnerReference
		switch kind {
		case "Deployment":
			hash := fmt.Sprintf("%08x", r.Uint32())
			rsName := name + "-" + hash
			lbl["pod-template-hash"] = hash
			w.Deployments = append(w.Deployments, appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}})
			w.ReplicaSets = append(w.ReplicaSets, benchRS(ns, rsName, name, replicas))
			if r.IntN(5) == 0 { // an old revision, scaled down
				w.ReplicaSets = append(w.ReplicaSets, benchRS(ns, fmt.Sprintf("%s-%08x", name, r.Uint32()), name, 0))
			}
			ref = benchOwner("ReplicaSet", rsName)
		case "StatefulSet":
			w.StatefulSets = append(w.StatefulSets, appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}})
			ref = benchOwner("StatefulSet", name)
		}
		for k := range replicas {
			pl := make(map[string]string, len(lbl)+1)
			for key, v := range lbl {
				pl[key] = v
			}
			podName := fmt.Sprintf("%s-%d", name, k)
			switch kind {
			case "Deployment":
				podName = fmt.Sprintf("%s-%s-%04x%x", name, lbl["pod-template-hash"], r.IntN(1<<16), k) // unique
			case "StatefulSet":
				pl["statefulset.kubernetes.io/pod-name"] = podName
			}
			p := benchPod(ns, podName, nodes[r.IntN(len(nodes))].Name, pl, ref, r.IntN(50) != 0)
			if withEmptyDir {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
			if withNPU {
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceName("rebellions.ai/" + []string{"ATOM", "REBEL"}[r.IntN(2)]): resource.MustParse("1")}
			}
			w.Pods = append(w.Pods, p)
		}
		if kind == "" || replicas < 2 || pdbs >= s.pdbs {
			continue
		}
		pdbs++
		sel := map[string]string{"app": name}
		if r.IntN(4) == 0 {
			sel["tier"] = tier
		}
		spec := policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}}
		switch r.IntN(5) {
		case 0: // every replica: no disruption allowed
			spec.MinAvailable = ptr.To(intstr.FromInt32(replicas))
		case 1:
			spec.MinAvailable = ptr.To(intstr.FromInt32(replicas - 1))
		case 2:
			spec.MinAvailable = ptr.To(intstr.FromString("50%"))
		case 3:
			spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		default:
			spec.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		w.PDBs = append(w.PDBs, policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})
	}
	cp := wt.ClusterPolicy(true)
	up := &cp.Spec.Driver.UpgradePolicy
	up.MaxParallelUpgrades = benchBatch
	up.Drain.Enable = true
	return plan.Inputs{
		Objects:   &release.Objects{ClusterPolicy: cp, Drivers: rendered, ReleaseName: benchRelease},
		Cluster:   cluster.FromLists(nodes, current, []v1alpha1.RBLNClusterPolicy{*cp.DeepCopy()}, nil),
		Workloads: w,
	}
}

func benchOwner(kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptr.To(true)}
}

func benchRS(ns, name, deployment string, replicas int32) appsv1.ReplicaSet {
	return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)}}
}

// benchPod is a running pod; ref with an empty Kind means no controller.
func benchPod(ns, name, node string, labels map[string]string, ref metav1.OwnerReference, ready bool) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/app:1.0"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if ref.Kind != "" {
		p.OwnerReferences = []metav1.OwnerReference{ref}
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

// BenchmarkPlan: plan.Make end to end (routing before and after, the release's decisions, the
// node plans, the workload index, the drain blockers, the batches). Goal (#11): <= 2 s at
// 10,000 nodes, 500 drivers, 50,000 pods, 2,000 PDBs; the tenth-size run gives the scaling.
func BenchmarkPlan(b *testing.B) {
	for _, s := range []planShape{planSmall, planFull} {
		b.Run(s.String(), func(b *testing.B) {
			in := genPlanInputs(s)
			b.ReportAllocs()
			var p *plan.Plan
			for b.Loop() {
				var err error
				if p, err = plan.Make(b.Context(), in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(s.nodes), "ns/node")
			b.ReportMetric(float64(p.Summary.Upgrade), "upgrades")
			b.ReportMetric(float64(p.Summary.Blocked), "blocked")
		})
	}
}

// TestPlanGenerator: the benchmark's cluster makes a non-trivial plan (upgrades, every kind of
// blocker, full batches, no drift, nothing denied), so the benchmark measures real work.
func TestPlanGenerator(t *testing.T) {
	in := genPlanInputs(planSmall)
	require.Len(t, in.Cluster.Nodes(), planSmall.nodes)
	require.Len(t, in.Cluster.Drivers(), planSmall.drivers)
	require.Len(t, in.Workloads.Pods, planSmall.pods)
	require.Len(t, in.Workloads.PDBs, planSmall.pdbs)

	p, err := plan.Make(t.Context(), in)
	require.NoError(t, err)
	assert.Empty(t, p.Denials)
	assert.Empty(t, p.Drift, "the owner labels are the current routing")
	assert.Equal(t, plan.Rollout{AutoUpgrade: true, MaxParallelUpgrades: benchBatch, Drain: true, DrainTimeoutSeconds: 300, NPUPodDeletionTimeoutSeconds: 300}, p.Rollout)

	s := p.Summary
	t.Logf("summary %+v", s)
	assert.Greater(t, s.Upgrade, planSmall.nodes/4, "about half the nodes upgrade")
	assert.Less(t, s.Upgrade, planSmall.nodes*3/4)
	assert.Positive(t, s.Held)
	assert.Positive(t, s.Blocked)
	assert.Less(t, s.Blocked, s.Upgrade, "most upgrading nodes are not blocked")
	assert.Zero(t, s.ChangeOwner+s.LoseDriver+s.GainDriver, "a version bump only")

	updated := 0
	for _, d := range p.Drivers {
		if d.Action == plan.DriverUpdate {
			updated++
			assert.Equal(t, benchNew, d.NewVersion, d.Name)
		}
	}
	assert.Equal(t, planSmall.drivers/2, updated)

	// batches: every restarting, unblocked node once, in batches of maxParallelUpgrades
	var todo []string
	kinds := map[string]int{}
	warnOnly := 0
	for _, n := range p.Nodes {
		if n.Action == plan.NodeUpgrade {
			todo = append(todo, n.Name)
		}
		blocks := false
		for _, b := range n.Blockers {
			kinds[b.Kind]++
			blocks = blocks || b.Blocks
		}
		assert.Equal(t, n.Action == plan.NodeBlocked, blocks, n.Name)
		if !blocks && len(n.Blockers) > 0 {
			warnOnly++
		}
	}
	require.Equal(t, (len(todo)+benchBatch-1)/benchBatch, len(p.Batches))
	var batched []string
	for i, batch := range p.Batches {
		if i < len(p.Batches)-1 {
			assert.Len(t, batch, benchBatch)
		} else {
			assert.LessOrEqual(t, len(batch), benchBatch)
		}
		batched = append(batched, batch...)
	}
	slices.Sort(batched)
	assert.Equal(t, todo, batched)
	for _, k := range []string{plan.BlockerPDB, plan.BlockerSingleReplica, plan.BlockerNoController, plan.BlockerEmptyDir, plan.BlockerNPUPod} {
		assert.Positive(t, kinds[k], k)
	}
	assert.Positive(t, warnOnly, "single replicas warn without blocking")
	assert.False(t, p.Proceed)
	assert.Contains(t, p.Reasons, fmt.Sprintf("%d node(s) blocked by a drain blocker", s.Blocked))
}

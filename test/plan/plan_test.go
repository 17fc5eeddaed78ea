package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/charts"
	dgcluster "github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/cmd/driverguard/app"
	"github.com/driverguard/driverguard/operator"
	dgplan "github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/test/controlplane"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// The release before and after: the rebel nodes' driver goes from 3.2.2 to 3.3.0 (their driver
// pod restarts: upgrade, or blocked), the default driver of the atom nodes stays. Drain is
// enabled, drain.force is not (no bare pod is put on a node that drains).
const (
	valuesBefore = `driver:
  image: {tag: "3.2.2"}
  upgradePolicy:
    autoUpgrade: true
    maxParallelUpgrades: 1
    drain: {enable: true, timeoutSeconds: 300}
  instances:
    rebel:
      nodeSelector: {rebellions.ai/npu.family: rebel}
`
	valuesAfter = `driver:
  image: {tag: "3.2.2"}
  upgradePolicy:
    autoUpgrade: true
    maxParallelUpgrades: 1
    drain: {enable: true, timeoutSeconds: 300}
  instances:
    rebel:
      image: {tag: "3.3.0"}
      nodeSelector: {rebellions.ai/npu.family: rebel}
`
	ns = "apps"
)

type nodeSpec struct{ name, family, owner string }

// The rebel nodes upgrade (n-up-*), the atom ones keep their driver (n-stay-*, and n-stale,
// whose owner label is stale: drift).
var nodes = []nodeSpec{
	{"n-up-1", "rebel", "rbln-driver-rebel"},
	{"n-up-2", "rebel", "rbln-driver-rebel"},
	{"n-up-3", "rebel", "rbln-driver-rebel"},
	{"n-up-4", "rebel", "rbln-driver-rebel"},
	{"n-stay-1", "atom", "rbln-driver"},
	{"n-stay-2", "atom", "rbln-driver"},
	{"n-stale", "atom", "rbln-driver-gone"},
}

type podSpec struct {
	node  string
	ready bool
}

// r1 and r2 are Ready pods on the nodes that keep their driver.
var r1, r2 = podSpec{"n-stay-1", true}, podSpec{"n-stay-2", true}

func up(n int, ready bool) podSpec { return podSpec{fmt.Sprintf("n-up-%d", n), ready} }

// workload is a controller and its pods <name>-<i>, labelled app=<app, else name>. kind is
// Deployment (created with its ReplicaSet <name>-rs, which owns the pods), ReplicaSet,
// StatefulSet, or "" for pods without a controller.
type workload struct {
	kind, name, app string
	replicas        int32
	labels          []string // more pod labels
	pods            []podSpec
}

var workloads = []workload{
	{kind: "Deployment", name: "web", replicas: 3, pods: []podSpec{up(1, true), r1, r2}},
	{kind: "Deployment", name: "api", replicas: 4, pods: []podSpec{up(1, true), up(1, true), r1, r2}},
	{kind: "Deployment", name: "dual", replicas: 3, labels: []string{"tier", "front"}, pods: []podSpec{up(1, true), r1, r2}},
	{kind: "Deployment", name: "weak", replicas: 3, pods: []podSpec{up(1, false), r1, {"n-stay-2", false}}},
	{kind: "Deployment", name: "queue", replicas: 5, pods: []podSpec{up(2, true), up(2, true), up(2, true), r1, r2}},
	{kind: "ReplicaSet", name: "legacy", replicas: 2, pods: []podSpec{up(2, true), r1}},
	{kind: "Deployment", name: "batch", replicas: 3, pods: []podSpec{up(3, true), r1, {"n-stay-2", false}}},
	{kind: "Deployment", name: "plain", replicas: 2, pods: []podSpec{up(3, true), r1}},
	{kind: "Deployment", name: "old", replicas: 0, pods: []podSpec{up(3, true), r1}}, // scaled to 0, its pods still there
	{kind: "Deployment", name: "mixed", replicas: 2, pods: []podSpec{up(3, true), r1}},
	{kind: "", name: "mixed-bare", app: "mixed", pods: []podSpec{r2}},
	{kind: "Deployment", name: "lax", replicas: 3, pods: []podSpec{up(3, false), r1, {"n-stay-2", false}}},
	{kind: "Deployment", name: "cache", replicas: 4, pods: []podSpec{up(4, true), up(4, true), r1, r2}},
	{kind: "StatefulSet", name: "db", replicas: 3, pods: []podSpec{up(4, true), r1, r2}},
	{kind: "Deployment", name: "sick", replicas: 3, pods: []podSpec{up(4, false), r1, r2}},
	{kind: "Deployment", name: "free", replicas: 2, pods: []podSpec{up(4, true), r1}}, // no budget
}

// budget is a PodDisruptionBudget of namespace apps; want is the status the disruption
// controller must write for it: expected pods, desired healthy, current healthy, disruptions
// allowed.
type budget struct {
	name        string
	min, max    *intstr.IntOrString
	sel         []string // matchLabels; default app=<name>
	alwaysAllow bool     // unhealthyPodEvictionPolicy AlwaysAllow
	want        [4]int32
}

func num(v int32) *intstr.IntOrString  { return ptr.To(intstr.FromInt32(v)) }
func pct(v string) *intstr.IntOrString { return ptr.To(intstr.FromString(v)) }

var budgets = []budget{
	{name: "web", min: num(3), want: [4]int32{3, 3, 3, 0}},
	{name: "api", max: num(1), want: [4]int32{4, 3, 4, 1}},
	{name: "dual-app", max: num(2), sel: []string{"app", "dual"}, want: [4]int32{3, 1, 3, 2}},
	{name: "dual-tier", max: num(2), sel: []string{"tier", "front"}, want: [4]int32{3, 1, 3, 2}},
	{name: "weak", min: num(2), want: [4]int32{3, 2, 1, 0}},
	{name: "queue", max: pct("40%"), want: [4]int32{5, 3, 5, 2}},
	{name: "legacy", max: pct("50%"), want: [4]int32{2, 1, 2, 1}},
	{name: "batch", min: num(2), want: [4]int32{3, 2, 2, 0}},
	{name: "plain", want: [4]int32{0, 0, 2, 0}}, // neither minAvailable nor maxUnavailable
	{name: "old", max: num(1), want: [4]int32{0, 0, 2, 0}},
	{name: "mixed", max: num(1), want: [4]int32{2, 1, 3, 2}}, // the bare pod counts as healthy, not as expected
	{name: "lax", min: num(2), alwaysAllow: true, want: [4]int32{3, 2, 1, 0}},
	{name: "cache", min: pct("50%"), want: [4]int32{4, 2, 4, 2}},
	{name: "db", min: pct("60%"), want: [4]int32{3, 2, 3, 1}},
	{name: "sick", min: num(2), want: [4]int32{3, 2, 2, 0}},
}

// Eviction outcomes.
const (
	evicted   = "evicted"
	refused   = "refused (429)"
	twoBudget = "refused (500: more than one PodDisruptionBudget)"
)

// wantEvictions is what the Eviction API answers when the nodes are drained in the plan's
// order (the budget-free pods of a node by name, then the blocked ones).
var wantEvictions = map[string]string{
	// n-up-1
	"apps/web-0":  refused, // minAvailable 3 of 3
	"apps/api-0":  evicted, // maxUnavailable 1: the one disruption
	"apps/api-1":  refused, // ... which api-0 used
	"apps/dual-0": twoBudget,
	"apps/weak-0": refused, // not ready, but its budget is short of healthy pods already
	// n-up-2
	"apps/queue-0":  evicted, // 40% of 5: 2 disruptions
	"apps/queue-1":  evicted,
	"apps/queue-2":  refused,
	"apps/legacy-0": evicted, // a ReplicaSet of its own: its scale
	// n-up-3
	"apps/batch-0": refused, // 2 of 3 ready, minAvailable 2
	"apps/plain-0": refused, // a policy/v1 budget with neither field expects 0 pods: no disruption
	"apps/old-0":   refused, // its controller's scale is 0: no disruption
	"apps/mixed-0": evicted, // a pod without a controller does not make the budget incomputable
	"apps/lax-0":   evicted, // not ready, unhealthyPodEvictionPolicy AlwaysAllow
	// n-up-4: none blocked, so the node upgrades
	"apps/cache-0": evicted,
	"apps/cache-1": evicted,
	"apps/db-0":    evicted,
	"apps/sick-0":  evicted, // not ready, and its budget has its desired healthy pods
	"apps/free-0":  evicted, // no budget
}

var wantActions = map[string]string{
	"n-up-1": dgplan.NodeBlocked, "n-up-2": dgplan.NodeBlocked, "n-up-3": dgplan.NodeBlocked, "n-up-4": dgplan.NodeUpgrade,
	"n-stay-1": dgplan.NodeNone, "n-stay-2": dgplan.NodeNone, "n-stale": dgplan.NodeNone,
}

// cluster is a control plane with the disruption controller running.
type cluster struct {
	plane      *controlplane.Plane
	c          client.Client
	cs         kubernetes.Interface
	kubeconfig string
	dir        string
}

func requireAssets(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if testing.Short() && errors.Is(err, controlplane.ErrNoAssets) {
		t.Skip(err)
	}
	t.Fatal(err)
}

// start starts the control plane and Kubernetes' disruption controller; both stop when the
// test ends.
func start(t *testing.T) *cluster {
	t.Helper()
	dc, err := controlplane.DisruptionControllerBinary()
	requireAssets(t, err)
	plane, err := controlplane.Start(controlplane.Options{})
	requireAssets(t, err)
	t.Cleanup(func() {
		if err := plane.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	cl := &cluster{plane: plane, dir: t.TempDir()}
	cl.c, err = plane.Client(nil)
	require.NoError(t, err)
	cl.cs, err = kubernetes.NewForConfig(plane.Config)
	require.NoError(t, err)
	cl.kubeconfig = cl.addUser(t, "driverguard-plan")
	runDisruptionController(t, dc, cl.addUser(t, "disruption-controller"), cl.dir)
	return cl
}

// addUser writes the kubeconfig of a new system:masters user.
func (cl *cluster) addUser(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(cl.dir, name+".kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(cl.plane.Env, envtest.User{Name: name, Groups: []string{"system:masters"}}, path))
	return path
}

// runDisruptionController runs the disruption controller (hack/tools/disruption-controller:
// kube-controller-manager's wiring of it, without the rest of the manager: no leader election,
// no serving) with the kubeconfig's credentials. Its log is printed when the test fails.
func runDisruptionController(t *testing.T, bin, kubeconfig, dir string) {
	t.Helper()
	logPath := filepath.Join(dir, "disruption-controller.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--kubeconfig="+kubeconfig,
		"--v=2")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
			t.Errorf("the disruption controller exited before the test ended: %v", waitErr)
		default:
			cancel()
			<-exited
		}
		cancel()
		_ = logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			if len(out) > 16000 {
				out = out[len(out)-16000:]
			}
			t.Logf("disruption controller log (tail):\n%s", out)
		}
	})
}

// setUp creates the cluster state of both tests: the nodes, the drivers and the cluster
// policy rendered from valuesBefore, the workloads with Ready pods, then the budgets, and
// waits until the disruption controller has written every budget's expected status.
func (cl *cluster) setUp(ctx context.Context, t *testing.T) {
	t.Helper()
	c := cl.c
	for _, n := range nodes {
		l := wt.PoolLabels(n.family, wt.OS, wt.OSVersion, wt.Kernel)
		l[operator.LabelDeployDriver] = "true"
		l[operator.LabelOwner] = n.owner
		require.NoError(t, c.Create(ctx, wt.Node(n.name, l)))
	}
	before := filepath.Join(cl.dir, "before.yaml")
	require.NoError(t, os.WriteFile(before, []byte(valuesBefore), 0o600))
	vals, err := render.LoadValues(render.ValuesOptions{ValueFiles: []string{before}})
	require.NoError(t, err)
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	rendered, err := render.Render(ch, vals, render.Options{})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, rendered.ClusterPolicy.DeepCopy()), "the rendered cluster policy")
	for i := range rendered.Drivers {
		require.NoError(t, c.Create(ctx, rendered.Drivers[i].DeepCopy()), "the rendered driver %s", rendered.Drivers[i].Name)
	}

	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, w := range workloads {
		cl.createWorkload(ctx, t, w)
	}
	for _, b := range budgets {
		sel := b.sel
		if sel == nil {
			sel = []string{"app", b.name}
		}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.name},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: b.min, MaxUnavailable: b.max, Selector: &metav1.LabelSelector{MatchLabels: wt.Sel(sel...)}}}
		if b.alwaysAllow {
			pdb.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
		}
		require.NoError(t, c.Create(ctx, pdb), "budget %s", b.name)
	}
	cl.waitForBudgets(ctx, t)
}

func (cl *cluster) createWorkload(ctx context.Context, t *testing.T, w workload) {
	t.Helper()
	appLabel := w.app
	if appLabel == "" {
		appLabel = w.name
	}
	podLabels := wt.Sel(append([]string{"app", appLabel}, w.labels...)...)
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	selector := &metav1.LabelSelector{MatchLabels: wt.Sel("app", appLabel)}
	controllerOf := func(obj client.Object) metav1.OwnerReference {
		gvk, err := apiutil.GVKForObject(obj, cl.plane.Scheme)
		require.NoError(t, err)
		return *metav1.NewControllerRef(obj, gvk)
	}
	var owner *metav1.OwnerReference
	switch w.kind {
	case "Deployment":
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.name},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(w.replicas), Selector: selector, Template: template}}
		require.NoError(t, cl.c.Create(ctx, d))
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.name + "-rs", OwnerReferences: []metav1.OwnerReference{controllerOf(d)}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(w.replicas), Selector: selector, Template: template}}
		require.NoError(t, cl.c.Create(ctx, rs))
		owner = ptr.To(controllerOf(rs))
	case "ReplicaSet":
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.name},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(w.replicas), Selector: selector, Template: template}}
		require.NoError(t, cl.c.Create(ctx, rs))
		owner = ptr.To(controllerOf(rs))
	case "StatefulSet":
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.name},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(w.replicas), Selector: selector, Template: template}}
		require.NoError(t, cl.c.Create(ctx, s))
		owner = ptr.To(controllerOf(s))
	case "":
	default:
		t.Fatalf("workload %s: unknown kind %q", w.name, w.kind)
	}
	for i, ps := range w.pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", w.name, i), Labels: maps.Clone(podLabels)}, Spec: *template.Spec.DeepCopy()}
		p.Spec.NodeName = ps.node
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		require.NoError(t, cl.c.Create(ctx, p))
		ready := corev1.ConditionFalse
		if ps.ready {
			ready = corev1.ConditionTrue
		}
		now := metav1.Now()
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: now},
		}}
		require.NoError(t, cl.c.Status().Update(ctx, p), "the status of pod %s", p.Name)
	}
}

type budgetStatus struct{ Expected, Desired, Healthy, Allowed int32 }

// waitForBudgets waits until the disruption controller has synced every budget to the
// status the fixture expects.
func (cl *cluster) waitForBudgets(ctx context.Context, t *testing.T) {
	t.Helper()
	want := map[string]budgetStatus{}
	for _, b := range budgets {
		want[b.name] = budgetStatus{Expected: b.want[0], Desired: b.want[1], Healthy: b.want[2], Allowed: b.want[3]}
	}
	var got map[string]budgetStatus
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var list policyv1.PodDisruptionBudgetList
		if err := cl.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		got = map[string]budgetStatus{}
		synced := true
		for _, pdb := range list.Items {
			s := pdb.Status
			got[pdb.Name] = budgetStatus{Expected: s.ExpectedPods, Desired: s.DesiredHealthy, Healthy: s.CurrentHealthy, Allowed: s.DisruptionsAllowed}
			synced = synced && s.ObservedGeneration == pdb.Generation
		}
		return synced && maps.Equal(got, want), nil
	})
	require.NoError(t, err, "the disruption controller did not write the expected budget statuses (expected, desired, healthy, allowed):\nwant %v\ngot  %v", want, got)
}

// cli runs a driverguard command line in-process.
func cli(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = app.Run(ctx, app.Streams{In: bytes.NewReader(nil), Out: &out, Err: &errOut}, args)
	return code, out.String(), errOut.String()
}

func (cl *cluster) writeValuesAfter(t *testing.T) string {
	t.Helper()
	path := filepath.Join(cl.dir, "after.yaml")
	require.NoError(t, os.WriteFile(path, []byte(valuesAfter), 0o600))
	return path
}

// inputsOf is the "inputs" record of a plan's JSON.
func inputsOf(t *testing.T, plan string) dgplan.InputRecord {
	t.Helper()
	var p struct{ Inputs dgplan.InputRecord }
	require.NoError(t, json.Unmarshal([]byte(plan), &p))
	return p.Inputs
}

func livePlan(ctx context.Context, t *testing.T, cl *cluster, values string) (int, string, *dgplan.Plan) {
	t.Helper()
	args := []string{"plan", "--kubeconfig", cl.kubeconfig, "-o", "json"}
	if values != "" {
		args = append(args, "-f", values)
	}
	code, out, errOut := cli(ctx, args...)
	require.Contains(t, []int{0, 1}, code, "plan failed: %s", errOut)
	var p dgplan.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &p), out)
	return code, out, &p
}

// TestEvictionsMatchPlan drains, through the Eviction API, every node whose driver pod the
// plan restarts, and compares each answer with the plan's prediction.
//
// The order matters, and is what the plan implies: a budget that allows k disruptions lets
// the first k of its pods on the node go (the plan's "free" ones, by name) and each accepted
// eviction uses one of them, so the free pods of a node are evicted first, by name, then the
// blocked ones, which must all be refused. (kubectl drain evicts concurrently and retries;
// which k go first is then a race, how many is not.)
//
// Real evictions, not dry runs: a dry-run eviction is judged against the budget as it is and
// does not use it up (checked below: budgets and pods are unchanged after the dry-run pass),
// so every pod is judged alone and one beyond the k its budget allows is accepted like a free
// one. The dry-run pass therefore only checks each pod alone: a free pod is accepted, a
// blocked one refused exactly when its budget allows nothing (or two budgets select it).
//
// The fixture keeps the nodes independent: every budget has its pods on one draining node at
// most (checked), so one node's evictions do not change another's budgets.
func TestEvictionsMatchPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := start(t)
	cl.setUp(ctx, t)

	code, _, p := livePlan(ctx, t, cl, cl.writeValuesAfter(t))
	actions := map[string]string{}
	for _, n := range p.Nodes {
		actions[n.Name] = n.Action
	}
	require.Equal(t, wantActions, actions, "node actions")
	assert.Equal(t, 1, code, "a blocked node stops the plan")
	assert.Contains(t, p.Reasons, "3 node(s) blocked by a drain blocker")

	// The plan's prediction for every pod on a node whose driver pod restarts.
	blocked := map[string]bool{}
	draining := map[string]bool{}
	for _, n := range p.Nodes {
		if n.Action != dgplan.NodeUpgrade && n.Action != dgplan.NodeChangeOwner && n.Action != dgplan.NodeBlocked {
			continue
		}
		draining[n.Name] = true
		for _, b := range n.Blockers {
			require.Equal(t, dgplan.BlockerPDB, b.Kind, "the fixture has no other blocker: %+v", b)
			require.True(t, b.Blocks, "%+v", b)
			blocked[b.Pod] = true
		}
	}
	var pods corev1.PodList
	require.NoError(t, cl.c.List(ctx, &pods))
	var pdbs policyv1.PodDisruptionBudgetList
	require.NoError(t, cl.c.List(ctx, &pdbs))
	budgetsOf := func(pod *corev1.Pod) []string {
		var out []string
		for _, pdb := range pdbs.Items {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			require.NoError(t, err)
			if pdb.Namespace == pod.Namespace && sel.Matches(labels.Set(pod.Labels)) {
				out = append(out, pdb.Name)
			}
		}
		return out
	}
	byNode := map[string][]*corev1.Pod{}
	budgetNode := map[string]string{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !draining[pod.Spec.NodeName] {
			continue
		}
		byNode[pod.Spec.NodeName] = append(byNode[pod.Spec.NodeName], pod)
		for _, b := range budgetsOf(pod) {
			if n, ok := budgetNode[b]; ok && n != pod.Spec.NodeName {
				t.Fatalf("fixture: budget %s has pods on two draining nodes (%s, %s): their evictions would not be independent", b, n, pod.Spec.NodeName)
			}
			budgetNode[b] = pod.Spec.NodeName
		}
	}
	for node := range byNode {
		// The plan's order: free pods by name, then the blocked ones.
		slices.SortFunc(byNode[node], func(a, b *corev1.Pod) int {
			if d := cmpBool(blocked[key(a)], blocked[key(b)]); d != 0 {
				return d
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	allowed := map[string]int32{}
	for _, pdb := range pdbs.Items {
		allowed[pdb.Name] = pdb.Status.DisruptionsAllowed
	}

	// Dry run: every free pod alone is accepted; a blocked one is refused only if its budget
	// allows no disruption at all (or two budgets select it). Nothing changes.
	t.Run("dry-run", func(t *testing.T) {
		for _, node := range slices.Sorted(maps.Keys(byNode)) {
			for _, pod := range byNode[node] {
				got := outcome(t, cl.evict(ctx, pod, true))
				bs := budgetsOf(pod)
				want := evicted
				switch {
				case len(bs) > 1:
					want = twoBudget
				case blocked[key(pod)] && allowed[bs[0]] == 0:
					want = refused
				}
				assert.Equal(t, want, got, "dry-run eviction of %s (plan: blocked %v, budgets %v)", key(pod), blocked[key(pod)], bs)
			}
		}
		var after policyv1.PodDisruptionBudgetList
		require.NoError(t, cl.c.List(ctx, &after))
		for i, pdb := range after.Items {
			assert.Equal(t, pdbs.Items[i].Status, pdb.Status, "a dry run changed the status of budget %s", pdb.Name)
		}
		var now corev1.PodList
		require.NoError(t, cl.c.List(ctx, &now))
		for _, pod := range now.Items {
			assert.Nil(t, pod.DeletionTimestamp, "a dry run deleted %s", key(&pod))
		}
	})

	predicted, got := map[string]string{}, map[string]string{}
	for _, node := range slices.Sorted(maps.Keys(byNode)) {
		for _, pod := range byNode[node] {
			predicted[key(pod)] = evicted
			if blocked[key(pod)] {
				predicted[key(pod)] = "refused"
			}
			o := outcome(t, cl.evict(ctx, pod, false))
			got[key(pod)] = o
			if o != evicted {
				o = "refused"
			}
			assert.Equal(t, predicted[key(pod)], o, "eviction of %s on %s (in the plan's order %v)", key(pod), node, names(byNode[node]))
		}
	}
	assert.Equal(t, wantEvictions, got, "the Eviction API's answers")
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func (cl *cluster) evict(ctx context.Context, pod *corev1.Pod, dryRun bool) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	if dryRun {
		ev.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return cl.cs.CoreV1().Pods(pod.Namespace).EvictV1(ctx, ev)
}

func outcome(t *testing.T, err error) string {
	t.Helper()
	switch {
	case err == nil:
		return evicted
	case apierrors.IsTooManyRequests(err):
		return refused
	case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "more than one PodDisruptionBudget"):
		return twoBudget
	}
	t.Fatalf("an eviction failed otherwise: %v", err)
	return ""
}

// TestLivePlanEqualsFilePlan plans the same cluster live and from files: the objects read back
// from the API server, written as `kubectl get -o yaml` would (a v1 List, apiVersion and kind
// on every item, no managedFields).
func TestLivePlanEqualsFilePlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl := start(t)
	cl.setUp(ctx, t)

	var (
		nodeList corev1.NodeList
		drivers  v1alpha1.RBLNDriverList
		policy   v1alpha1.RBLNClusterPolicy
		pods     corev1.PodList
		pdbs     policyv1.PodDisruptionBudgetList
		rss      appsv1.ReplicaSetList
		deploys  appsv1.DeploymentList
		stss     appsv1.StatefulSetList
	)
	for _, l := range []client.ObjectList{&nodeList, &drivers, &pods, &pdbs, &rss, &deploys, &stss} {
		require.NoError(t, cl.c.List(ctx, l))
	}
	require.NoError(t, cl.c.Get(ctx, client.ObjectKey{Name: v1alpha1.ClusterPolicyName}, &policy))
	var workloadObjs []client.Object
	for i := range pods.Items {
		workloadObjs = append(workloadObjs, &pods.Items[i])
	}
	for i := range pdbs.Items {
		workloadObjs = append(workloadObjs, &pdbs.Items[i])
	}
	for i := range rss.Items {
		workloadObjs = append(workloadObjs, &rss.Items[i])
	}
	for i := range deploys.Items {
		workloadObjs = append(workloadObjs, &deploys.Items[i])
	}
	for i := range stss.Items {
		workloadObjs = append(workloadObjs, &stss.Items[i])
	}
	var nodeObjs, driverObjs []client.Object
	for i := range nodeList.Items {
		nodeObjs = append(nodeObjs, &nodeList.Items[i])
	}
	for i := range drivers.Items {
		driverObjs = append(driverObjs, &drivers.Items[i])
	}
	files := map[string]string{
		"--nodes":          cl.writeObjects(t, "nodes.yaml", true, nodeObjs...),
		"--drivers":        cl.writeObjects(t, "drivers.yaml", true, driverObjs...),
		"--cluster-policy": cl.writeObjects(t, "cluster-policy.yaml", false, &policy),
		"--pods":           cl.writeObjects(t, "workloads.yaml", true, workloadObjs...),
	}
	var fromFiles []string
	for _, flag := range slices.Sorted(maps.Keys(files)) {
		fromFiles = append(fromFiles, flag, files[flag])
	}

	for _, tt := range []struct {
		name   string
		values string
		check  func(t *testing.T, p *dgplan.Plan)
	}{
		{"values", cl.writeValuesAfter(t), func(t *testing.T, p *dgplan.Plan) {
			assert.Equal(t, 3, p.Summary.Blocked, "the workloads were read")
			assert.Equal(t, [][]string{{"n-up-4"}}, p.Batches)
		}},
		{"drift only", "", func(t *testing.T, p *dgplan.Plan) {
			require.Len(t, p.Drift, 1, "%+v", p.Drift)
			assert.Equal(t, []string{dgplan.DriftStaleOwnerLabel, "n-stale"}, []string{p.Drift[0].Kind, p.Drift[0].Node})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			liveCode, live, p := livePlan(ctx, t, cl, tt.values)
			tt.check(t, p)
			args := append([]string{"plan", "-o", "json"}, fromFiles...)
			if tt.values != "" {
				args = append(args, "-f", tt.values)
			}
			fileCode, file, errOut := cli(ctx, args...)
			require.Contains(t, []int{0, 1}, fileCode, "plan from files failed: %s", errOut)
			assert.Equal(t, liveCode, fileCode, "exit codes")
			// The plans are compared without "inputs": what each was read from (the cluster or
			// the files, and when) differs by nature; the counts, which must agree, are checked.
			liveIn, fileIn := inputsOf(t, live), inputsOf(t, file)
			for _, part := range []func(dgplan.InputRecord) dgcluster.Source{
				func(r dgplan.InputRecord) dgcluster.Source { return r.Cluster.Nodes },
				func(r dgplan.InputRecord) dgcluster.Source { return r.Cluster.Drivers },
				func(r dgplan.InputRecord) dgcluster.Source { return r.Cluster.ClusterPolicy },
				func(r dgplan.InputRecord) dgcluster.Source { return r.Cluster.Workloads },
			} {
				assert.Equal(t, part(liveIn).Count, part(fileIn).Count, "objects read live and from files")
				assert.True(t, part(liveIn).Given && part(fileIn).Given)
			}
			assert.Equal(t, withoutInputs(t, "plan", live), withoutInputs(t, "plan", file), "the plan from files differs from the live plan")
		})
	}

	// check and preview read the cluster as plan does (#30): --live gives the verdict of the
	// same objects written to files, and says where it read them.
	values := cl.writeValuesAfter(t)
	for _, cmd := range []string{"check", "preview"} {
		t.Run(cmd+" --live", func(t *testing.T) {
			liveCode, live, errOut := cli(ctx, cmd, "-f", values, "--live", "--kubeconfig", cl.kubeconfig, "-o", "json")
			require.Contains(t, []int{0, 1}, liveCode, errOut)
			fileCode, file, errOut := cli(ctx, cmd, "-f", values, "--nodes", files["--nodes"], "--drivers", files["--drivers"],
				"--cluster-policy", files["--cluster-policy"], "-o", "json")
			require.Contains(t, []int{0, 1}, fileCode, errOut)
			assert.Equal(t, liveCode, fileCode, "exit codes")
			liveDoc, fileDoc := withoutInputs(t, cmd, live), withoutInputs(t, cmd, file)
			assert.Equal(t, fileDoc, liveDoc, "the verdict from files differs from the live one")
			assert.Contains(t, live, `"from": "the cluster of context`)
		})
	}
	t.Run("check --live: a stale owner label is drift, not a driver loss", func(t *testing.T) {
		code, out, errOut := cli(ctx, "check", "-f", values, "--kubeconfig", cl.kubeconfig, "-o", "json")
		require.Contains(t, []int{0, 1}, code, errOut)
		var rep struct {
			DriverLoss []struct{ Node string }
			Drift      []struct{ Kind, Node string }
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		assert.Empty(t, rep.DriverLoss)
		assert.Contains(t, rep.Drift, struct{ Kind, Node string }{dgplan.DriftStaleOwnerLabel, "n-stale"})
	})

	// #31: read live, the images are checked with the drivers' spec.imagePullSecrets, read from
	// --pull-secret-namespace (default: the kubeconfig context's namespace).
	t.Run("plan --live --check-images with the drivers' pull Secret", func(t *testing.T) {
		reg := registrytest.New(t, "robot", "s3cret-pa55", true)
		const ns = "npu-drivers"
		require.NoError(t, cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		require.NoError(t, cl.c.Create(ctx, registrytest.PullSecret(ns, "drivercred", reg.Host, "robot", "s3cret-pa55", false)))
		private := filepath.Join(cl.dir, "private.yaml")
		require.NoError(t, os.WriteFile(private, []byte("driver:\n  image:\n    registry: "+reg.Host+"\n  imagePullSecrets: [drivercred]\n"), 0o600))
		plan := func(extra ...string) *dgplan.Plan {
			args := append([]string{"plan", "-f", values, "-f", private, "--kubeconfig", cl.kubeconfig, "--check-images", "-o", "json"}, extra...)
			code, out, errOut := cli(ctx, args...)
			require.Contains(t, []int{0, 1}, code, errOut)
			var p dgplan.Plan
			require.NoError(t, json.Unmarshal([]byte(out), &p), out)
			return &p
		}
		first := plan("--pull-secret-namespace", ns)
		require.Positive(t, first.ImageCheck.Images)
		require.Equal(t, first.ImageCheck.Images, first.ImageCheck.Missing, "nothing published yet, every image missing: %+v", first.ImageWarnings)
		var published string
		for _, m := range first.MissingImages {
			published = m.Image
		}
		reg.Push(t, published)
		p := plan("--pull-secret-namespace", ns)
		assert.Equal(t, 1, p.ImageCheck.Found)
		assert.Equal(t, p.ImageCheck.Images-1, p.ImageCheck.Missing)
		for _, m := range p.MissingImages {
			assert.NotEqual(t, published, m.Image)
		}

		// The context's namespace ("default") holds no such Secret: warnings that say so.
		p = plan()
		assert.Zero(t, p.ImageCheck.Missing)
		assert.Equal(t, p.ImageCheck.Images, p.ImageCheck.NotVerified)
		require.NotEmpty(t, p.ImageWarnings)
		assert.Contains(t, p.ImageWarnings[0].Detail, "Secret default/drivercred: not found in namespace default")
	})
}

// withoutInputs is the JSON output of check, preview or plan without what says where the
// cluster was read from (its only part that differs between a live read and files of the same
// objects; plan's also records when).
func withoutInputs(t *testing.T, cmd, out string) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	rep := doc
	if cmd == "preview" {
		rep = doc["verdict"].(map[string]any)
	}
	delete(rep, "inputs")
	return doc
}

// writeObjects writes objects, with their apiVersion and kind and without managedFields, as a
// v1 List (asList) or a single document.
func (cl *cluster) writeObjects(t *testing.T, name string, asList bool, objs ...client.Object) string {
	t.Helper()
	items := make([]any, 0, len(objs))
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, cl.plane.Scheme)
		require.NoError(t, err)
		obj = obj.DeepCopyObject().(client.Object)
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		obj.SetManagedFields(nil)
		items = append(items, obj)
	}
	var doc any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	if !asList {
		require.Len(t, items, 1)
		doc = items[0]
	}
	data, err := yaml.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(cl.dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

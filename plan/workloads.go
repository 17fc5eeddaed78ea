package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
)

// Blocker kinds (docs/plan.md "Exit codes and JSON").
const (
	BlockerPDB           = "PodDisruptionBudget"
	BlockerSingleReplica = "SingleReplica"
	BlockerNoController  = "NoController"
	BlockerEmptyDir      = "EmptyDir"
	BlockerNPUPod        = "NPUPod"
)

// npuResourcePrefix marks an NPU pod: one that requests a rebellions.ai/ resource.
const npuResourcePrefix = "rebellions.ai/"

// Workloads are the pods of the cluster and what governs their eviction: Pods,
// PodDisruptionBudgets, and the ReplicaSets, Deployments and StatefulSets that give the scale
// of the pods' controllers.
type Workloads = decode.Workloads

// Blocker is a pod that would hold up, or be hurt by, the node's driver restart.
type Blocker struct {
	Kind   string `json:"kind"`
	Pod    string `json:"pod"` // namespace/name
	Detail string `json:"detail"`
	// Blocks is whether it stalls the rollout (the node is blocked); a SingleReplica blocker
	// only warns of an outage.
	Blocks bool `json:"blocks"`
}

// workloadIndex answers per node: the pods on it, the budgets that govern them, the
// controllers' scale.
type workloadIndex struct {
	byNode map[string][]*corev1.Pod
	// budgets are the PDBs with their pods and allowed disruptions.
	budgets []*budget
	// podBudgets maps a pod (namespace/name) to the budgets selecting it.
	podBudgets map[string][]*budget
	// replicas of a controller, by kind/namespace/name; rsOwner maps a ReplicaSet to its
	// Deployment.
	replicas map[string]int32
	rsOwner  map[string]string
}

type budget struct {
	pdb *policyv1.PodDisruptionBudget
	// allowed is the disruptions the budget allows now, as the disruption controller
	// computes them; expected and healthy are its inputs.
	allowed, healthy, desired, expected int32
	err                                 string
}

func key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// index builds the per-node view. Budgets are matched through a label index per namespace,
// so that 2,000 budgets over 50,000 pods cost a posting-list intersection each, not a scan.
func index(w *Workloads) *workloadIndex {
	ix := &workloadIndex{byNode: map[string][]*corev1.Pod{}, podBudgets: map[string][]*budget{}, replicas: map[string]int32{}, rsOwner: map[string]string{}}
	for i := range w.ReplicaSets {
		rs := &w.ReplicaSets[i]
		ix.replicas[key("ReplicaSet", rs.Namespace, rs.Name)] = ptrOr(rs.Spec.Replicas, 1)
		if c := metav1.GetControllerOf(rs); c != nil && c.Kind == "Deployment" {
			ix.rsOwner[key("ReplicaSet", rs.Namespace, rs.Name)] = key("Deployment", rs.Namespace, c.Name)
		}
	}
	for i := range w.Deployments {
		d := &w.Deployments[i]
		ix.replicas[key("Deployment", d.Namespace, d.Name)] = ptrOr(d.Spec.Replicas, 1)
	}
	for i := range w.StatefulSets {
		s := &w.StatefulSets[i]
		ix.replicas[key("StatefulSet", s.Namespace, s.Name)] = ptrOr(s.Spec.Replicas, 1)
	}
	type nsIndex struct {
		pods    []*corev1.Pod
		byLabel map[string][]int32
	}
	namespaces := map[string]*nsIndex{}
	for i := range w.Pods {
		p := &w.Pods[i]
		if p.Spec.NodeName != "" {
			ix.byNode[p.Spec.NodeName] = append(ix.byNode[p.Spec.NodeName], p)
		}
		ns := namespaces[p.Namespace]
		if ns == nil {
			ns = &nsIndex{byLabel: map[string][]int32{}}
			namespaces[p.Namespace] = ns
		}
		id := int32(len(ns.pods))
		ns.pods = append(ns.pods, p)
		for k, v := range p.Labels {
			ns.byLabel[k+"="+v] = append(ns.byLabel[k+"="+v], id)
		}
	}
	for i := range w.PDBs {
		pdb := &w.PDBs[i]
		b := &budget{pdb: pdb}
		ix.budgets = append(ix.budgets, b)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		ns := namespaces[pdb.Namespace]
		if err != nil || pdb.Spec.Selector == nil || ns == nil {
			if err != nil {
				b.err = err.Error()
			}
			continue // the disruption controller matches no pod with a nil or invalid selector
		}
		candidates := candidatesOf(pdb.Spec.Selector, ns.byLabel, len(ns.pods))
		var pods []*corev1.Pod
		for _, id := range candidates {
			if p := ns.pods[id]; sel.Matches(labels.Set(p.Labels)) {
				pods = append(pods, p)
			}
		}
		ix.compute(b, pods)
		for _, p := range pods {
			ix.podBudgets[podKey(p)] = append(ix.podBudgets[podKey(p)], b)
		}
	}
	return ix
}

// candidatesOf returns the pods a selector can match: the shortest posting list of its
// matchLabels, or every pod of the namespace when it has none.
func candidatesOf(sel *metav1.LabelSelector, byLabel map[string][]int32, n int) []int32 {
	var best []int32
	found := false
	for k, v := range sel.MatchLabels {
		list := byLabel[k+"="+v]
		if !found || len(list) < len(best) {
			best, found = list, true
		}
	}
	if found {
		return best
	}
	all := make([]int32, n)
	for i := range all {
		all[i] = int32(i)
	}
	return all
}

// compute is the disruption controller's arithmetic (pkg/controller/disruption): the expected
// count is the number of pods for an integer minAvailable, else the scale of the pods'
// controllers; the desired healthy count follows from minAvailable or maxUnavailable; the
// current healthy pods are the Ready ones not being deleted. A budget that expects no pod
// allows no disruption.
func (ix *workloadIndex) compute(b *budget, pods []*corev1.Pod) {
	spec := b.pdb.Spec
	for _, p := range pods {
		if p.DeletionTimestamp == nil && podReady(p) {
			b.healthy++
		}
	}
	switch {
	case spec.MaxUnavailable != nil:
		expected, err := ix.scale(pods)
		if err != "" {
			b.err = err
			return
		}
		unavailable, e := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if e != nil {
			b.err = e.Error()
			return
		}
		b.expected, b.desired = expected, max(0, expected-int32(unavailable))
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		b.expected, b.desired = int32(len(pods)), spec.MinAvailable.IntVal
	case spec.MinAvailable != nil:
		expected, err := ix.scale(pods)
		if err != "" {
			b.err = err
			return
		}
		minAvailable, e := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if e != nil {
			b.err = e.Error()
			return
		}
		b.expected, b.desired = expected, int32(minAvailable)
	default: // neither (policy/v1 defaults neither): the controller expects no pod
		b.expected, b.desired = 0, 0
	}
	b.allowed = max(0, b.healthy-b.desired)
	if b.expected <= 0 {
		b.allowed = 0
	}
}

// scale is the sum of the replicas of the distinct controllers of pods (a Deployment through
// its ReplicaSet), or why it cannot be known. Pods without a controller add nothing (the
// disruption controller only warns of them).
func (ix *workloadIndex) scale(pods []*corev1.Pod) (int32, string) {
	seen := map[string]bool{}
	var total int32
	for _, p := range pods {
		c := metav1.GetControllerOf(p)
		if c == nil {
			continue
		}
		k := ix.controllerKey(p.Namespace, c)
		if _, ok := ix.replicas[k]; !ok {
			return 0, fmt.Sprintf("the controller %s of pod %s is not among the workloads given", describe(k), podKey(p))
		}
		if !seen[k] {
			seen[k] = true
			total += ix.replicas[k]
		}
	}
	return total, ""
}

func (ix *workloadIndex) controllerKey(ns string, c *metav1.OwnerReference) string {
	k := key(c.Kind, ns, c.Name)
	if c.Kind == "ReplicaSet" {
		if d, ok := ix.rsOwner[k]; ok {
			return d
		}
	}
	return k
}

// blockers are the pods on node that hold up (or, SingleReplica, suffer from) the restart of
// its driver under the upgrade policy up: with drain enabled, PodDisruptionBudgets that would
// allow too few disruptions once the node drains, single-replica workloads without one, pods
// without a controller (unless drain.force) and emptyDir pods (unless
// drain.deleteEmptyDirData); and NPU pods without a controller unless npuPodDeletion.force
// (the operator deletes NPU pods before the driver restarts, drain or not).
func (ix *workloadIndex) blockers(node string, up *v1alpha1.UpgradePolicy) []Blocker {
	out := []Blocker{}
	var evicted []*corev1.Pod
	for _, p := range ix.byNode[node] {
		if skipped(p) {
			continue
		}
		controller := metav1.GetControllerOf(p)
		if npuPod(p) && controller == nil && !up.NPUPodDeletion.Force {
			out = append(out, Blocker{Kind: BlockerNPUPod, Pod: podKey(p), Blocks: true,
				Detail: "an NPU pod without a controller: the operator does not delete it while npuPodDeletion.force is false; delete it, or set npuPodDeletion.force"})
		}
		if !up.Drain.Enable || (up.Drain.PodSelector != "" && !matchesSelector(up.Drain.PodSelector, p)) {
			continue
		}
		evicted = append(evicted, p)
		if controller == nil && !up.Drain.Force {
			out = append(out, Blocker{Kind: BlockerNoController, Pod: podKey(p), Blocks: true,
				Detail: "no controller: the drain refuses to delete it while drain.force is false; move it, or set drain.force"})
		}
		if hasEmptyDir(p) && !up.Drain.DeleteEmptyDirData {
			out = append(out, Blocker{Kind: BlockerEmptyDir, Pod: podKey(p), Blocks: true,
				Detail: "an emptyDir volume: the drain refuses to delete its data while drain.deleteEmptyDirData is false"})
		}
		if controller != nil && len(ix.podBudgets[podKey(p)]) == 0 {
			k := ix.controllerKey(p.Namespace, controller)
			if r, ok := ix.replicas[k]; ok && r == 1 {
				out = append(out, Blocker{Kind: BlockerSingleReplica, Pod: podKey(p),
					Detail: fmt.Sprintf("the only replica of %s and no PodDisruptionBudget: it is down until it is rescheduled elsewhere", describe(k))})
			}
		}
	}
	out = append(out, ix.budgetBlockers(evicted)...)
	slices.SortFunc(out, func(a, b Blocker) int { return cmp.Or(strings.Compare(a.Pod, b.Pod), strings.Compare(a.Kind, b.Kind)) })
	return out
}

// budgetBlockers: of the pods a drain evicts that a budget selects, those beyond what the
// budget allows are refused by the Eviction API (429). When it allows none, every one is;
// otherwise the drain evicts as many as allowed (in name order here) and stalls on the rest.
// As the Eviction API decides: pending and deleting pods are deleted whatever the budgets; a
// pod two budgets select is refused (500); a pod that is not Ready uses a disruption too,
// unless its budget has unhealthyPodEvictionPolicy AlwaysAllow or its desired healthy pods.
func (ix *workloadIndex) budgetBlockers(evicted []*corev1.Pod) []Blocker {
	type group struct {
		b    *budget
		pods []*corev1.Pod
	}
	groups := map[*budget]*group{}
	var order []*budget
	var out []Blocker
	for _, p := range evicted {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodPending {
			continue
		}
		if bs := ix.podBudgets[podKey(p)]; len(bs) > 1 {
			names := make([]string, len(bs))
			for i, b := range bs {
				names[i] = b.pdb.Name
			}
			out = append(out, Blocker{Kind: BlockerPDB, Pod: podKey(p), Blocks: true, Detail: fmt.Sprintf(
				"selected by %d PodDisruptionBudgets (%s): the Eviction API refuses to evict a pod with more than one", len(bs), strings.Join(names, ", "))})
			continue
		}
		for _, b := range ix.podBudgets[podKey(p)] {
			g := groups[b]
			if g == nil {
				g = &group{b: b}
				groups[b] = g
				order = append(order, b)
			}
			g.pods = append(g.pods, p)
		}
	}
	for _, b := range order {
		g := groups[b]
		name := b.pdb.Namespace + "/" + b.pdb.Name
		if b.err != "" {
			for _, p := range g.pods {
				out = append(out, Blocker{Kind: BlockerPDB, Pod: podKey(p), Blocks: true, Detail: fmt.Sprintf("PodDisruptionBudget %s cannot be evaluated: %s", name, b.err)})
			}
			continue
		}
		alwaysAllow := b.pdb.Spec.UnhealthyPodEvictionPolicy != nil && *b.pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow
		unreadyFree := alwaysAllow || (b.healthy >= b.desired && b.desired > 0)
		var healthy []*corev1.Pod // the pods that use a disruption
		for _, p := range g.pods {
			if podReady(p) || !unreadyFree {
				healthy = append(healthy, p)
			}
		}
		slices.SortFunc(healthy, func(a, c *corev1.Pod) int { return strings.Compare(podKey(a), podKey(c)) })
		if int32(len(healthy)) <= b.allowed {
			continue
		}
		for _, p := range healthy[b.allowed:] {
			out = append(out, Blocker{Kind: BlockerPDB, Pod: podKey(p), Blocks: true, Detail: fmt.Sprintf(
				"PodDisruptionBudget %s allows %d disruption(s) (%d healthy, %d desired, %d expected) and the drain evicts %d of its pods from this node: the eviction is refused until more are healthy elsewhere",
				name, b.allowed, b.healthy, b.desired, b.expected, len(healthy))})
		}
	}
	return out
}

// driverPod returns the pod of DaemonSet ds on node (name, namespace), "" when unknown.
func (ix *workloadIndex) driverPod(node, ds string) (string, string) {
	if ix == nil || ds == "" {
		return "", ""
	}
	for _, p := range ix.byNode[node] {
		if c := metav1.GetControllerOf(p); c != nil && c.Kind == "DaemonSet" && c.Name == ds {
			return p.Name, p.Namespace
		}
	}
	return "", ""
}

// skipped are the pods a drain leaves alone: DaemonSet pods, mirror pods, finished pods.
func skipped(p *corev1.Pod) bool {
	if c := metav1.GetControllerOf(p); c != nil && c.Kind == "DaemonSet" {
		return true
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return true
	}
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasEmptyDir(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.EmptyDir != nil })
}

func npuPod(p *corev1.Pod) bool {
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			for name := range rl {
				if strings.HasPrefix(string(name), npuResourcePrefix) {
					return true
				}
			}
		}
	}
	return false
}

func matchesSelector(selector string, p *corev1.Pod) bool {
	sel, err := labels.Parse(selector)
	return err != nil || sel.Matches(labels.Set(p.Labels)) // an invalid selector is reported by the cluster policy's own check
}

// describe turns a kind/namespace/name key into "Kind namespace/name".
func describe(k string) string {
	kind, rest, _ := strings.Cut(k, "/")
	return kind + " " + rest
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

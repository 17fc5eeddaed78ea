package plan

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
)

// LabelUpgradeSkip on a node holds its driver: the operator does not upgrade it while the
// label is "true" (the node keeps its current driver).
const LabelUpgradeSkip = operator.LabelUpgradeSkip

// Driver actions.
const (
	DriverCreate    = "create"
	DriverUpdate    = "update"
	DriverDelete    = "delete"
	DriverUnchanged = "unchanged"
)

// Node actions (docs/plan.md): release's, plus held and blocked.
const (
	NodeNone        = release.NodeNone
	NodeUpgrade     = release.NodeUpgrade     // the driver pod restarts with a new image
	NodeChangeOwner = release.NodeChangeOwner // another RBLNDriver's pod replaces the current one
	NodeLoseDriver  = release.NodeLoseDriver
	NodeGainDriver  = release.NodeGainDriver
	NodeHeld        = "held"    // carries the skip label: keeps its current driver
	NodeBlocked     = "blocked" // its driver restart would stall on a drain blocker
)

// Drift kinds: what is wrong with the cluster now, whatever the values (routing's, which the
// audit reports too).
const (
	DriftUnowned             = routing.DriftUnowned
	DriftTie                 = routing.DriftTie
	DriftNFDLabelMissing     = routing.DriftNFDLabelMissing
	DriftFamilyLabelMissing  = routing.DriftFamilyLabelMissing
	DriftPoolNameCollision   = routing.DriftPoolNameCollision
	DriftDaemonSetNotCreated = routing.DriftDaemonSetNotCreated
	DriftInvalidImageTag     = routing.DriftInvalidImageTag
	DriftStaleOwnerLabel     = routing.DriftStaleOwnerLabel
)

// Inputs are what a plan is made from.
type Inputs struct {
	// Objects are the rendered values; nil plans "no change" (the current drivers as they are)
	// and reports the drift only.
	Objects *release.Objects
	// Cluster is the state now: the nodes, the RBLNDrivers, the RBLNClusterPolicy.
	Cluster *cluster.State
	// Workloads are the pods and what governs their eviction; nil when not known (no drain
	// blockers, and the manual procedure names the driver DaemonSet instead of its pod).
	Workloads *Workloads
	// Apply configures the decisions, as for `check`.
	Apply release.Options
	// AllowDriverLoss acknowledges the nodes that would lose their driver.
	AllowDriverLoss bool
	// CheckImages, when set, is asked for every image the plan needs.
	CheckImages func(ctx context.Context, images []string, after *release.Result) map[string]registry.ImageResult
}

// Plan is what applying the values does. Its JSON form is the `plan -o json` contract of
// docs/plan.md "Exit codes and JSON": keys may be added, never renamed or removed; lists are sorted as documented and never
// null.
type Plan struct {
	// Drivers are sorted by name.
	// Findings are the plan's findings (docs/output.md "A finding"): each denial, each node that would lose
	// its driver, each image missing (deny) or not verified (warn), the input warnings
	// (warn) and the drift now (audit: it fails nothing).
	Findings []finding.Finding `json:"findings"`
	Drivers  []DriverPlan      `json:"drivers"`
	// Nodes are sorted by name.
	Nodes []NodePlan `json:"nodes"`
	// Batches are the rollout with autoUpgrade: true, in order (owner, pool, node name);
	// empty with autoUpgrade: false, where Manual holds the procedure.
	Batches [][]string `json:"batches"`
	// Manual is the procedure per node with autoUpgrade: false, in the order of Batches.
	Manual []ManualNode `json:"manual"`
	// MissingImages are the (pool, image) pairs the registry lacks (--check-images), sorted.
	MissingImages []MissingImage `json:"missingImages"`
	// ImageWarnings are images the registry could not be asked about (not missing): not
	// verified, each with the reason.
	ImageWarnings []MissingImage `json:"imageWarnings"`
	// ImageCheck is what the registry check covered: checked or not, and of the images the
	// plan needs how many were found, missing, and not verified (and why).
	ImageCheck registry.Summary `json:"imageCheck"`
	// BlockerCheck says whether the drain blockers were looked for: only the pods (--pods, or
	// live) tell them, and without them a node that restarts may still stall.
	BlockerCheck BlockerCheck `json:"blockerCheck"`
	// Drift is what is wrong with the cluster now, sorted by node and kind (when the current
	// RBLNDrivers are not known, only owner labels no RBLNDriver can be named).
	Drift []Drift `json:"drift"`
	// Basis is what a node's driver now was read from: "routing" (the current RBLNDrivers)
	// or "ownerLabels" (their owner labels: the current drivers were not given).
	Basis string `json:"basis"`
	// InputWarnings are inputs that look like a failed read (an inventory without nodes, ...).
	InputWarnings []string `json:"inputWarnings"`
	// Denials are the objects the webhook would deny (not applied in the plan).
	Denials []Denial `json:"denials"`
	// Rollout is how the cluster policy rolls the plan out.
	Rollout Rollout `json:"rollout"`
	// Estimate is how long the batches take (EstimateRollout): null without batches.
	Estimate *Estimate `json:"estimate"`
	Summary  Summary   `json:"summary"`
	// Proceed is whether the plan can be applied as is (exit 0).
	Proceed bool `json:"proceed"`
	// Reasons say why it cannot, one line each.
	Reasons []string `json:"reasons"`
	// Rollback are the values that give the current RBLNDrivers back after the change (null
	// without values: nothing changes).
	Rollback *render.Rollback `json:"rollback"`
	// Inputs record what the plan was made from.
	Inputs InputRecord `json:"inputs"`
}

// InputRecord is what a plan was made from, as given: the change ticket's header, and
// "inputs" in JSON. Two plans of the same inputs differ in Time only.
type InputRecord struct {
	// ValuesFiles are the -f files as given, in order.
	ValuesFiles []string `json:"valuesFiles"`
	// Set are the --set-json, --set, --set-string and --set-file flags as given, in the order
	// Helm applies them ("--set driver.image.tag=3.2.3").
	Set []string `json:"set"`
	// Release is --release ("" without); ReleaseName the release the objects are judged as.
	Release     string `json:"release"`
	ReleaseName string `json:"releaseName"`
	// Cluster says what each part of the cluster was read from, and how many objects.
	Cluster cluster.Sources `json:"cluster"`
	// The flags that change the verdict, as given: the policy directories (--policy), the
	// policies turned off (--disable), the enforcement overrides (--enforcement NAME=MODE),
	// --policy-fail-open, and --allow-driver-loss (nodes that lose their driver do not stop
	// the plan).
	PolicyDirs      []string          `json:"policyDirs"`
	Disable         []string          `json:"disable"`
	Enforcement     map[string]string `json:"enforcement"`
	PolicyFailOpen  bool              `json:"policyFailOpen"`
	AllowDriverLoss bool              `json:"allowDriverLoss"`
	// Version is the driverguard that made the plan; Time when (UTC, RFC 3339).
	Version string `json:"version"`
	Time    string `json:"time"`
}

// DriverPlan is what happens to one RBLNDriver.
type DriverPlan struct {
	Name       string `json:"name"`
	Action     string `json:"action"`
	OldVersion string `json:"oldVersion"`
	NewVersion string `json:"newVersion"`
	// SelectorChange is whether spec.nodeSelector changes.
	SelectorChange bool   `json:"selectorChange"`
	OldSelector    string `json:"oldSelector,omitempty"`
	NewSelector    string `json:"newSelector,omitempty"`
	// OldNodeSelector is the current spec.nodeSelector (the rollback of a change).
	OldNodeSelector map[string]string `json:"oldNodeSelector,omitempty"`
}

// NodePlan is what happens on one node.
type NodePlan struct {
	Name     string `json:"name"`
	Action   string `json:"action"`
	OldOwner string `json:"oldOwner"`
	NewOwner string `json:"newOwner"`
	OldImage string `json:"oldImage"`
	NewImage string `json:"newImage"`
	// Pool is the node's pool after the change ("" for none).
	Pool string `json:"pool"`
	// Reason is the routing reason of docs/routing.md "`route -o json` contract" when the node gets no driver or no image.
	Reason   string    `json:"reason"`
	Blockers []Blocker `json:"blockers"`
	// Restart is whether the node's driver pod is replaced (upgrade, change-owner), the
	// rollout's unit of work.
	Restart bool `json:"-"`
	oldPool string
}

// BlockerCheck is what the drain blockers were looked for on: Checked with the pods, and of
// the nodes whose driver pod restarts (the only ones drained), how many.
type BlockerCheck struct {
	// Checked is whether the pods were read (--pods, or live): without them no blocker can
	// be found, and "none" would be a guess.
	Checked bool `json:"checked"`
	// Nodes counts the nodes that restart their driver: those whose blockers matter.
	Nodes int `json:"nodes"`
	// Drain is drain.enable: the drain's blockers (budgets, single replicas, pods without a
	// controller, emptyDir pods) apply on top of NPU pods.
	Drain bool `json:"drain"`
	// NPUPods is whether NPU pods without a controller block (npuPodDeletion.force false).
	NPUPods bool `json:"npuPods"`
}

// Unchecked reports whether blockers may exist that were not looked for: nodes restart, a
// blocker is possible under the upgrade policy, and the pods were not read.
func (c BlockerCheck) Unchecked() bool { return !c.Checked && c.Nodes > 0 && (c.Drain || c.NPUPods) }

// Caveat says what was not checked, "" when nothing was missed.
func (c BlockerCheck) Caveat() string {
	if !c.Unchecked() {
		return ""
	}
	return "drain blockers not checked: " + c.Missed()
}

// Missed says why the blockers were not checked and what they may be ("" when nothing was
// missed).
func (c BlockerCheck) Missed() string {
	if !c.Unchecked() {
		return ""
	}
	var kinds []string
	if c.Drain {
		kinds = append(kinds, "a PodDisruptionBudget", "a pod without a controller", "an emptyDir pod")
	}
	if c.NPUPods {
		kinds = append(kinds, "an NPU pod")
	}
	what := kinds[len(kinds)-1]
	if len(kinds) > 1 {
		what = strings.Join(kinds[:len(kinds)-1], ", ") + " or " + what
	}
	nodes := "the node that restarts its driver"
	if c.Nodes > 1 {
		nodes = fmt.Sprintf("the %d nodes that restart their driver", c.Nodes)
	}
	return fmt.Sprintf("the pods were not given (--pods, or --live): %s may stall on %s", nodes, what)
}

// Rollout is the cluster policy's upgrade settings as the plan applies them: the batches,
// and the waits of one node's upgrade (what a timeline of the rollout is estimated from).
// A timeout of 0 waits indefinitely.
type Rollout struct {
	AutoUpgrade         bool  `json:"autoUpgrade"`
	MaxParallelUpgrades int32 `json:"maxParallelUpgrades"`
	Drain               bool  `json:"drain"`
	// DrainTimeoutSeconds is drain.timeoutSeconds (a wait only with Drain).
	DrainTimeoutSeconds int32 `json:"drainTimeoutSeconds"`
	// NPUPodDeletionTimeoutSeconds is npuPodDeletion.timeoutSeconds: the operator deletes a
	// node's NPU pods before its driver restarts, drain or not.
	NPUPodDeletionTimeoutSeconds int32 `json:"npuPodDeletionTimeoutSeconds"`
	// WaitForCompletion is whether waitForCompletion.podSelector names pods to wait on, for
	// at most WaitForCompletionTimeoutSeconds.
	WaitForCompletion               bool  `json:"waitForCompletion"`
	WaitForCompletionTimeoutSeconds int32 `json:"waitForCompletionTimeoutSeconds"`
	// Reboot is reboot.enable: the node reboots and is waited on for at most
	// RebootTimeoutSeconds to return Ready.
	Reboot               bool  `json:"reboot"`
	RebootTimeoutSeconds int32 `json:"rebootTimeoutSeconds"`
}

// ManualNode is the procedure of one node's upgrade with autoUpgrade: false (OnDelete).
type ManualNode struct {
	Node  string   `json:"node"`
	Steps []string `json:"steps"`
}

// MissingImage is a pool's image the registry lacks, or (in ImageWarnings) one it could not
// be asked about.
type MissingImage struct {
	Pool   string `json:"pool"`
	Image  string `json:"image"`
	Detail string `json:"detail,omitempty"`
	// Reason is why an image of ImageWarnings was not verified (registry.Reason); Why says it
	// in words (which credentials were refused, what did not answer).
	Reason string `json:"reason,omitempty"`
	Why    string `json:"why,omitempty"`
}

// Drift is one problem of the cluster now (routing.NodeDrift, the audit's too).
type Drift = routing.Drift

// Denial is an object the webhook would deny.
type Denial struct {
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Findings []string `json:"findings"`
}

// Summary counts the nodes by action, and the batches.
type Summary struct {
	Upgrade     int `json:"upgrade"`
	ChangeOwner int `json:"changeOwner"`
	LoseDriver  int `json:"loseDriver"`
	GainDriver  int `json:"gainDriver"`
	Held        int `json:"held"`
	Blocked     int `json:"blocked"`
	Batches     int `json:"batches"`
}

// Make computes the plan.
func Make(ctx context.Context, in Inputs) (*Plan, error) {
	current := in.Cluster
	nodes := current.Nodes()

	objs := in.Objects
	if objs == nil { // no change: the current drivers and cluster policy, as they are
		objs = &release.Objects{ClusterPolicy: current.ClusterPolicy(), Drivers: current.Drivers()}
	}
	res, err := release.Apply(ctx, *objs, current, in.Apply)
	if err != nil {
		return nil, err
	}
	before := res.Before
	p := &Plan{Batches: [][]string{}, Manual: []ManualNode{}, MissingImages: []MissingImage{}, ImageWarnings: []MissingImage{}, ImageCheck: registry.NotChecked(),
		Drift: res.Drift, Basis: res.Basis, InputWarnings: res.InputWarnings, Denials: []Denial{}, Reasons: []string{},
		Inputs: InputRecord{ValuesFiles: []string{}, Set: []string{}, Cluster: res.Sources, PolicyDirs: []string{}, Disable: []string{},
			Enforcement: map[string]string{}, AllowDriverLoss: in.AllowDriverLoss}}
	if p.InputWarnings == nil {
		p.InputWarnings = []string{}
	}
	if p.Drift == nil {
		p.Drift = []Drift{}
	}
	p.Drivers = driverPlans(res, current)
	for _, j := range res.Objects {
		if !j.Verdict.Allowed() {
			d := Denial{Kind: j.Kind, Name: j.Name}
			for _, f := range j.Verdict.Denials {
				d.Findings = append(d.Findings, f.Text())
			}
			p.Denials = append(p.Denials, d)
		}
		p.Findings = append(p.Findings, j.Verdict.Findings()...)
		p.Findings = append(p.Findings, j.Verdict.OmittedFindings()...)
	}

	policy := effectivePolicy(res, current.ClusterPolicy())
	up := policy.Spec.Driver.UpgradePolicy
	p.Rollout = Rollout{AutoUpgrade: up.AutoUpgrade, MaxParallelUpgrades: up.MaxParallelUpgrades, Drain: up.Drain.Enable,
		DrainTimeoutSeconds: up.Drain.TimeoutSeconds, NPUPodDeletionTimeoutSeconds: up.NPUPodDeletion.TimeoutSeconds,
		WaitForCompletion: up.WaitForCompletion.PodSelector != "", WaitForCompletionTimeoutSeconds: up.WaitForCompletion.TimeoutSeconds,
		Reboot: up.Reboot.Enable, RebootTimeoutSeconds: up.Reboot.RebootTimeoutSeconds}

	labels := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		labels[n.Name] = n.Labels
	}
	p.Nodes = nodePlans(res.Changes, labels)

	var wl *workloadIndex
	if in.Workloads != nil {
		wl = index(in.Workloads)
	}
	p.BlockerCheck = BlockerCheck{Checked: wl != nil, Drain: up.Drain.Enable, NPUPods: !up.NPUPodDeletion.Force}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if n.Restart {
			p.BlockerCheck.Nodes++
		}
		if !n.Restart || wl == nil {
			continue
		}
		n.Blockers = wl.blockers(n.Name, &up)
		if slices.ContainsFunc(n.Blockers, func(b Blocker) bool { return b.Blocks }) {
			n.Action = NodeBlocked
		}
	}
	p.rollout(&up, wl, before)

	if in.CheckImages != nil {
		p.checkImages(ctx, res, in.CheckImages)
	}
	p.summarize(res, in.AllowDriverLoss)
	p.completeFindings(in.AllowDriverLoss)
	return p, nil
}

// effectivePolicy is the RBLNClusterPolicy after the release: the rendered one if it was
// admitted, else the current one, else the defaults.
func effectivePolicy(res *release.Result, current *v1alpha1.RBLNClusterPolicy) *v1alpha1.RBLNClusterPolicy {
	for _, j := range res.Objects {
		if j.Kind == "RBLNClusterPolicy" && j.ClusterPolicy != nil && j.Verdict.Allowed() {
			return j.ClusterPolicy
		}
	}
	if current != nil {
		return current
	}
	return &v1alpha1.RBLNClusterPolicy{Spec: v1alpha1.RBLNClusterPolicySpec{Driver: v1alpha1.ClusterDriverSpec{
		UpgradePolicy: v1alpha1.UpgradePolicy{MaxParallelUpgrades: 1, NPUPodDeletion: v1alpha1.NPUPodDeletionSpec{TimeoutSeconds: 300}}}}}
}

func driverPlans(res *release.Result, current *cluster.State) []DriverPlan {
	drivers := current.Drivers()
	cur := make(map[string]*v1alpha1.RBLNDriver, len(drivers))
	for i := range drivers {
		cur[drivers[i].Name] = &drivers[i]
	}
	var out []DriverPlan
	for _, j := range res.Objects {
		if j.Kind != "RBLNDriver" || j.Driver == nil {
			continue
		}
		d := DriverPlan{Name: j.Name, Action: DriverCreate, NewVersion: j.Driver.Spec.Version, NewSelector: decision.FormatSelector(j.Driver.Spec.NodeSelector)}
		if old := cur[j.Name]; old != nil {
			d.OldVersion, d.OldSelector, d.OldNodeSelector = old.Spec.Version, decision.FormatSelector(old.Spec.NodeSelector), old.Spec.NodeSelector
			d.Action = DriverUpdate
			if equality.Semantic.DeepEqual(old.Spec, j.Driver.Spec) {
				d.Action = DriverUnchanged
			}
			d.SelectorChange = d.OldSelector != d.NewSelector
		} else {
			d.SelectorChange = true
		}
		if !j.Verdict.Allowed() { // denied: not applied, so nothing changes
			d.Action, d.NewVersion, d.NewSelector, d.SelectorChange = DriverUnchanged, d.OldVersion, d.OldSelector, false
			if _, ok := cur[j.Name]; !ok {
				continue
			}
		}
		out = append(out, d)
	}
	for _, name := range res.Deleted {
		old := cur[name]
		out = append(out, DriverPlan{Name: name, Action: DriverDelete, OldVersion: old.Spec.Version, OldSelector: decision.FormatSelector(old.Spec.NodeSelector),
			OldNodeSelector: old.Spec.NodeSelector, SelectorChange: true})
	}
	seen := map[string]bool{}
	for _, d := range out {
		seen[d.Name] = true
	}
	for name, old := range cur { // current drivers the release neither renders nor deletes
		if !seen[name] {
			out = append(out, DriverPlan{Name: name, Action: DriverUnchanged, OldVersion: old.Spec.Version, NewVersion: old.Spec.Version,
				OldSelector: decision.FormatSelector(old.Spec.NodeSelector), NewSelector: decision.FormatSelector(old.Spec.NodeSelector)})
		}
	}
	slices.SortFunc(out, func(a, b DriverPlan) int { return strings.Compare(a.Name, b.Name) })
	if out == nil {
		out = []DriverPlan{}
	}
	return out
}

// nodePlans are the release's node changes as plan actions: a restart on a node that carries
// the skip label is held.
func nodePlans(changes []release.NodeChange, labels map[string]map[string]string) []NodePlan {
	out := make([]NodePlan, 0, len(changes))
	for _, c := range changes {
		n := NodePlan{Name: c.Node, Action: c.Action, OldOwner: c.From, NewOwner: c.To, OldImage: c.OldImage, NewImage: c.NewImage,
			Pool: c.Pool, Reason: c.Reason, oldPool: c.OldPool, Blockers: []Blocker{}}
		if cur := labels[c.Node][operator.LabelOwner]; c.Action == NodeNone && c.From == "" && cur != "" && !operator.InScope(labels[c.Node]) {
			// Out of the operator's scope with an owner label: the operator removes the label,
			// and the driver pod its DaemonSet runs there goes, whatever the values.
			n.Action, n.OldOwner, n.Reason = NodeLoseDriver, cur, routing.ReasonOutOfScope
		}
		n.Restart = n.Action == NodeUpgrade || n.Action == NodeChangeOwner
		if n.Restart && labels[c.Node][LabelUpgradeSkip] == "true" {
			n.Action, n.Restart = NodeHeld, false
		}
		out = append(out, n)
	}
	return out
}

// rollout orders the nodes whose driver pod is replaced: in batches of maxParallelUpgrades
// (0: all at once) with autoUpgrade, as a manual procedure without. Held and blocked nodes are
// left out (they are reported as such).
func (p *Plan) rollout(up *v1alpha1.UpgradePolicy, wl *workloadIndex, before *routing.Result) {
	var todo []*NodePlan
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n.Restart && n.Action != NodeBlocked {
			todo = append(todo, n)
		}
	}
	slices.SortFunc(todo, func(a, b *NodePlan) int {
		return cmp.Or(strings.Compare(a.NewOwner, b.NewOwner), strings.Compare(a.Pool, b.Pool), strings.Compare(a.Name, b.Name))
	})
	if !up.AutoUpgrade {
		daemonSets := map[string]string{}
		for _, pool := range before.Pools {
			daemonSets[pool.Name+"\x00"+pool.Owner] = pool.DaemonSet
		}
		for _, n := range todo {
			p.Manual = append(p.Manual, ManualNode{Node: n.Name, Steps: manualSteps(n, up, wl, daemonSets[n.oldPool+"\x00"+n.OldOwner])})
		}
		return
	}
	size := int(up.MaxParallelUpgrades)
	if size <= 0 {
		size = len(todo)
	}
	for batch := range slices.Chunk(todo, max(size, 1)) {
		names := make([]string, len(batch))
		for i, n := range batch {
			names[i] = n.Name
		}
		p.Batches = append(p.Batches, names)
	}
}

// manualSteps is what an operator does on one node with OnDelete DaemonSets (docs/plan.md "Without autoUpgrade: the manual procedure"): shell
// commands to paste, so every name in them is a shell word (shellArg) and every comment one
// line (shellComment), whatever the inventory holds.
func manualSteps(n *NodePlan, up *v1alpha1.UpgradePolicy, wl *workloadIndex, daemonSet string) []string {
	node := shellArg(n.Name)
	steps := []string{"kubectl cordon " + node}
	if up.Drain.Enable {
		d := up.Drain
		cmd := "kubectl drain " + node + " --ignore-daemonsets"
		if d.DeleteEmptyDirData {
			cmd += " --delete-emptydir-data"
		}
		if d.Force {
			cmd += " --force"
		}
		if d.PodSelector != "" {
			cmd += " --pod-selector=" + shellArg(d.PodSelector)
		}
		if d.TimeoutSeconds > 0 {
			cmd += fmt.Sprintf(" --timeout=%ds", d.TimeoutSeconds)
		}
		steps = append(steps, cmd)
	}
	if pod, ns := wl.driverPod(n.Name, daemonSet); pod != "" {
		steps = append(steps, fmt.Sprintf("kubectl delete pod -n %s %s  %s", shellArg(ns), shellArg(pod),
			shellComment(fmt.Sprintf("the %s driver pod; %s", n.OldOwner, describeNew(n)))))
	} else {
		steps = append(steps,
			fmt.Sprintf("kubectl get pods -A --field-selector %s | grep %s  %s", shellArg("spec.nodeName="+n.Name), shellArg(cmp.Or(daemonSet, n.OldOwner)),
				shellComment(fmt.Sprintf("the %s driver pod (the pods were not given)", n.OldOwner))),
			"kubectl delete pod -n NAMESPACE POD  "+shellComment("NAMESPACE and POD: the pod found above; "+describeNew(n)))
	}
	return append(steps, "kubectl uncordon "+node)
}

// shellSafe are the characters a shell word may hold unquoted (no globbing, expansion or
// word splitting).
func shellSafe(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/:=@%+,-", r)
}

// shellArg is s as one shell word: as it is when every character is safe, else single-quoted;
// control characters (a newline in a name from a file) are written as Go escapes inside the
// quotes — no Kubernetes name holds one, so the command then fails naming it rather than
// running what follows.
func shellArg(s string) string {
	if s != "" && !strings.HasPrefix(s, "-") && strings.IndexFunc(s, func(r rune) bool { return !shellSafe(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(escapeControl(s), "'", `'\''`) + "'"
}

// shellComment is a shell comment of one line.
func shellComment(s string) string { return "# " + escapeControl(s) }

// escapeControl writes control characters and bytes that are not UTF-8 as Go escapes.
func escapeControl(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
}

// describeNew is what replaces the deleted driver pod: the pool's new image (its tag, the
// repository stays that of the pool), from the new owner's DaemonSet on a change of owner.
func describeNew(n *NodePlan) string {
	img := n.NewImage
	if i := strings.LastIndexByte(img, ':'); i > strings.LastIndexByte(img, '/') {
		img = "tag " + img[i+1:]
	}
	if n.NewOwner != n.OldOwner {
		return fmt.Sprintf("%s's DaemonSet starts its pod (%s)", n.NewOwner, img)
	}
	return fmt.Sprintf("its DaemonSet starts the new pod (%s)", img)
}

// checkImages asks for every image of a pool after the change.
func (p *Plan) checkImages(ctx context.Context, res *release.Result, check func(context.Context, []string, *release.Result) map[string]registry.ImageResult) {
	after := res.Routing
	images := registry.Images(after)
	results := check(ctx, images, res)
	p.ImageCheck = registry.Summarize(images, results)
	for _, pool := range after.Pools {
		if pool.Image == "" {
			continue
		}
		r, ok := results[pool.Image]
		if !ok { // asked for, never answered: not verified, as Summarize counts it
			r = registry.ImageResult{Image: pool.Image, Status: registry.Warning, Reason: registry.ReasonNotChecked, Message: "could not verify " + pool.Image + " (not-checked): no result"}
		}
		switch r.Status {
		case registry.NotFound:
			p.MissingImages = append(p.MissingImages, MissingImage{Pool: pool.Name, Image: pool.Image, Detail: r.Message})
		case registry.Warning:
			p.ImageWarnings = append(p.ImageWarnings, MissingImage{Pool: pool.Name, Image: pool.Image, Detail: r.Message, Reason: string(r.Reason), Why: r.Cause()})
		}
	}
	sortImages := func(s []MissingImage) {
		slices.SortFunc(s, func(a, b MissingImage) int {
			return cmp.Or(strings.Compare(a.Pool, b.Pool), strings.Compare(a.Image, b.Image))
		})
	}
	sortImages(p.MissingImages)
	sortImages(p.ImageWarnings)
}

func (p *Plan) summarize(res *release.Result, allowLoss bool) {
	s := &p.Summary
	for _, n := range p.Nodes {
		switch n.Action {
		case NodeUpgrade:
			s.Upgrade++
		case NodeChangeOwner:
			s.ChangeOwner++
		case NodeLoseDriver:
			s.LoseDriver++
		case NodeGainDriver:
			s.GainDriver++
		case NodeHeld:
			s.Held++
		case NodeBlocked:
			s.Blocked++
		}
	}
	s.Batches = len(p.Batches)
	if len(p.Batches) > 0 {
		p.Estimate = EstimateRollout(p.Rollout, len(p.Batches))
	}
	if len(p.Denials) > 0 {
		p.Reasons = append(p.Reasons, fmt.Sprintf("%d object(s) the webhook would deny", len(p.Denials)))
	}
	if s.LoseDriver > 0 && !allowLoss {
		p.Reasons = append(p.Reasons, fmt.Sprintf("%d node(s) would lose their driver (acknowledge with --allow-driver-loss)", s.LoseDriver))
	}
	if s.Blocked > 0 {
		p.Reasons = append(p.Reasons, fmt.Sprintf("%d node(s) blocked by a drain blocker", s.Blocked))
	}
	if len(p.MissingImages) > 0 {
		p.Reasons = append(p.Reasons, fmt.Sprintf("%d image(s) missing from their registry", len(p.MissingImages)))
	}
	p.Proceed = len(p.Reasons) == 0
}

// completeFindings adds to the plan's findings (its objects' verdicts) those of the nodes and
// images it found: each node that would lose its driver (deny, warn when acknowledged), each
// image missing (deny) or not verified (warn), the input warnings (warn), the drift now
// (audit). It is the last step of Make.
func (p *Plan) completeFindings(allowLoss bool) {
	loss := finding.Deny
	if allowLoss {
		loss = finding.Warn
	}
	for _, n := range p.Nodes {
		if n.Action == NodeLoseDriver {
			p.Findings = append(p.Findings, finding.Finding{Rule: finding.RuleDriverLoss, Level: loss,
				Object:  finding.Object{Kind: finding.KindNode, Name: n.Name},
				Message: fmt.Sprintf("owned by %s now, would get no driver (%s)", n.OldOwner, cmp.Or(n.Reason, "-")), Nodes: []string{n.Name}})
		}
	}
	for _, m := range p.MissingImages {
		p.Findings = append(p.Findings, finding.Finding{Rule: finding.RuleDriverImageNotFound, Level: finding.Deny,
			Object: finding.Object{Kind: "Pool", Name: m.Pool}, Message: "image " + m.Image + " is missing from its registry: " + m.Detail})
	}
	for _, m := range p.ImageWarnings {
		p.Findings = append(p.Findings, finding.Finding{Rule: finding.RuleDriverImageNotVerified, Level: finding.Warn,
			Object: finding.Object{Kind: "Pool", Name: m.Pool}, Message: "image " + m.Image + " was not verified: " + cmp.Or(m.Why, m.Detail)})
	}
	p.Findings = append(p.Findings, release.InputFindings(p.InputWarnings, p.Drift)...)
	if p.Findings == nil {
		p.Findings = []finding.Finding{}
	}
}

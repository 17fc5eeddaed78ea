package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/routing"
)

var daemonSetGVK = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// DaemonSetMutator keeps rbln-npu-operator's DaemonSets as the operator composes them (package
// operator): the driver or RSMD image and its pull policy, the scope and owner keys of the pod
// nodeSelector, and the OnDelete update strategy. On a DaemonSet the operator rendered
// correctly it changes nothing; where it corrects one (an operator that predates family image
// paths, a hand edit, an RSMD image with a stale tag) it says what it changed.
type DaemonSetMutator struct {
	state State
}

// NewDaemonSetMutator returns the DaemonSet decisions over state.
func NewDaemonSetMutator(state State) *DaemonSetMutator {
	return &DaemonSetMutator{state: state}
}

// DaemonSetPlan is what the operator composes for one of its DaemonSets and what differs.
// Applying it twice changes nothing the second time.
type DaemonSetPlan struct {
	// Container is the container whose image is kept, Image the image and PullPolicy its pull
	// policy ("" leaves the pull policy to the API server's default, as the operator does).
	Container  string
	Image      string
	PullPolicy string
	// NodeSelector holds the keys kept on spec.template.spec.nodeSelector (other keys, the
	// pool's labels among them, are left alone).
	NodeSelector map[string]string
	// Corrections say, one per field, what differs from what the operator composes and what
	// the webhook sets instead; none means the DaemonSet is left unchanged (no patch).
	Corrections []string
}

var (
	instanceLabelPath = field.NewPath("metadata", "labels").Key(operator.LabelInstance)
	podNodeSelector   = field.NewPath("spec", "template", "spec", "nodeSelector")
	containersPath    = field.NewPath("spec", "template", "spec", "containers")
)

// Plan decides the mutation of ds. It returns no plan and no denial when ds is not one of the
// operator's DaemonSets (operator.Recognize). Its denial names what is missing instead of
// guessing: the instance label, the RBLNDriver it names, a pool label (driver DaemonSet), the
// container, or a composable image. An error means the cluster view is not ready (503).
func (m *DaemonSetMutator) Plan(ctx context.Context, ds *appsv1.DaemonSet) (*DaemonSetPlan, *field.Error, error) {
	kind, cr, poolLabel := operator.Recognize(ds.Labels)
	if kind == operator.NotOperator {
		return nil, nil, nil
	}
	component := ds.Labels[operator.LabelComponent]
	if cr == "" {
		return nil, field.Required(instanceLabelPath, fmt.Sprintf(
			"rbln-npu-operator's %s DaemonSets name their RBLNDriver in this label; set it to the RBLNDriver's name", component)), nil
	}
	snap, err := m.state.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	drv, ok := snap.Driver(cr)
	if !ok {
		return nil, &field.Error{Type: field.ErrorTypeNotFound, Field: instanceLabelPath.String(), BadValue: cr, Detail: fmt.Sprintf(
			"RBLNDriver %q does not exist, so the image cannot be composed; create the RBLNDriver first or fix the label", cr)}, nil
	}
	if errs := validation.ValidateDriver(drv); len(errs) > 0 {
		return nil, field.Invalid(instanceLabelPath, cr, fmt.Sprintf(
			"RBLNDriver %q is invalid (%s); fix the RBLNDriver first", cr, errs.ToAggregate().Error())), nil
	}
	plan := &DaemonSetPlan{}
	podSpec := &ds.Spec.Template.Spec
	switch kind {
	case operator.DriverKind:
		plan.Container = operator.ContainerDriver
		pool, perr := operator.PoolOf(podSpec.NodeSelector, routing.OptionsFor(snap.ClusterPolicy()).RDS)
		if perr != nil {
			return nil, field.Required(podNodeSelector, fmt.Sprintf(
				"the pool cannot be composed from it (%s): rbln-npu-operator's driver DaemonSets select the pool's %s, %s, %s and %s; driverguard never guesses a pool",
				poolSelectorProblem(perr), operator.LabelFamily, operator.LabelOSID, operator.LabelOSVersion, operator.LabelKernel)), nil
		}
		if plan.Image, err = routing.DriverImage(&drv.Spec, pool); err != nil {
			return nil, field.Invalid(podNodeSelector, decision.FormatSelector(pool.NodeSelector(cr)), fmt.Sprintf(
				"no valid driver image can be composed for this pool from RBLNDriver %q (InvalidImageTag): %v", cr, err)), nil
		}
		plan.PullPolicy = operator.DriverPullPolicy(string(drv.Spec.ImagePullPolicy), drv.Spec.Version)
		plan.NodeSelector = map[string]string{operator.LabelOwner: cr, operator.LabelDeployDriver: operator.DeployDriverTrue}
		if poolLabel != pool.Name {
			plan.Corrections = append(plan.Corrections, fmt.Sprintf(
				"its %s label is %q, but rbln-npu-operator names the pool of this nodeSelector %q (DaemonSet %s): an operator that predates family pools made it; driverguard corrects its image and selector, the operator replaces it once upgraded",
				operator.LabelPool, poolLabel, pool.Name, operator.DriverDaemonSet(cr, pool.Name)))
		}
	case operator.SMDKind:
		plan.Container = operator.ContainerSMD
		if plan.Image, err = routing.SMDImage(&drv.Spec); err != nil {
			return nil, field.Invalid(instanceLabelPath, cr, fmt.Sprintf(
				"the RSMD image cannot be composed from RBLNDriver %q: %v", cr, err)), nil
		}
		ref, _ := operator.SMDImage(drv.Spec.SMD.Registry, drv.Spec.SMD.Image, drv.Spec.Version)
		plan.PullPolicy = operator.ReferencePullPolicy(string(drv.Spec.ImagePullPolicy), ref)
		plan.NodeSelector = operator.SMDNodeSelector(cr)
	}
	containers := podSpec.Containers
	if len(containers) > MaxDaemonSetContainers {
		return nil, field.TooMany(containersPath, len(containers), MaxDaemonSetContainers), nil
	}
	i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == plan.Container })
	switch n := countContainers(containers, plan.Container); {
	case n == 0:
		return nil, field.Required(containersPath, fmt.Sprintf(
			"rbln-npu-operator's %s DaemonSets run the container %s, whose image driverguard keeps; rename the container", component, plan.Container)), nil
	case n > 1:
		return nil, field.Duplicate(containersPath, plan.Container), nil
	}
	plan.corrections(cr, ds, &containers[i])
	return plan, nil, nil
}

// poolSelectorProblem says what of a DaemonSet's nodeSelector keeps the pool from being
// composed.
func poolSelectorProblem(err *operator.PoolError) string {
	switch err.Problem {
	case operator.NFDLabelMissing, operator.FamilyMissing:
		return err.Label + " is missing"
	case operator.FamilyInvalid:
		return fmt.Sprintf("%s=%q is not a DNS-1123 label", err.Label, validation.Truncate(err.Family, validation.MaxQuotedValue))
	}
	return fmt.Sprintf("the pool name %q would be longer than %d characters", validation.Truncate(err.Name, validation.MaxQuotedValue), err.Limit)
}

// corrections lists what of ds differs from the plan.
func (p *DaemonSetPlan) corrections(cr string, ds *appsv1.DaemonSet, c *corev1.Container) {
	quote := func(s string) string { return fmt.Sprintf("%q", validation.Truncate(s, validation.MaxQuotedValue)) }
	if c.Image != p.Image {
		why := "the image rbln-npu-operator composes from RBLNDriver " + cr
		if ds.Labels[operator.LabelComponent] == operator.ComponentDriver {
			why += " and the pool's labels (the family before the image's last segment, the tag <version>-<kernel>-<ID><VERSION_ID>)"
		} else {
			why += " (<smd.registry>/<smd.image>:<spec.version>)"
		}
		p.Corrections = append(p.Corrections, fmt.Sprintf("set the image of container %s to %q (was %s): %s", p.Container, p.Image, quote(c.Image), why))
	}
	if p.PullPolicy != "" && string(c.ImagePullPolicy) != p.PullPolicy {
		p.Corrections = append(p.Corrections, fmt.Sprintf("set the imagePullPolicy of container %s to %s (was %s): the operator's pull policy (the RBLNDriver's spec.imagePullPolicy, Always for the version latest)", p.Container, p.PullPolicy, quote(string(c.ImagePullPolicy))))
	}
	keys := make([]string, 0, len(p.NodeSelector))
	for k := range p.NodeSelector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		got, ok := ds.Spec.Template.Spec.NodeSelector[k]
		if ok && got == p.NodeSelector[k] {
			continue
		}
		was := "absent"
		if ok {
			was = quote(got)
		}
		p.Corrections = append(p.Corrections, fmt.Sprintf("set nodeSelector %s=%s (was %s): rbln-npu-operator's pods of RBLNDriver %s select it", k, p.NodeSelector[k], was, cr))
	}
	if t := ds.Spec.UpdateStrategy.Type; t != appsv1.OnDeleteDaemonSetStrategyType {
		p.Corrections = append(p.Corrections, fmt.Sprintf("set updateStrategy %s (was %s): rbln-npu-operator replaces driver pods itself, node by node", operator.UpdateStrategyOnDelete, quote(string(t))))
	}
}

// MaxDaemonSetContainers bounds the containers of a driver DaemonSet the mutation reads: a
// driver DaemonSet has one to three; thousands would only make the patch and the work large.
const MaxDaemonSetContainers = 64

func countContainers(containers []corev1.Container, name string) int {
	n := 0
	for _, c := range containers {
		if c.Name == name {
			n++
		}
	}
	return n
}

// Apply applies the plan to the DaemonSet's JSON, touching only the fields that differ, and
// returns the new JSON. Fields it does not own are left byte-for-byte alone in meaning, so
// the JSON patch computed from the two documents holds only the corrections.
func (p *DaemonSetPlan) Apply(raw []byte) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	podSpec := child(child(child(obj, "spec"), "template"), "spec")
	if containers, ok := podSpec["containers"].([]any); ok {
		for _, c := range containers {
			if cm, ok := c.(map[string]any); ok && cm["name"] == p.Container {
				cm["image"] = p.Image
				if p.PullPolicy != "" {
					cm["imagePullPolicy"] = p.PullPolicy
				}
			}
		}
	}
	sel := child(podSpec, "nodeSelector")
	for k, v := range p.NodeSelector {
		sel[k] = v
	}
	spec := child(obj, "spec")
	if child(spec, "updateStrategy")["type"] != string(appsv1.OnDeleteDaemonSetStrategyType) {
		spec["updateStrategy"] = map[string]any{"type": string(appsv1.OnDeleteDaemonSetStrategyType)}
	}
	return json.Marshal(obj)
}

// child returns m[key] as a map, creating it (or replacing a non-map) when needed.
func child(m map[string]any, key string) map[string]any {
	if c, ok := m[key].(map[string]any); ok {
		return c
	}
	c := map[string]any{}
	m[key] = c
	return c
}

// daemonSetHandler decodes DaemonSet requests for the mutator.
type daemonSetHandler struct {
	m *DaemonSetMutator
}

// admit plans the mutation of a DaemonSet request: the patch that sets back what differs from
// rbln-npu-operator's composition, with a warning per correction.
func (h *daemonSetHandler) admit(ctx context.Context, req *admission.Request) Answer {
	if err := checkKind(req, daemonSetGVK); err != nil {
		return Answer{Response: response(daemonSetGVK.Group, nil, err)}
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return Answer{Response: admission.Allowed("")}
	}
	ds, err := decodeObject[appsv1.DaemonSet](req.Object, "request.object", daemonSetGVK)
	if err != nil {
		return Answer{Response: response(daemonSetGVK.Group, nil, err)}
	}
	if req.Operation == admissionv1.Update && ds.DeletionTimestamp != nil {
		// Finalizer removal or status while it is deleted: nothing may hold it in Terminating
		// (its RBLNDriver may be gone already).
		return Answer{Response: admission.Allowed("being deleted: unchanged")}
	}
	plan, denial, err := h.m.Plan(ctx, &ds)
	name := ds.Namespace + "/" + ds.Name
	switch {
	case err != nil:
		return Answer{Response: response(daemonSetGVK.Group, nil, err)}
	case denial != nil:
		v := decision.Denied(daemonSetGVK.Kind, name, decision.FieldFindings(denial)...)
		return Answer{Response: response(daemonSetGVK.Group, v, nil), Verdict: v}
	case plan == nil:
		return Answer{Response: admission.Allowed(fmt.Sprintf("not a DaemonSet of rbln-npu-operator (%s=%s, %s=%s|%s): unchanged",
			operator.LabelAppName, operator.AppName, operator.LabelComponent, operator.ComponentDriver, operator.ComponentSMD))}
	case len(plan.Corrections) == 0:
		return Answer{Response: admission.Allowed("as rbln-npu-operator composes it: unchanged"), Verdict: decision.Warned(daemonSetGVK.Kind, name)}
	}
	patched, err := plan.Apply(req.Object.Raw)
	if err != nil { // decodeObject already parsed the same bytes; kept for safety
		return Answer{Response: response(daemonSetGVK.Group, nil, badRequest(err, "request.object is not a JSON object"))}
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, patched)
	if !resp.Allowed && resp.Result != nil && resp.Result.Code == http.StatusInternalServerError {
		return Answer{Response: response(daemonSetGVK.Group, nil, badRequest(nil, "request.object cannot be patched: %s", strings.TrimSpace(resp.Result.Message)))}
	}
	// The diff walks maps in random order; the operations touch distinct paths (no array
	// insertions or removals), so sorting them makes the patch deterministic — the same bytes
	// from `serve` and `review` — without changing its meaning.
	slices.SortFunc(resp.Patches, func(a, b jsonpatch.JsonPatchOperation) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Operation, b.Operation))
	})
	fs := make([]decision.Finding, len(plan.Corrections))
	for i, c := range plan.Corrections {
		fs[i] = decision.Finding{Rule: finding.RuleDaemonSetCorrected, Message: "driverguard " + c}
	}
	v := decision.Warned(daemonSetGVK.Kind, name, fs...)
	return Answer{Response: resp.WithWarnings(v.BoundedWarningTexts(maxWarningsBytes)...), Verdict: v}
}

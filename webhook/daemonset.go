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

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/routing"
)

// Driver DaemonSet components (the value of the rebellions.ai/npu.driver.component label).
const (
	ComponentDriver = "driver"
	ComponentSMD    = "smd"
)

// Containers whose image the mutation sets.
const (
	DriverContainer = "rbln-driver-container"
	SMDContainer    = "rbln-smd"
)

var daemonSetGVK = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// DaemonSetMutator decides how a driver DaemonSet is completed (SPEC §5): the pool-composed
// image, the owner and candidate keys of the nodeSelector, and the update strategy.
type DaemonSetMutator struct {
	state State
}

// NewDaemonSetMutator returns the DaemonSet decisions over state.
func NewDaemonSetMutator(state State) *DaemonSetMutator {
	return &DaemonSetMutator{state: state}
}

// DaemonSetPlan is what the mutation sets on one driver DaemonSet. Applying it twice changes
// nothing the second time.
type DaemonSetPlan struct {
	// Container is the container whose image is set, Image the image.
	Container string
	Image     string
	// NodeSelector holds the keys set on spec.template.spec.nodeSelector (other keys, the pool
	// labels among them, are kept).
	NodeSelector map[string]string
	// UpdateStrategy is OnDelete, or RollingUpdate when the cluster policy's autoUpgrade is true.
	UpdateStrategy appsv1.DaemonSetUpdateStrategyType
}

var (
	instanceLabelPath = field.NewPath("metadata", "labels").Key(v1alpha1.LabelDriverInstance)
	podNodeSelector   = field.NewPath("spec", "template", "spec", "nodeSelector")
	containersPath    = field.NewPath("spec", "template", "spec", "containers")
)

// Plan decides the mutation of ds. It returns no plan and no denial when ds is not a driver
// DaemonSet: its rebellions.ai/npu.driver.component label is absent or neither driver nor smd.
// Its denial names what is missing instead of guessing: the instance label, the RBLNDriver it
// names, a pool label (driver component), the container, or a composable image. An error
// means the cluster view is not ready (503).
func (m *DaemonSetMutator) Plan(ctx context.Context, ds *appsv1.DaemonSet) (*DaemonSetPlan, *field.Error, error) {
	component := ds.Labels[v1alpha1.LabelDriverComponent]
	if component != ComponentDriver && component != ComponentSMD {
		return nil, nil, nil
	}
	cr := ds.Labels[v1alpha1.LabelDriverInstance]
	if cr == "" {
		return nil, field.Required(instanceLabelPath, fmt.Sprintf(
			"a driver DaemonSet (label %s=%s) must name its RBLNDriver in this label; set it to the RBLNDriver's name", v1alpha1.LabelDriverComponent, component)), nil
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
			"RBLNDriver %q is invalid and takes no part in routing (%s); fix the RBLNDriver first", cr, errs.ToAggregate().Error())), nil
	}
	plan := &DaemonSetPlan{
		NodeSelector:   map[string]string{v1alpha1.LabelOwner: cr, v1alpha1.LabelDeployDriver: "true"},
		UpdateStrategy: appsv1.OnDeleteDaemonSetStrategyType,
	}
	if snap.AutoUpgrade() {
		plan.UpdateStrategy = appsv1.RollingUpdateDaemonSetStrategyType
	}
	switch component {
	case ComponentDriver:
		plan.Container = DriverContainer
		pool, err := routing.PoolLabelsOf(ds.Spec.Template.Spec.NodeSelector)
		if err != nil {
			return nil, field.Required(podNodeSelector, fmt.Sprintf(
				"%v: a driver DaemonSet serves one pool and must select its raw pool labels %s, %s, %s and %s; add them (driverguard never guesses a pool)",
				err, v1alpha1.LabelFamily, v1alpha1.LabelOSID, v1alpha1.LabelOSVersion, v1alpha1.LabelKernel)), nil
		}
		if plan.Image, err = routing.DriverImage(&drv.Spec, pool); err != nil {
			return nil, field.Invalid(podNodeSelector, decision.FormatSelector(pool.Selector()), fmt.Sprintf(
				"no valid driver image can be composed for this pool from RBLNDriver %q (InvalidImageTag): %v", cr, err)), nil
		}
	case ComponentSMD:
		plan.Container = SMDContainer
		if plan.Image, err = routing.SMDImage(&drv.Spec); err != nil {
			return nil, field.Invalid(instanceLabelPath, cr, fmt.Sprintf(
				"the RSMD image cannot be composed from RBLNDriver %q: %v; set spec.smd.registry and spec.smd.image on the RBLNDriver", cr, err)), nil
		}
	}
	containers := ds.Spec.Template.Spec.Containers
	if len(containers) > MaxDaemonSetContainers {
		return nil, field.TooMany(containersPath, len(containers), MaxDaemonSetContainers), nil
	}
	switch n := countContainers(containers, plan.Container); {
	case n == 0:
		return nil, field.Required(containersPath, fmt.Sprintf(
			"a %s DaemonSet must have a container named %s, whose image driverguard sets; rename the container", component, plan.Container)), nil
	case n > 1:
		return nil, field.Duplicate(containersPath, plan.Container), nil
	}
	return plan, nil, nil
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

// Apply applies the plan to the DaemonSet's JSON, touching only the fields it sets, and
// returns the new JSON. Fields it does not own are left byte-for-byte alone in meaning, so
// the JSON patch computed from the two documents holds only the mutation.
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
			}
		}
	}
	sel := child(podSpec, "nodeSelector")
	for k, v := range p.NodeSelector {
		sel[k] = v
	}
	spec := child(obj, "spec")
	strategy := child(spec, "updateStrategy")
	switch p.UpdateStrategy {
	case appsv1.OnDeleteDaemonSetStrategyType:
		spec["updateStrategy"] = map[string]any{"type": string(appsv1.OnDeleteDaemonSetStrategyType)}
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if strategy["type"] != string(appsv1.RollingUpdateDaemonSetStrategyType) {
			// the API server's defaults for a RollingUpdate DaemonSet
			spec["updateStrategy"] = map[string]any{
				"type":          string(appsv1.RollingUpdateDaemonSetStrategyType),
				"rollingUpdate": map[string]any{"maxUnavailable": 1, "maxSurge": 0},
			}
		} else if _, ok := strategy["rollingUpdate"]; !ok {
			strategy["rollingUpdate"] = map[string]any{"maxUnavailable": 1, "maxSurge": 0}
		}
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

// Handle implements admission.Handler.
func (h *daemonSetHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if err := checkKind(&req, daemonSetGVK); err != nil {
		return response(daemonSetGVK.Group, nil, err)
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	ds, err := decodeObject[appsv1.DaemonSet](req.Object, "request.object", daemonSetGVK)
	if err != nil {
		return response(daemonSetGVK.Group, nil, err)
	}
	if req.Operation == admissionv1.Update && ds.DeletionTimestamp != nil {
		// Finalizer removal or status while it is deleted: nothing may hold it in Terminating
		// (its RBLNDriver may be gone already).
		return admission.Allowed("being deleted: unchanged")
	}
	plan, denial, err := h.m.Plan(ctx, &ds)
	switch {
	case err != nil:
		return response(daemonSetGVK.Group, nil, err)
	case denial != nil:
		v := decision.Denied(daemonSetGVK.Kind, ds.Namespace+"/"+ds.Name, decision.FieldFindings(denial)...)
		if sink, ok := ctx.Value(verdictSinkKey{}).(*verdictSink); ok {
			sink.verdict = v
		}
		return response(daemonSetGVK.Group, v, nil)
	case plan == nil:
		return admission.Allowed("not a driver DaemonSet (no " + v1alpha1.LabelDriverComponent + "=driver|smd label): unchanged")
	}
	patched, err := plan.Apply(req.Object.Raw)
	if err != nil { // decodeObject already parsed the same bytes; kept for safety
		return response(daemonSetGVK.Group, nil, badRequest(err, "request.object is not a JSON object"))
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, patched)
	if !resp.Allowed && resp.Result != nil && resp.Result.Code == http.StatusInternalServerError {
		return response(daemonSetGVK.Group, nil, badRequest(nil, "request.object cannot be patched: %s", strings.TrimSpace(resp.Result.Message)))
	}
	// The diff walks maps in random order; the operations touch distinct paths (no array
	// insertions or removals), so sorting them makes the patch deterministic — the same bytes
	// from `serve` and `review` — without changing its meaning.
	slices.SortFunc(resp.Patches, func(a, b jsonpatch.JsonPatchOperation) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Operation, b.Operation))
	})
	return resp
}

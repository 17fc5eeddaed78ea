package render

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/driverguard/driverguard/api/v1alpha1"
	dgvalidation "github.com/driverguard/driverguard/api/validation"
)

// DefaultReleaseName is the release name used for labels when none is given.
const DefaultReleaseName = "driverguard"

// Options tune rendering.
type Options struct {
	// ReleaseName is the Helm release name (label app.kubernetes.io/instance).
	ReleaseName string
	// Sources locate the values in what the user wrote (Load returns them): messages then
	// quote the user's text. Optional.
	Sources *Sources
	// SkipProvenance renders no provenance (ProvenanceOf returns nil), for callers that never
	// read it: the result then holds none of the values it was rendered from.
	SkipProvenance bool
}

// Result is what the chart renders from a set of values.
type Result struct {
	// Drivers are the RBLNDrivers: the default (if deployed) first, then instances by key.
	Drivers []v1alpha1.RBLNDriver
	// ClusterPolicy carries driver.upgradePolicy.
	ClusterPolicy v1alpha1.RBLNClusterPolicy
	// Provenance of every field, by RBLNDriver name, as ProvenanceOf has computed it so far:
	// it is computed on demand (a million inherited annotations make a million entries that
	// only preview reads). Set it to give a result's provenance outright.
	Provenance map[string]Provenance
	// provenance computes an RBLNDriver's provenance, by name.
	provenance map[string]func() Provenance
	// InstanceKeys maps an RBLNDriver name to its driver.instances key ("" for the default).
	InstanceKeys map[string]string
	// Warnings are legal but suspicious settings.
	Warnings []Warning
}

// Warning is a legal but suspicious setting.
type Warning struct {
	// Resource is the RBLNDriver (or RBLNClusterPolicy) concerned.
	Resource string `json:"resource"`
	// Path is the values path concerned.
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (w Warning) String() string { return w.Path + ": " + w.Message }

// fields of the driver block that instances never inherit.
var notInherited = []string{"nodeSelector", "instances", "upgradePolicy", "enabled", "deployDefault"}

// Render coalesces the user's values with the chart's defaults, checks them and expands them
// into RBLNDrivers and the RBLNClusterPolicy. On any invalid input it returns an
// *InvalidValuesError listing every problem, and no result.
func Render(ch *chart.Chart, user map[string]any, opts Options) (*Result, error) {
	return RenderContext(context.Background(), ch, user, opts)
}

// RenderContext is Render, ending early with ctx's error when ctx is done.
func RenderContext(ctx context.Context, ch *chart.Chart, user map[string]any, opts Options) (*Result, error) {
	if opts.ReleaseName == "" {
		opts.ReleaseName = DefaultReleaseName
	}
	vals, err := chartutil.CoalesceValues(ch, user)
	if err != nil {
		return nil, fmt.Errorf("combining values with the chart's defaults: %w", err)
	}
	c := &checker{ctx: ctx, src: opts.Sources}
	c.keys(vals, nil, rootFields)
	d, ok := c.object(vals["driver"], field.NewPath("driver"), false, "driver settings")
	if ok {
		c.driverBlock(d, field.NewPath("driver"))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	if err := validateSchema(ch, vals); err != nil {
		return nil, &SchemaError{Err: err}
	}

	r := &Result{Provenance: map[string]Provenance{}, provenance: map[string]func() Provenance{}, InstanceKeys: map[string]string{}}
	userDriver, _ := user["driver"].(map[string]any)
	labels := chartLabels(ch, opts.ReleaseName)

	up, upWarnings, err := upgradePolicy(d["upgradePolicy"])
	if err != nil {
		return nil, err
	}
	r.ClusterPolicy = v1alpha1.RBLNClusterPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RBLNClusterPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterPolicyName, Labels: withComponent(labels, "cluster-policy")},
		Spec:       v1alpha1.RBLNClusterPolicySpec{Driver: v1alpha1.ClusterDriverSpec{UpgradePolicy: up}},
	}
	for _, w := range upWarnings {
		r.Warnings = append(r.Warnings, Warning{Resource: v1alpha1.ClusterPolicyName, Path: "driver.upgradePolicy", Message: w})
	}

	if enabled, _ := d["enabled"].(bool); !enabled {
		return r, nil
	}
	base := copyMap(d)
	for _, k := range notInherited {
		delete(base, k)
	}
	prune(base)

	var errs field.ErrorList
	add := func(name, key string, eff, inst map[string]any, instPath string) {
		spec, specErrs := toSpec(eff, instPath)
		if len(specErrs) > 0 {
			errs = append(errs, specErrs...)
			return
		}
		r.Drivers = append(r.Drivers, v1alpha1.RBLNDriver{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RBLNDriver"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: withComponent(labels, "driver")},
			Spec:       spec,
		})
		if !opts.SkipProvenance {
			r.provenance[name] = func() Provenance { return provenance(eff, inst, userDriver, instPath) }
		}
		r.InstanceKeys[name] = key
	}
	if deployDefault, _ := d["deployDefault"].(bool); deployDefault {
		eff := maps.Clone(base) // nothing changes base or its maps from here: instances copy it
		if eff == nil {
			eff = map[string]any{}
		}
		sel, _ := deepCopy(d["nodeSelector"]).(map[string]any)
		prune(sel)
		eff["nodeSelector"] = sel
		add(v1alpha1.DefaultDriverName, "", eff, nil, "driver")
	}
	instances, _ := d["instances"].(map[string]any)
	for _, key := range slices.Sorted(maps.Keys(instances)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		raw := instances[key].(map[string]any) // checked by driverBlock
		inst := copyMap(raw)
		sel := inst["nodeSelector"]
		delete(inst, "nodeSelector")
		eff := chartutil.CoalesceTables(inst, copyMap(base))
		prune(eff)
		eff["nodeSelector"] = sel
		add(v1alpha1.InstanceNamePrefix+key, key, eff, raw, "driver.instances."+key)
	}
	if len(errs) > 0 {
		return nil, &InvalidValuesError{Errs: errs}
	}
	r.Warnings = append(r.Warnings, sameAsDefault(r)...)
	return r, nil
}

// ProvenanceOf returns where each field of the named RBLNDriver came from (nil for a name not
// rendered), computing it on first use from the values Render was given (which must not
// change meanwhile). A Result is not safe for concurrent use by ProvenanceOf.
func (r *Result) ProvenanceOf(name string) Provenance {
	if p, ok := r.Provenance[name]; ok {
		return p
	}
	compute := r.provenance[name]
	if compute == nil {
		return nil
	}
	p := compute()
	if r.Provenance == nil {
		r.Provenance = map[string]Provenance{}
	}
	r.Provenance[name] = p
	delete(r.provenance, name)
	return p
}

// toSpec turns an effective driver block into a spec, the way templates/_helpers.tpl's
// driverguard.spec does: empty values are omitted; registry, repository and tag are required.
// The block has passed the structural checks, so every field has its expected type.
func toSpec(eff map[string]any, path string) (v1alpha1.RBLNDriverSpec, field.ErrorList) {
	var errs field.ErrorList
	var spec v1alpha1.RBLNDriverSpec
	img, _ := eff["image"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	for _, f := range []struct {
		key, field string
		dst        *string
	}{{"registry", "registry", &spec.Registry}, {"repository", "image", &spec.Image}, {"tag", "version", &spec.Version}} {
		*f.dst = str(img, f.key)
		if *f.dst == "" {
			errs = append(errs, field.Required(field.NewPath(path, "image", f.key),
				fmt.Sprintf("spec.%s would be empty: a null on this instance removed the inherited driver.image.%s; remove the null to inherit it or set a value", f.field, f.key)))
		}
	}
	if len(errs) > 0 {
		return spec, errs
	}
	spec.ImagePullPolicy = corev1.PullPolicy(str(img, "pullPolicy"))
	if list, _ := eff["imagePullSecrets"].([]any); len(list) > 0 {
		spec.ImagePullSecrets = make([]string, len(list))
		for i, v := range list {
			spec.ImagePullSecrets[i], _ = v.(string)
		}
	}
	if m, ok := lookup(eff, "manager", "image"); ok {
		m, _ := m.(map[string]any)
		mgr := v1alpha1.ManagerSpec{Registry: str(m, "registry"), Image: str(m, "repository"), Version: str(m, "tag"), ImagePullPolicy: corev1.PullPolicy(str(m, "pullPolicy"))}
		if mgr != (v1alpha1.ManagerSpec{}) {
			spec.Manager = &mgr
		}
	}
	if m, ok := lookup(eff, "smd", "image"); ok {
		m, _ := m.(map[string]any)
		smd := v1alpha1.SMDSpec{Registry: str(m, "registry"), Image: str(m, "repository")}
		if smd != (v1alpha1.SMDSpec{}) {
			spec.SMD = &smd
		}
	}
	spec.NodeSelector = stringMap(eff["nodeSelector"])
	spec.Annotations = stringMap(eff["annotations"])
	spec.PriorityClassName = str(eff, "priorityClassName")
	// Kubernetes-typed fields go through JSON, as the checks decoded them.
	typed := []struct {
		key string
		dst any
	}{{"tolerations", &spec.Tolerations}, {"env", &spec.Env}}
	if !isEmpty(eff["resources"]) {
		spec.Resources = &corev1.ResourceRequirements{}
		typed = append(typed, struct {
			key string
			dst any
		}{"resources", spec.Resources})
	}
	for _, t := range typed {
		if isEmpty(eff[t.key]) {
			continue
		}
		data, err := json.Marshal(eff[t.key])
		if err == nil {
			err = json.Unmarshal(data, t.dst)
		}
		if err != nil {
			// The structural checks make this unreachable; report it rather than render garbage.
			errs = append(errs, field.InternalError(field.NewPath(path, t.key), fmt.Errorf("building the spec: %w", err)))
		}
	}
	return spec, errs
}

// stringMap converts a checked map of strings; an empty map is nil (omitted).
func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		out[k], _ = val.(string)
	}
	return out
}

func upgradePolicy(v any) (v1alpha1.UpgradePolicy, []string, error) {
	var up v1alpha1.UpgradePolicy
	data, err := json.Marshal(v)
	if err != nil {
		return up, nil, fmt.Errorf("reading driver.upgradePolicy: %w", err)
	}
	strict, err := kjson.UnmarshalStrict(data, &up)
	if err == nil && len(strict) > 0 {
		err = strict[0]
	}
	if err != nil {
		return up, nil, fmt.Errorf("reading driver.upgradePolicy: %w", err)
	}
	errs, warnings := dgvalidation.ValidateUpgradePolicy(&up, field.NewPath("driver", "upgradePolicy"))
	if len(errs) > 0 {
		return up, nil, &InvalidValuesError{Errs: errs}
	}
	return up, warnings, nil
}

// sameAsDefault warns about instances that differ from the default only by their selector:
// they run the same driver and silently follow every change of the top-level block.
func sameAsDefault(r *Result) []Warning {
	if len(r.Drivers) == 0 || r.Drivers[0].Name != v1alpha1.DefaultDriverName {
		return nil
	}
	def := r.Drivers[0].Spec // shallow copies: only their own NodeSelector field changes
	def.NodeSelector = nil
	var out []Warning
	for _, d := range r.Drivers[1:] {
		s := d.Spec
		s.NodeSelector = nil
		if apiequality.Semantic.DeepEqual(def, s) {
			key := r.InstanceKeys[d.Name]
			out = append(out, Warning{
				Resource: d.Name,
				Path:     "driver.instances." + key,
				Message: fmt.Sprintf("%s differs from %s only by its nodeSelector: it runs the same driver (%s) and follows every change to driver.*; set image.tag on the instance to pin a version, or remove the instance",
					d.Name, v1alpha1.DefaultDriverName, d.Spec.Version),
			})
		}
	}
	return out
}

// chartLabels are the labels templates/_helpers.tpl's driverguard.labels renders, and the
// release label (driverguard.releaseLabel) the chart adds to RBLNDrivers and the
// RBLNClusterPolicy.
func chartLabels(ch *chart.Chart, release string) map[string]string {
	chartLabel := strings.TrimSuffix(truncate(strings.ReplaceAll(ch.Metadata.Name+"-"+ch.Metadata.Version, "+", "_"), 63), "-")
	return map[string]string{
		"app.kubernetes.io/name":       ch.Metadata.Name,
		"app.kubernetes.io/instance":   release,
		"app.kubernetes.io/version":    ch.Metadata.AppVersion,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/part-of":    "driverguard",
		"helm.sh/chart":                chartLabel,
		v1alpha1.LabelRelease:          release,
	}
}

func withComponent(labels map[string]string, component string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out["app.kubernetes.io/component"] = component
	return out
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

package render

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

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
	// sources are the values' sources (Options.Sources), for LocateValues.
	sources *Sources
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

// Render coalesces the user's values with the chart's defaults, checks them and expands them
// into RBLNDrivers and the RBLNClusterPolicy. On any invalid input it returns an
// *InvalidValuesError listing every problem, and no result.
func Render(ch *chart.Chart, user map[string]any, opts Options) (*Result, error) {
	return RenderContext(context.Background(), ch, user, opts)
}

// RenderContext is Render, ending early with ctx's error when ctx is done.
func RenderContext(ctx context.Context, ch *chart.Chart, user map[string]any, opts Options) (*Result, error) {
	vs, err := schemaFor(ch)
	if err != nil {
		return nil, err
	}
	return render(ctx, vs, ch, user, opts)
}

// render is RenderContext with the values schema given.
func render(ctx context.Context, vs *valuesSchema, ch *chart.Chart, user map[string]any, opts Options) (*Result, error) {
	if opts.ReleaseName == "" {
		opts.ReleaseName = DefaultReleaseName
	}
	// The bounds pass first, on the user's values (before Helm copies them) and on the
	// coalesced ones: what is over the schema's bounds is cut before anything else reads it.
	cut, bounds := vs.bound(user)
	cut, clashes := setAsideClashes(cut, ch.Values)
	vals, err := chartutil.CoalesceValues(ch, cut)
	if err != nil {
		return nil, fmt.Errorf("combining values with the chart's defaults: %w", err)
	}
	clashes.restore(vals)
	if len(bounds) > 0 {
		var more []problem
		vals, more = vs.bound(vals)
		seen := map[string]bool{}
		for _, pr := range bounds {
			seen[pr.err.Field] = true
		}
		for _, pr := range more { // what the first pass cut is still over its bound
			if !seen[pr.err.Field] {
				bounds = append(bounds, pr)
			}
		}
	}
	d := decodeValues(vals["driver"])
	if err := checkValues(ctx, vs, vals, ch.Values, d, bounds, opts.Sources); err != nil {
		return nil, err
	}

	r := &Result{Provenance: map[string]Provenance{}, provenance: map[string]func() Provenance{}, InstanceKeys: map[string]string{}, sources: opts.Sources}
	userDriver, _ := user["driver"].(map[string]any)
	labels := chartLabels(ch, opts.ReleaseName)

	up, upWarnings, err := upgradePolicy(d.UpgradePolicy)
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

	if !d.Enabled.value() {
		return r, nil
	}
	driver, _ := vals["driver"].(map[string]any) // maps: the schema says so
	instances, _ := driver["instances"].(map[string]any)

	var errs field.ErrorList
	add := func(name, key string, eff blockValues, effMap func() map[string]any, inst map[string]any, instPath string) {
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
			r.provenance[name] = func() Provenance { return provenance(effMap(), inst, userDriver, instPath) }
		}
		r.InstanceKeys[name] = key
	}
	if d.DeployDefault.value() {
		// The default's effective block is the driver block itself, decoded already.
		effMap := func() map[string]any { return withSelector(inheritable(driver), driver["nodeSelector"]) }
		add(v1alpha1.DefaultDriverName, "", d.blockValues, effMap, nil, "driver")
	}
	var base map[string]any
	if len(instances) > 0 {
		base = inheritable(driver)
	}
	for _, key := range slices.Sorted(maps.Keys(instances)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		raw, _ := instances[key].(map[string]any)
		eff := inherit(raw, base)
		add(v1alpha1.InstanceNamePrefix+key, key, decodeBlock(eff), func() map[string]any { return eff }, raw, "driver.instances."+key)
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

// notInherited are the fields of the driver block that instances do not inherit.
var notInherited = []string{"nodeSelector", "instances", "upgradePolicy", "enabled", "deployDefault"}

// inheritable is what instances inherit of the driver block: a copy without the fields they do
// not inherit, nulls removed.
func inheritable(driver map[string]any) map[string]any {
	base := make(map[string]any, len(driver))
	for k, v := range driver {
		if !slices.Contains(notInherited, k) {
			base[k] = v
		}
	}
	base = copyTables(base)
	prune(base)
	return base
}

// clash is a value the user gave where the chart's default has a map and the user's value is
// not one, or the other way round: Helm keeps the user's value and logs a warning ("cannot
// overwrite table with non table") to the process's log; the schema then rejects the value
// with a better message. Set aside before coalescing and put back after, it is judged the same
// and Helm's line is not printed above the error that explains it.
type clash struct {
	path  []string
	value any
}

type clashes []clash

// setAsideClashes returns user without its clashes with defaults (copied where it changes).
func setAsideClashes(user, defaults map[string]any) (map[string]any, clashes) {
	var out clashes
	var walk func(u, d map[string]any, at []string) map[string]any
	walk = func(u, d map[string]any, at []string) map[string]any {
		copied := false
		for k, uv := range u {
			dv, ok := d[k]
			if !ok || uv == nil || dv == nil {
				continue
			}
			um, uIsMap := uv.(map[string]any)
			dm, dIsMap := dv.(map[string]any)
			var repl map[string]any
			switch {
			case uIsMap && dIsMap:
				if repl = walk(um, dm, append(at, k)); same(repl, um) {
					continue
				}
			case uIsMap == dIsMap: // neither is a map
				continue
			default:
				out = append(out, clash{path: append(slices.Clone(at), k), value: uv})
			}
			if !copied {
				u, copied = maps.Clone(u), true
			}
			if repl != nil {
				u[k] = repl
			} else {
				delete(u, k)
			}
		}
		return u
	}
	return walk(user, defaults, nil), out
}

// restore puts the clashing values back where Helm would have kept them.
func (cs clashes) restore(vals map[string]any) {
	for _, c := range cs {
		m := vals
		for _, k := range c.path[:len(c.path)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[c.path[len(c.path)-1]] = c.value
	}
}

// inherit is an instance's effective block (docs/values.md "Instances"): Helm's chartutil.CoalesceTables of the
// instance over what it inherits — maps merge key by key, the instance winning; lists and
// scalars replace; a null removes the inherited value — with its own nodeSelector, never
// inherited. The chart's driverguard.inherit follows the same rules; test/differential
// proves the two renderings equal. The maps of both are copied: CoalesceTables changes them.
func inherit(inst, base map[string]any) map[string]any {
	own := copyTables(inst)
	delete(own, "nodeSelector")
	eff := chartutil.CoalesceTables(own, copyTables(base))
	prune(eff)
	return withSelector(eff, inst["nodeSelector"])
}

// withSelector sets a copy of sel, nulls removed, as eff's nodeSelector.
func withSelector(eff map[string]any, sel any) map[string]any {
	if eff == nil {
		eff = map[string]any{}
	}
	s, _ := sel.(map[string]any)
	s = copyTables(s)
	prune(s)
	eff["nodeSelector"] = s
	return eff
}

// toSpec turns an effective driver block into a spec, the way templates/_helpers.tpl's
// driverguard.spec does: empty values are omitted; registry, repository and tag are required.
func toSpec(eff blockValues, path string) (v1alpha1.RBLNDriverSpec, field.ErrorList) {
	var errs field.ErrorList
	img := eff.Image.value()
	spec := v1alpha1.RBLNDriverSpec{
		Registry:          img.Registry.value(),
		Image:             img.Repository.value(),
		Version:           img.Tag.value(),
		ImagePullPolicy:   corev1.PullPolicy(img.PullPolicy.value()),
		ImagePullSecrets:  eff.ImagePullSecrets.value(),
		NodeSelector:      entries(eff.NodeSelector),
		Annotations:       entries(eff.Annotations),
		PriorityClassName: eff.PriorityClassName.value(),
		Tolerations:       eff.Tolerations.value(),
		Env:               eff.Env.value(),
	}
	for _, f := range []struct{ key, field, value string }{{"registry", "registry", spec.Registry}, {"repository", "image", spec.Image}, {"tag", "version", spec.Version}} {
		if f.value == "" { // the checks make this unreachable; report it rather than render garbage
			errs = append(errs, field.Required(field.NewPath(path, "image", f.key),
				fmt.Sprintf("spec.%s would be empty: a null on this instance removed the inherited driver.image.%s; remove the null to inherit it or set a value", f.field, f.key)))
		}
	}
	if mgr := eff.Manager.value().Image.value(); mgr != (imageValues{}) {
		m := v1alpha1.ManagerSpec{Registry: mgr.Registry.value(), Image: mgr.Repository.value(), Version: mgr.Tag.value(), ImagePullPolicy: corev1.PullPolicy(mgr.PullPolicy.value())}
		if m != (v1alpha1.ManagerSpec{}) {
			spec.Manager = &m
		}
	}
	if smd := eff.SMD.value().Image.value(); smd != (imageValues{}) {
		s := v1alpha1.SMDSpec{Registry: smd.Registry.value(), Image: smd.Repository.value()}
		if s != (v1alpha1.SMDSpec{}) {
			spec.SMD = &s
		}
	}
	if res := eff.Resources.value(); res.Limits.set || res.Requests.set || res.Claims.set {
		spec.Resources = &corev1.ResourceRequirements{Limits: resourceList(res.Limits), Requests: resourceList(res.Requests), Claims: res.Claims.value()}
	}
	if len(spec.ImagePullSecrets) == 0 {
		spec.ImagePullSecrets = nil
	}
	if len(spec.Tolerations) == 0 {
		spec.Tolerations = nil
	}
	if len(spec.Env) == 0 {
		spec.Env = nil
	}
	return spec, errs // each block is decoded on its own: specs share nothing
}

func resourceList(m opt[map[string]opt[resource.Quantity]]) corev1.ResourceList {
	qs := entries(m)
	if qs == nil {
		return nil
	}
	out := make(corev1.ResourceList, len(qs))
	for k, q := range qs {
		out[corev1.ResourceName(k)] = q
	}
	return out
}

// upgradePolicy is the cluster-wide upgrade policy and its warnings.
func upgradePolicy(v opt[v1alpha1.UpgradePolicy]) (v1alpha1.UpgradePolicy, []string, error) {
	up, ok := v.get()
	if !ok { // the schema requires it
		return up, nil, fmt.Errorf("reading driver.upgradePolicy: not a valid upgrade policy")
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

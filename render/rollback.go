package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// Rollback is a values overlay that gives objects back: given after the values it was made
// for (`-f new.yaml -f rollback.yaml`), the chart renders the wanted RBLNDrivers and
// RBLNClusterPolicy again. It is the inverse of the spec mapping of docs/values.md "Values" — each field of a
// spec written back at its values path, a null where the values would otherwise add a key the
// spec lacks (docs/values.md, "The null rule") — and it is proven by rendering: Verified says
// the chart renders exactly the wanted objects.
//
// An instance the new values add cannot be removed by a later values file: values files merge
// maps, and an instance set to null is an error (the chart's schema wants a map: `atom:` with
// nothing under it is a mistake, not a removal). DeleteFromValues names those entries: the
// overlay is proven on the new values without them.
type Rollback struct {
	// Values is the overlay, YAML the same as a values file.
	Values map[string]any `json:"-"`
	YAML   string         `json:"values"`
	// Restores are the RBLNDrivers whose spec the overlay sets back, Removes those it removes
	// (the change creates them), sorted.
	Restores []string `json:"restores"`
	Removes  []string `json:"removes"`
	// DeleteFromValues are the values paths to delete from the new values before the overlay
	// applies (driver.instances.KEY of an instance the change creates), sorted.
	DeleteFromValues []string `json:"deleteFromValues"`
	// ClusterPolicy says whether it sets driver.upgradePolicy back.
	ClusterPolicy bool `json:"clusterPolicy"`
	// Verified: the values with the overlay render exactly the wanted objects.
	Verified bool `json:"verified"`
	// Problems say what the overlay does not give back, and why.
	Problems []string `json:"problems"`
}

// Empty reports whether nothing needs to be given back.
func (r *Rollback) Empty() bool {
	return len(r.Restores)+len(r.Removes)+len(r.Problems) == 0 && !r.ClusterPolicy
}

// RollbackTarget is what a rollback must render.
type RollbackTarget struct {
	// Drivers must render with exactly these specs (the current RBLNDrivers).
	Drivers []v1alpha1.RBLNDriver
	// Absent are the RBLNDrivers that must not render (those the change creates).
	Absent []string
	// ClusterPolicy, when set, must render with this spec.
	ClusterPolicy *v1alpha1.RBLNClusterPolicy
}

// rollbackPasses bounds the renders: the first pins what differs, the second what pinning the
// top-level block changed in the instances that inherit from it, the last verifies.
const rollbackPasses = 4

// instanceKeyRE is the instance key of docs/values.md "Instances".
var instanceKeyRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// MakeRollback returns the overlay that, merged over vals (the values of a change, as Load
// returns them), renders want. Only a done ctx is an error: what cannot be given back is in
// Problems.
func MakeRollback(ctx context.Context, ch *chart.Chart, vals map[string]any, opts Options, want RollbackTarget) (*Rollback, error) {
	opts.SkipProvenance, opts.Sources = true, nil
	rb := &Rollback{Restores: []string{}, Removes: []string{}, DeleteFromValues: []string{}, Problems: []string{}}
	// vals are only read (merging copies what it changes), but for the instances to delete:
	// the maps on their path are copied.
	vals = maps.Clone(vals)
	if d, ok := vals["driver"].(map[string]any); ok {
		d = maps.Clone(d)
		vals["driver"] = d
		if in, ok := d["instances"].(map[string]any); ok {
			d["instances"] = maps.Clone(in)
		}
	}
	o := &overlay{values: map[string]any{}}
	type target struct {
		d   *v1alpha1.RBLNDriver
		key string // "" for the default driver
	}
	var targets []target
	for i := range want.Drivers {
		d := &want.Drivers[i]
		key, ok := instanceKeyOf(d.Name)
		if !ok {
			rb.Problems = append(rb.Problems, fmt.Sprintf("RBLNDriver %s: no values key renders this name (the chart renders %s and %s-<instance key>): restore it by hand",
				d.Name, v1alpha1.DefaultDriverName, v1alpha1.DefaultDriverName))
			continue
		}
		targets = append(targets, target{d, key})
	}
	absent := map[string]bool{}
	for _, name := range want.Absent {
		key, ok := instanceKeyOf(name)
		if !ok {
			rb.Problems = append(rb.Problems, fmt.Sprintf("RBLNDriver %s: no values key renders this name: remove it by hand", name))
			continue
		}
		absent[name] = true
		if key == "" {
			o.driver()["deployDefault"] = false
			continue
		}
		rb.DeleteFromValues = append(rb.DeleteFromValues, "driver.instances."+key)
		if d, ok := vals["driver"].(map[string]any); ok {
			if in, ok := d["instances"].(map[string]any); ok {
				delete(in, key)
			}
		}
	}
	slices.Sort(rb.DeleteFromValues)
	for pass := 1; ; pass++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		last := pass == rollbackPasses
		// The overlay as the user gets it: its YAML, read as a values file is.
		text, err := yaml.Marshal(o.values)
		if err != nil {
			return nil, fmt.Errorf("writing the rollback values: %w", err)
		}
		read, err := unmarshalValues(bytes.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("reading the rollback values back: %w", err)
		}
		r, err := RenderContext(ctx, ch, mergeMaps(vals, read), opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rb.Problems = append(rb.Problems, fmt.Sprintf("the values with this overlay do not render: %v", err))
			break
		}
		got := make(map[string]*v1alpha1.RBLNDriverSpec, len(r.Drivers))
		for i := range r.Drivers {
			got[r.Drivers[i].Name] = &r.Drivers[i].Spec
		}
		var mismatch []string
		for _, t := range targets {
			g := got[t.d.Name]
			if g != nil && apiequality.Semantic.DeepEqual(*g, t.d.Spec) {
				continue
			}
			if last {
				if keys := o.selectorKeys[t.d.Name]; len(keys) > 0 {
					slices.Sort(keys)
					mismatch = append(mismatch, fmt.Sprintf("RBLNDriver %s: the change adds the nodeSelector key(s) %s, which no values overlay can remove "+
						"(values files merge maps, and a selector value must be a string, not null): remove them from the new values, or use helm rollback",
						t.d.Name, strings.Join(keys, ", ")))
					continue
				}
				mismatch = append(mismatch, specDifference(t.d.Name, g, &t.d.Spec))
				continue
			}
			o.pin(t.key, &t.d.Spec, g)
			mismatch = append(mismatch, t.d.Name)
		}
		for name := range absent {
			if got[name] != nil {
				mismatch = append(mismatch, fmt.Sprintf("RBLNDriver %s still renders", name))
			}
		}
		if want.ClusterPolicy != nil && !apiequality.Semantic.DeepEqual(r.ClusterPolicy.Spec, want.ClusterPolicy.Spec) {
			if _, pinned := o.driver()["upgradePolicy"]; pinned || last {
				mismatch = append(mismatch, "RBLNClusterPolicy: driver.upgradePolicy does not render as it is now")
			} else {
				o.driver()["upgradePolicy"] = upgradePolicyValues(&want.ClusterPolicy.Spec.Driver.UpgradePolicy)
				rb.ClusterPolicy = true
				mismatch = append(mismatch, "RBLNClusterPolicy")
			}
		}
		if len(mismatch) == 0 {
			rb.Verified = len(rb.Problems) == 0
			break
		}
		if last {
			slices.Sort(mismatch)
			rb.Problems = append(rb.Problems, mismatch...)
			break
		}
	}
	rb.Values = o.values
	rb.Restores = append(rb.Restores, slices.Sorted(maps.Keys(o.pinned))...)
	rb.Removes = append(rb.Removes, slices.Sorted(maps.Keys(absent))...)
	if len(o.values) > 0 {
		data, err := yaml.Marshal(o.values)
		if err != nil {
			return nil, fmt.Errorf("writing the rollback values: %w", err)
		}
		rb.YAML = string(data)
	}
	return rb, nil
}

// instanceKeyOf is the driver.instances key that renders the RBLNDriver name ("" for the
// default driver), and whether one does.
func instanceKeyOf(name string) (string, bool) {
	if name == v1alpha1.DefaultDriverName {
		return "", true
	}
	key, ok := strings.CutPrefix(name, v1alpha1.DefaultDriverName+"-")
	return key, ok && instanceKeyRE.MatchString(key)
}

// specDifference names the fields in which a rendered spec differs from the wanted one.
func specDifference(name string, got, want *v1alpha1.RBLNDriverSpec) string {
	if got == nil {
		return fmt.Sprintf("RBLNDriver %s does not render", name)
	}
	var g, w map[string]any
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	_ = json.Unmarshal(gj, &g)
	_ = json.Unmarshal(wj, &w)
	var fields []string
	for _, k := range slices.Sorted(maps.Keys(mergeMaps(g, w))) {
		if !apiequality.Semantic.DeepEqual(g[k], w[k]) {
			fields = append(fields, "spec."+k)
		}
	}
	return fmt.Sprintf("RBLNDriver %s renders with a different %s", name, strings.Join(fields, ", "))
}

// overlay builds the rollback values.
type overlay struct {
	values map[string]any
	// pinned are the RBLNDrivers whose block the overlay sets.
	pinned map[string]bool
	// selectorKeys are, by RBLNDriver, the nodeSelector keys the values add that no overlay
	// can remove: values files merge maps, and a selector value must be a string, not null.
	selectorKeys map[string][]string
}

func (o *overlay) driver() map[string]any {
	d, ok := o.values["driver"].(map[string]any)
	if !ok {
		d = map[string]any{}
		o.values["driver"] = d
	}
	return d
}

func (o *overlay) instances() map[string]any {
	d := o.driver()
	in, ok := d["instances"].(map[string]any)
	if !ok {
		in = map[string]any{}
		d["instances"] = in
	}
	return in
}

// pin writes the fields of spec that got lacks (got: what the values render now, nil when the
// driver does not render: then every field) at the values path of key ("" the top-level
// block), with a null for each map key the values would otherwise add.
func (o *overlay) pin(key string, spec, got *v1alpha1.RBLNDriverSpec) {
	if o.pinned == nil {
		o.pinned = map[string]bool{}
	}
	block := blockValuesOf(spec, got)
	name := v1alpha1.DefaultDriverName
	if key != "" {
		name += "-" + key
	}
	if got != nil {
		for k := range got.NodeSelector {
			if _, ok := spec.NodeSelector[k]; !ok && !slices.Contains(o.selectorKeys[name], k) {
				if o.selectorKeys == nil {
					o.selectorKeys = map[string][]string{}
				}
				o.selectorKeys[name] = append(o.selectorKeys[name], k)
			}
		}
	}
	// A later pass adds to what an earlier one pinned (maps merge, as values files do).
	d := o.driver()
	if got == nil { // it does not render: the driver (and the default resource) enabled
		d["enabled"] = true
	}
	if key == "" {
		maps.Copy(d, mergeMaps(d, block))
		if got == nil {
			d["deployDefault"] = true
		}
	} else {
		prev, _ := o.instances()[key].(map[string]any)
		o.instances()[key] = mergeMaps(prev, block)
	}
	o.pinned[name] = true
}

// blockValuesOf is a spec as a driver block (docs/values.md "Values": the mapping, inverted): every field when
// got is nil (the driver does not render), else only the fields in which got differs, each
// whole (a map with a null for every key of got it lacks).
func blockValuesOf(spec, got *v1alpha1.RBLNDriverSpec) map[string]any {
	all := got == nil
	if all {
		got = &v1alpha1.RBLNDriverSpec{}
	}
	differs := func(a, b any) bool { return all || !apiequality.Semantic.DeepEqual(a, b) }
	b := map[string]any{}
	img := map[string]any{}
	for _, f := range []struct {
		key       string
		want, got string
	}{{"registry", spec.Registry, got.Registry}, {"repository", spec.Image, got.Image}, {"tag", spec.Version, got.Version},
		{"pullPolicy", string(spec.ImagePullPolicy), string(got.ImagePullPolicy)}} {
		if differs(f.want, f.got) {
			img[f.key] = orNull(f.want)
		}
	}
	if len(img) > 0 {
		b["image"] = img
	}
	if differs(spec.ImagePullSecrets, got.ImagePullSecrets) {
		b["imagePullSecrets"] = listValues(spec.ImagePullSecrets)
	}
	if differs(spec.Tolerations, got.Tolerations) {
		b["tolerations"] = listValues(spec.Tolerations)
	}
	if differs(spec.Env, got.Env) {
		b["env"] = listValues(spec.Env)
	}
	if differs(spec.PriorityClassName, got.PriorityClassName) {
		b["priorityClassName"] = spec.PriorityClassName
	}
	if differs(spec.Annotations, got.Annotations) {
		b["annotations"] = mapValues(spec.Annotations, got.Annotations)
	}
	if differs(spec.NodeSelector, got.NodeSelector) {
		b["nodeSelector"] = mapValues(spec.NodeSelector, nil) // a selector value is a string: never null (see pin)
	}
	if differs(spec.Manager, got.Manager) {
		b["manager"] = nil
		if m := spec.Manager; m != nil {
			b["manager"] = map[string]any{"image": map[string]any{"registry": orNull(m.Registry), "repository": orNull(m.Image),
				"tag": orNull(m.Version), "pullPolicy": orNull(string(m.ImagePullPolicy))}}
		}
	}
	if differs(spec.SMD, got.SMD) {
		b["smd"] = nil
		if s := spec.SMD; s != nil {
			b["smd"] = map[string]any{"image": map[string]any{"registry": orNull(s.Registry), "repository": orNull(s.Image)}}
		}
	}
	if differs(spec.Resources, got.Resources) {
		b["resources"] = nil
		if r := spec.Resources; r != nil {
			var gotLimits, gotRequests corev1.ResourceList
			if got.Resources != nil {
				gotLimits, gotRequests = got.Resources.Limits, got.Resources.Requests
			}
			res := map[string]any{"limits": quantityValues(r.Limits, gotLimits), "requests": quantityValues(r.Requests, gotRequests), "claims": nil}
			if len(r.Claims) > 0 {
				res["claims"] = listValues(r.Claims)
			}
			b["resources"] = res
		}
	}
	return b
}

// orNull is s, or null for "" (a field the spec does not set).
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// mapValues is want with a null for every key of got it lacks.
func mapValues(want, got map[string]string) map[string]any {
	out := make(map[string]any, len(want)+len(got))
	for k := range got {
		out[k] = nil
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}

func quantityValues(want, got corev1.ResourceList) map[string]any {
	out := map[string]any{}
	for k := range got {
		out[string(k)] = nil
	}
	for k, q := range want {
		out[string(k)] = q.String()
	}
	return out
}

// listValues is a list as values (its JSON form): [] for none, which clears an inherited list.
func listValues[T any](l []T) []any {
	out := []any{}
	if len(l) == 0 {
		return out
	}
	data, err := json.Marshal(l)
	if err == nil {
		err = json.Unmarshal(data, &out)
	}
	if err != nil { // unreachable for API types
		return []any{}
	}
	return out
}

// upgradePolicyValues is an upgrade policy as driver.upgradePolicy, every field written.
func upgradePolicyValues(up *v1alpha1.UpgradePolicy) map[string]any {
	var out map[string]any
	data, _ := json.Marshal(up)
	_ = json.Unmarshal(data, &out)
	if reboot, ok := out["reboot"].(map[string]any); ok && up.Reboot.Image == nil {
		reboot["image"] = nil
	}
	return out
}

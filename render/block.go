package render

import (
	"encoding/json"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// The values, typed. They are decoded once from the coalesced values (decodeValues) and read
// by the rules the schema cannot state, by inheritance and by toSpec. A field of the values is
// an opt: absent (inherit), null (remove what would be inherited) or set. Decoding is lenient:
// a value of the wrong shape is left unset, as the schema reports it. Adding a field: the
// schema, a field here (and its line in inherit), toSpec, the template, a test.

// driverValues is the driver block: the fields instances inherit, and those they do not.
type driverValues struct {
	blockValues
	Enabled       opt[bool]                        `json:"enabled"`
	DeployDefault opt[bool]                        `json:"deployDefault"`
	UpgradePolicy opt[v1alpha1.UpgradePolicy]      `json:"upgradePolicy"`
	Instances     opt[map[string]opt[blockValues]] `json:"instances"`
}

// blockValues are the fields an instance shares with the top-level block (SPEC §2).
type blockValues struct {
	Image             opt[imageValues]            `json:"image"`
	ImagePullSecrets  opt[[]string]               `json:"imagePullSecrets"`
	Resources         opt[resourceValues]         `json:"resources"`
	Manager           opt[componentValues]        `json:"manager"`
	SMD               opt[componentValues]        `json:"smd"`
	Annotations       opt[map[string]opt[string]] `json:"annotations"`
	Tolerations       opt[[]corev1.Toleration]    `json:"tolerations"`
	Env               opt[[]corev1.EnvVar]        `json:"env"`
	PriorityClassName opt[string]                 `json:"priorityClassName"`
	// NodeSelector is never inherited.
	NodeSelector opt[map[string]opt[string]] `json:"nodeSelector"`
}

type imageValues struct {
	Registry   opt[string] `json:"registry"`
	Repository opt[string] `json:"repository"`
	Tag        opt[string] `json:"tag"`
	PullPolicy opt[string] `json:"pullPolicy"`
}

// componentValues is manager or smd (smd's image has no tag or pullPolicy: the schema says so).
type componentValues struct {
	Image opt[imageValues] `json:"image"`
}

type resourceValues struct {
	Limits   opt[map[string]opt[resource.Quantity]] `json:"limits"`
	Requests opt[map[string]opt[resource.Quantity]] `json:"requests"`
	Claims   opt[[]corev1.ResourceClaim]            `json:"claims"`
}

// inherit completes an instance block from the top-level one (SPEC §2): an absent field is
// inherited; null removes the inherited value; maps (image, resources, annotations, manager,
// smd) merge key by key, the instance winning; lists and scalars replace ([] and "" clear);
// the nodeSelector is the instance's own. These are the rules of Helm's CoalesceTables, which
// the chart's driverguard.inherit follows; test/differential proves the two renderings equal.
func (b blockValues) inherit(base blockValues) blockValues {
	return blockValues{
		Image:             merge(b.Image, base.Image, imageValues.inherit),
		ImagePullSecrets:  replace(b.ImagePullSecrets, base.ImagePullSecrets),
		Resources:         merge(b.Resources, base.Resources, resourceValues.inherit),
		Manager:           merge(b.Manager, base.Manager, componentValues.inherit),
		SMD:               merge(b.SMD, base.SMD, componentValues.inherit),
		Annotations:       merge(b.Annotations, base.Annotations, mergeEntries[string]),
		Tolerations:       replace(b.Tolerations, base.Tolerations),
		Env:               replace(b.Env, base.Env),
		PriorityClassName: replace(b.PriorityClassName, base.PriorityClassName),
		NodeSelector:      b.NodeSelector,
	}
}

func (i imageValues) inherit(base imageValues) imageValues {
	return imageValues{
		Registry:   replace(i.Registry, base.Registry),
		Repository: replace(i.Repository, base.Repository),
		Tag:        replace(i.Tag, base.Tag),
		PullPolicy: replace(i.PullPolicy, base.PullPolicy),
	}
}

func (c componentValues) inherit(base componentValues) componentValues {
	return componentValues{Image: merge(c.Image, base.Image, imageValues.inherit)}
}

func (r resourceValues) inherit(base resourceValues) resourceValues {
	return resourceValues{
		Limits:   merge(r.Limits, base.Limits, mergeEntries[resource.Quantity]),
		Requests: merge(r.Requests, base.Requests, mergeEntries[resource.Quantity]),
		Claims:   replace(r.Claims, base.Claims),
	}
}

// opt is a value that may be absent, null or set.
type opt[T any] struct {
	v    T
	raw  any // as the values hold it (provenance shows it)
	null bool
	set  bool
}

func (o opt[T]) get() (T, bool) { return o.value(), o.set }

// value is the value when set, else T's zero value.
func (o opt[T]) value() T {
	if o.set {
		return o.v
	}
	var zero T
	return zero
}

// present reports a value written, null included.
func (o opt[T]) present() bool { return o.set || o.null }

// replace is the instance's value when it has one (null: none), else the inherited one.
func replace[T any](own, base opt[T]) opt[T] {
	if own.present() {
		return own
	}
	return base
}

// merge merges two set values with m, or replaces.
func merge[T any](own, base opt[T], m func(own, base T) T) opt[T] {
	if own.set && base.set {
		own.v = m(own.v, base.v)
		return own
	}
	return replace(own, base)
}

// mergeEntries merges maps key by key, own winning (its nulls remove the inherited entries).
func mergeEntries[T any](own, base map[string]opt[T]) map[string]opt[T] {
	out := make(map[string]opt[T], len(own)+len(base))
	maps.Copy(out, base)
	maps.Copy(out, own)
	return out
}

// entries returns the set entries of an optional map (nil when there are none).
func entries[T any](m opt[map[string]opt[T]]) map[string]T {
	if !m.set {
		return nil
	}
	var out map[string]T
	for k, e := range m.v {
		if e.set {
			if out == nil {
				out = make(map[string]T, len(m.v))
			}
			out[k] = e.v
		}
	}
	return out
}

// decodeValues decodes the coalesced driver block.
func decodeValues(driver any) *driverValues {
	d := &driverValues{}
	decodeInto(driver, reflect.ValueOf(d).Elem())
	return d
}

// nodeDecoder is implemented by opt.
type nodeDecoder interface{ decodeNode(v any) }

var nodeDecoderType = reflect.TypeFor[nodeDecoder]()

func (o *opt[T]) decodeNode(v any) {
	*o = opt[T]{raw: v, null: v == nil}
	if v != nil {
		o.set = decodeInto(v, reflect.ValueOf(&o.v).Elem())
	}
}

// decodeInto sets dst from a values node (maps, lists, strings, numbers, booleans) and reports
// whether the node had dst's shape. Structs of this package are read field by field (json
// tags); Kubernetes types through JSON, as their own decoding defines them.
func decodeInto(v any, dst reflect.Value) bool {
	if reflect.PointerTo(dst.Type()).Implements(nodeDecoderType) {
		dst.Addr().Interface().(nodeDecoder).decodeNode(v)
		return true
	}
	t := dst.Type()
	switch {
	case t.Kind() == reflect.Struct && t.PkgPath() == thisPackage:
		m, ok := v.(map[string]any)
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				decodeInto(v, dst.Field(i))
			} else if e, present := m[jsonName(f)]; present {
				decodeInto(e, dst.Field(i))
			}
		}
		return ok
	case t.Kind() == reflect.String:
		s, ok := v.(string)
		dst.SetString(s)
		return ok
	case t.Kind() == reflect.Bool:
		b, ok := v.(bool)
		dst.SetBool(b)
		return ok
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && reflect.PointerTo(t.Elem()).Implements(nodeDecoderType):
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		out := reflect.MakeMapWithSize(t, len(m))
		for k, e := range m {
			ev := reflect.New(t.Elem()).Elem()
			decodeInto(e, ev)
			out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
		}
		dst.Set(out)
		return true
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		l, ok := v.([]any)
		if !ok {
			return false
		}
		out := reflect.MakeSlice(t, len(l), len(l))
		for i, e := range l {
			if !decodeInto(e, out.Index(i)) {
				return false
			}
		}
		dst.Set(out)
		return true
	}
	// Kubernetes types (tolerations, env, quantities, claims, the upgrade policy).
	data, err := json.Marshal(v)
	return err == nil && json.Unmarshal(data, dst.Addr().Interface()) == nil
}

var thisPackage = reflect.TypeFor[blockValues]().PkgPath()

func jsonName(f reflect.StructField) string {
	name := f.Tag.Get("json")
	for i := range len(name) {
		if name[i] == ',' {
			return name[:i]
		}
	}
	return name
}

// tree is what is set of typed values, as a values tree (nulls pruned): the effective block
// provenance reads. Scalars and lists are as the values held them.
func (o opt[T]) tree() (any, bool) {
	if !o.set {
		return nil, false
	}
	v := reflect.ValueOf(o.v)
	if k := v.Kind(); (k == reflect.Struct && v.Type().PkgPath() == thisPackage) || k == reflect.Map {
		return tree(v), true
	}
	return o.raw, true
}

type treeNode interface{ tree() (any, bool) }

// tree turns a struct of this package or a map of opts into a values tree.
func tree(v reflect.Value) map[string]any {
	out := map[string]any{}
	add := func(k string, e reflect.Value) {
		if n, ok := e.Interface().(treeNode); ok {
			if t, ok := n.tree(); ok {
				out[k] = t
			}
		}
	}
	if v.Kind() == reflect.Map {
		for it := v.MapRange(); it.Next(); {
			add(it.Key().String(), it.Value())
		}
		return out
	}
	for i := range v.NumField() {
		add(jsonName(v.Type().Field(i)), v.Field(i))
	}
	return out
}

// values is b as a values tree.
func (b blockValues) values() map[string]any { return tree(reflect.ValueOf(b)) }

package render

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// The values, typed. The driver block is decoded once from the coalesced values
// (decodeValues) for the rules the schema cannot state, and each RBLNDriver's effective block
// once from its coalesced map (decodeBlock) for toSpec; inheritance itself is Helm's, on maps
// (inherit, render.go). A field of the values is an opt: absent, null or set — the rules read
// an instance's nulls from it. Decoding is lenient: a value of the wrong shape is left unset,
// as the schema reports it. Adding a field: the schema, a field here, where toSpec reads it,
// the template, a test.

// driverValues is the driver block: the fields instances inherit, and those they do not.
type driverValues struct {
	blockValues
	Enabled       opt[bool]                        `json:"enabled"`
	DeployDefault opt[bool]                        `json:"deployDefault"`
	UpgradePolicy opt[v1alpha1.UpgradePolicy]      `json:"upgradePolicy"`
	Instances     opt[map[string]opt[blockValues]] `json:"instances"`
}

// blockValues are the fields an instance shares with the top-level block (docs/values.md "Instances").
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

// opt is a value that may be absent, null or set.
type opt[T any] struct {
	v    T
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

// decodeBlock decodes an RBLNDriver's effective block.
func decodeBlock(eff map[string]any) blockValues {
	var b blockValues
	decodeInto(eff, reflect.ValueOf(&b).Elem())
	return b
}

// nodeDecoder is implemented by opt.
type nodeDecoder interface{ decodeNode(v any) }

var nodeDecoderType = reflect.TypeFor[nodeDecoder]()

func (o *opt[T]) decodeNode(v any) {
	*o = opt[T]{null: v == nil}
	if v != nil {
		o.set = decodeInto(v, reflect.ValueOf(&o.v).Elem())
	}
}

// decodeInto sets dst from a values node (maps, lists, strings, numbers, booleans) and reports
// whether the node had dst's shape. Structs of this package are read field by field (json
// tags); Kubernetes types through JSON, as their own decoding defines them.
func decodeInto(v any, dst reflect.Value) bool {
	t := dst.Type()
	switch {
	case t.Kind() == reflect.Struct && t.PkgPath() == thisPackage && reflect.PointerTo(t).Implements(nodeDecoderType):
		dst.Addr().Interface().(nodeDecoder).decodeNode(v)
		return true
	case t.Kind() == reflect.Struct && t.PkgPath() == thisPackage:
		m, ok := v.(map[string]any)
		for i, name := range keysOf(t) {
			if name == "" { // embedded
				decodeInto(v, dst.Field(i))
			} else if e, present := m[name]; present {
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
	if s, ok := v.(string); ok && t == quantityType {
		// A quantity as written is what its JSON decoding would parse; anything else (spaces,
		// escapes) takes that path.
		if q, err := resource.ParseQuantity(s); err == nil {
			dst.Set(reflect.ValueOf(q))
			return true
		}
	}
	// Kubernetes types (tolerations, env, quantities, claims, the upgrade policy).
	data, err := json.Marshal(v)
	return err == nil && json.Unmarshal(data, dst.Addr().Interface()) == nil
}

var (
	thisPackage  = reflect.TypeFor[blockValues]().PkgPath()
	quantityType = reflect.TypeFor[resource.Quantity]()
)

// keys caches the values keys of the fields of this package's structs (their json tags; ""
// for an embedded struct), by type.
var keys sync.Map // reflect.Type → []string

func keysOf(t reflect.Type) []string {
	if k, ok := keys.Load(t); ok {
		return k.([]string)
	}
	k := make([]string, t.NumField())
	for i := range k {
		if f := t.Field(i); !f.Anonymous {
			k[i], _, _ = strings.Cut(f.Tag.Get("json"), ",")
		}
	}
	keys.Store(t, k)
	return k
}

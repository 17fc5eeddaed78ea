package render

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/charts"
)

// schemaURL names the values schema inside the compiler; locations in it are schemaURL#/….
const schemaURL = "file:///values.schema.json"

// valuesSchema is a compiled values.schema.json: the single source of the structural rules of
// the values (types, enums, required keys, patterns, additionalProperties, the allOf rules),
// with what its messages need.
type valuesSchema struct {
	root *jsonschema.Schema
	// at holds every schema by location (schemaURL#/properties/driver, …).
	at map[string]*jsonschema.Schema
	// applies holds, by schema, the schemas that apply with it (applicable, bounds.go).
	applies map[*jsonschema.Schema][]*jsonschema.Schema
	// source is the file compiled (kept for the embedded chart's, to recognise it).
	source []byte
}

// newValuesSchema compiles a values.schema.json. The chart's is self-contained (no remote
// $refs), so the compiled schema is the one helm validates with.
func newValuesSchema(data []byte) (*valuesSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading values.schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("reading values.schema.json: %w", err)
	}
	root, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compiling values.schema.json: %w", err)
	}
	vs := &valuesSchema{root: root, at: map[string]*jsonschema.Schema{}}
	vs.index(root)
	vs.applies = make(map[*jsonschema.Schema][]*jsonschema.Schema, len(vs.at))
	for _, s := range vs.at {
		vs.applies[s] = applicable([]*jsonschema.Schema{s})
	}
	return vs, nil
}

var (
	// embedded is the schema of the chart this binary embeds, compiled once per process.
	embedded = sync.OnceValues(func() (*valuesSchema, error) {
		data, err := charts.FS.ReadFile(charts.ChartDir + "/values.schema.json")
		if err != nil {
			return nil, err
		}
		vs, err := newValuesSchema(data)
		if vs != nil {
			vs.source = data
		}
		return vs, err
	})
	// compiled holds the schemas of other charts (a chart directory whose file differs), by
	// content, each compiled once.
	compiled sync.Map // string -> *valuesSchema
)

// schemaFor returns the compiled schema of ch: the embedded chart's when ch carries the same
// file (or none).
func schemaFor(ch *chart.Chart) (*valuesSchema, error) {
	vs, err := embedded()
	if err != nil {
		return nil, fmt.Errorf("the embedded chart's values.schema.json: %w", err)
	}
	if ch.Schema == nil || bytes.Equal(ch.Schema, vs.source) {
		return vs, nil
	}
	if other, ok := compiled.Load(string(ch.Schema)); ok {
		return other.(*valuesSchema), nil
	}
	if vs, err = newValuesSchema(ch.Schema); err != nil {
		return nil, fmt.Errorf("%s's %w", ch.Name(), err)
	}
	other, _ := compiled.LoadOrStore(string(ch.Schema), vs)
	return other.(*valuesSchema), nil
}

// validate returns the schema's verdict on the values: nil, or its errors.
func (vs *valuesSchema) validate(vals map[string]any) (*jsonschema.ValidationError, error) {
	err := vs.root.Validate(vals)
	var verr *jsonschema.ValidationError
	if err == nil || errors.As(err, &verr) {
		return verr, nil
	}
	return nil, err
}

// index records s and every schema under it by location.
func (vs *valuesSchema) index(s *jsonschema.Schema) {
	if s == nil || vs.at[s.Location] != nil {
		return
	}
	vs.at[s.Location] = s
	for _, c := range subschemas(s) {
		vs.index(c)
	}
}

func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.Not, s.If, s.Then, s.Else, s.PropertyNames, s.Items2020, s.Contains, s.UnevaluatedProperties, s.UnevaluatedItems}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	out = append(out, s.PrefixItems...)
	for _, p := range s.Properties {
		out = append(out, p)
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	for _, p := range s.DependentSchemas {
		out = append(out, p)
	}
	if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		out = append(out, a)
	}
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		out = append(out, items)
	case []*jsonschema.Schema:
		out = append(out, items...)
	}
	return out
}

// resolved follows s's $ref chain.
func resolved(s *jsonschema.Schema) *jsonschema.Schema {
	for i := 0; s != nil && s.Ref != nil && i < 32; i++ {
		s = s.Ref
	}
	return s
}

// find returns the first schema among s and its anyOf, oneOf and allOf branches ($refs
// followed) for which get returns something.
func find[T comparable](s *jsonschema.Schema, get func(*jsonschema.Schema) T) T {
	var zero T
	s = resolved(s)
	if s == nil {
		return zero
	}
	if v := get(s); v != zero {
		return v
	}
	for _, group := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf} {
		for _, b := range group {
			if v := find(b, get); v != zero {
				return v
			}
		}
	}
	return zero
}

// types lists the JSON types s allows (its own, or its branches').
func types(s *jsonschema.Schema) []string {
	var out []string
	s = resolved(s)
	if s == nil {
		return nil
	}
	if s.Types != nil && !s.Types.IsEmpty() {
		return s.Types.ToStrings()
	}
	for _, group := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf} {
		for _, b := range group {
			out = append(out, types(b)...)
		}
	}
	return out
}

// walk follows an instance location (map keys and list indexes) through the schema. It
// returns the field path — a property of an object is a child (driver.image.tag), so is an
// entry of a map of objects (driver.instances.atom); an entry of a map of scalars is a key
// (nodeSelector[env]), an item an index — whether its last segment is a key, and the schema of
// the value there (nil when the schema does not say).
func (vs *valuesSchema) walk(loc []string) (p *field.Path, key bool, s *jsonschema.Schema) {
	s = vs.root
	for _, tok := range loc {
		key = false
		seg := pathKey(tok)
		if s == nil {
			p = p.Child(seg)
			continue
		}
		if prop := find(s, func(s *jsonschema.Schema) *jsonschema.Schema { return s.Properties[tok] }); prop != nil {
			p, s = p.Child(seg), prop
			continue
		}
		if items := find(s, func(s *jsonschema.Schema) *jsonschema.Schema { return s.Items2020 }); items != nil {
			if i, err := strconv.Atoi(tok); err == nil {
				p, s = p.Index(i), items
				continue
			}
		}
		addl := find(s, func(s *jsonschema.Schema) *jsonschema.Schema {
			a, _ := s.AdditionalProperties.(*jsonschema.Schema)
			return a
		})
		switch {
		case addl == nil:
			p, s = p.Child(seg), nil
		case containsType(types(addl), "object"):
			p, s = p.Child(seg), addl
		default:
			p, s, key = p.Key(seg), addl, true
		}
	}
	return p, key, s
}

func containsType(ts []string, t string) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// pathKey is a key as a field path shows it: as it is, or quoted (strconv.Quote) when it
// holds a character that is not printable — a control character would otherwise reach the
// terminal (driver."\x1b]0;pwned\a": an escape sequence).
func pathKey(k string) string {
	for _, r := range k {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(k)
		}
	}
	return k
}

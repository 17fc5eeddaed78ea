package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	dgvalidation "github.com/driverguard/driverguard/api/validation"
)

// The schema's errors become the field errors users read: at the values path of the field
// (driver.instances.canary.image.pullPolicy), worded by the kind of error — a wrong type, a
// value not in an enum, a missing or unknown key, a pattern, a bound — from what the schema
// says there (its enum, its properties, its types). A few rules are worded by explanations
// (below); the rules themselves are the schema's.

// explanation words the error of one schema keyword where the generic words would not say
// why: the inheritance table of docs/values.md "Instances" and the driver block's rules between fields.
type explanation struct {
	typ    field.ErrorType
	detail string
	// at reports the problem at another values path (with its value): the field that decides.
	at []string
}

const (
	everyInstance = "e.g. {rebellions.ai/npu.family: atom}"
	smdTag        = "smd has no tag of its own: its tag is always the driver version (image.tag); remove it"
	deployDefault = "it removes the default resource, so at least one entry in driver.instances is required"
)

// explanations, by keyword location in the schema (the property named after required and
// additionalProperties). TestExplanationsMatchTheSchema keeps each one reachable.
var explanations = map[string]explanation{
	"/$defs/instance/additionalProperties/upgradePolicy": {field.ErrorTypeForbidden, "upgradePolicy is cluster-wide, not an instance field: set driver.upgradePolicy (rendered once onto the RBLNClusterPolicy); per-instance upgrade cadence is not supported", nil},
	"/$defs/instance/additionalProperties/enabled":       {field.ErrorTypeForbidden, "enabled is not an instance field: remove the instance to stop rendering it, or set driver.enabled=false to render no RBLNDriver at all", nil},
	"/$defs/instance/additionalProperties/deployDefault": {field.ErrorTypeForbidden, "deployDefault is not an instance field: set driver.deployDefault", nil},
	"/$defs/instance/additionalProperties/instances":     {field.ErrorTypeForbidden, "instances cannot be nested: declare every instance directly under driver.instances", nil},

	"/properties/driver/properties/smd/properties/image/additionalProperties/tag": {field.ErrorTypeForbidden, smdTag, nil},
	"/$defs/instance/properties/smd/properties/image/additionalProperties/tag":    {field.ErrorTypeForbidden, smdTag, nil},

	"/$defs/instance/required/nodeSelector":                 {field.ErrorTypeRequired, "every instance needs its own non-empty selector (it is never inherited), " + everyInstance, nil},
	"/$defs/instance/properties/nodeSelector/minProperties": {field.ErrorTypeRequired, "must not be empty: only the default resource may select every node; select this instance's nodes, " + everyInstance, nil},

	"/properties/driver/allOf/0/then/properties/instances/maxProperties": {field.ErrorTypeForbidden, "driver.enabled is false, so no RBLNDriver is rendered; remove the instances or set driver.enabled=true", nil},
	"/properties/driver/allOf/1/then/required/instances":                 {field.ErrorTypeInvalid, deployDefault, []string{"driver", "deployDefault"}},
	"/properties/driver/allOf/1/then/properties/instances/minProperties": {field.ErrorTypeInvalid, deployDefault, []string{"driver", "deployDefault"}},

	// A wrong type: the words replace "must be a string".
	"/$defs/labelSelector/additionalProperties/type": {field.ErrorTypeTypeInvalid, "label values are strings", nil},
	"/$defs/annotations/additionalProperties/type":   {field.ErrorTypeTypeInvalid, "annotation values are strings", nil},
	"/$defs/quantity/anyOf":                          {field.ErrorTypeTypeInvalid, "must be a quantity such as 500m, 2 or 128Mi", nil},
}

// Patterns of the schema that api/validation does not hold.
const (
	dnsSubdomainPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	quantityPattern     = `^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?$`
	// The audit's intervals: whole hours, minutes and seconds within serve's range of
	// --audit-interval (10s to 24h) and --audit-image-interval (1m to 24h).
	auditIntervalPattern = `^(([1-9]|1[0-9]|2[0-3])h([0-5]?[0-9]m)?([0-5]?[0-9]s)?|24h(0m)?(0s)?|([1-9][0-9]{0,2}|1[0-3][0-9]{2}|14[0-3][0-9])m([0-5]?[0-9]s)?|1440m(0s)?|([1-9][0-9]|[1-9][0-9]{2,3}|[1-7][0-9]{4}|8[0-5][0-9]{3}|86[0-3][0-9]{2}|86400)s)$`
	imageIntervalPattern = `^(([1-9]|1[0-9]|2[0-3])h([0-5]?[0-9]m)?([0-5]?[0-9]s)?|24h(0m)?(0s)?|([1-9][0-9]{0,2}|1[0-3][0-9]{2}|14[0-3][0-9])m([0-5]?[0-9]s)?|1440m(0s)?|([6-9][0-9]|[1-9][0-9]{2,3}|[1-7][0-9]{4}|8[0-5][0-9]{3}|86[0-3][0-9]{2}|86400)s)$`
)

// phrasers word a string that fails a pattern (or a length bound beside it), by pattern:
// wherever a tag is, ValidateVersion words it. A pattern that is not here gets generic words.
var phrasers = map[string]func(string, *field.Path) field.ErrorList{
	dgvalidation.RegistryPattern: invalid("the registry host of the driver image, e.g. repo.rebellions.ai",
		"must be a registry host with an optional port, e.g. repo.rebellions.ai or registry.local:5000 (no scheme, no path)"),
	dgvalidation.RepositoryPattern: driverDigest(dgvalidation.ValidateDriverImage, invalid("the driver image repository, e.g. rebellions/rbln-driver",
		"must be a lowercase image repository path such as rebellions/rbln-driver (no registry, no tag)")),
	dgvalidation.TagPattern:         driverDigest(dgvalidation.ValidateDriverVersion, dgvalidation.ValidateVersion),
	dgvalidation.InstanceKeyPattern: dgvalidation.ValidateInstanceKey,
	dgvalidation.LabelKeyPattern:    messages(validation.IsQualifiedName, "is not a valid label key: "),
	dgvalidation.LabelValuePattern:  messages(validation.IsValidLabelValue, "is not a valid label value: "),
	dnsSubdomainPattern:             messages(validation.IsDNS1123Subdomain, ""),
	quantityPattern:                 invalid("", "must be a quantity such as 500m, 2 or 128Mi"),
	auditIntervalPattern:            invalid("", "must be a duration from 10s to 24h in whole hours, minutes and seconds, such as 10m, 90s or 1h30m"),
	imageIntervalPattern:            invalid("", "must be a duration from 1m to 24h in whole hours, minutes and seconds, such as 1h, 90m or 1h30m"),
}

// driverDigest words a driver image's repository or tag with driver (which refuses a digest,
// as rbln-npu-operator does) and any other image's (the manager's, the RSMD's, the reboot
// helper's) with other.
func driverDigest(driver, other func(string, *field.Path) field.ErrorList) func(string, *field.Path) field.ErrorList {
	return func(s string, p *field.Path) field.ErrorList {
		if path := p.String(); strings.HasSuffix(path, ".image.repository") || strings.HasSuffix(path, ".image.tag") {
			if parent := strings.TrimSuffix(strings.TrimSuffix(path, ".repository"), ".tag"); parent == "driver.image" ||
				(strings.HasPrefix(parent, "driver.instances.") && strings.Count(parent, ".") == 3) {
				if errs := driver(s, p); len(errs) > 0 {
					return errs
				}
			}
		}
		return other(s, p)
	}
}

// invalid words "" as a required value (when required says what it is), anything else as
// invalid with detail.
func invalid(required, detail string) func(string, *field.Path) field.ErrorList {
	return func(s string, p *field.Path) field.ErrorList {
		if s == "" && required != "" {
			return field.ErrorList{field.Required(p, required)}
		}
		return field.ErrorList{field.Invalid(p, s, detail)}
	}
}

// messages words each message of one of apimachinery's checks.
func messages(check func(string) []string, prefix string) func(string, *field.Path) field.ErrorList {
	return func(s string, p *field.Path) field.ErrorList {
		var errs field.ErrorList
		for _, msg := range check(s) {
			errs = append(errs, field.Invalid(p, s, prefix+msg))
		}
		return errs
	}
}

// basePattern is a pattern without its "or empty" alternative: ^$|^(X)$ is ^X$.
func basePattern(p string) string {
	if inner, ok := strings.CutPrefix(p, "^$|^("); ok {
		if inner, ok = strings.CutSuffix(inner, ")$"); ok {
			return "^" + inner + "$"
		}
	}
	return p
}

var printer = message.NewPrinter(language.English)

// translator turns one validation's errors into problems.
type translator struct {
	vs             *valuesSchema
	vals, defaults map[string]any
	out            []problem
	// strs groups the string errors of one field, worded together.
	strs  []*stringErrors
	strAt map[string]*stringErrors
	// over are the lists and maps over their size limit: nothing inside them is reported.
	over [][]string
	// known caches the sorted property names of a schema, by location.
	known map[string][]string
}

type stringErrors struct {
	path    *field.Path
	value   string
	pattern string
	errs    []*jsonschema.ValidationError
}

// problems translates the schema's errors on vals; defaults are the chart's values.
func (vs *valuesSchema) problems(verr *jsonschema.ValidationError, vals, defaults map[string]any) []problem {
	t := &translator{vs: vs, vals: vals, defaults: defaults, strAt: map[string]*stringErrors{}, known: map[string][]string{}}
	t.oversized(verr)
	t.walk(verr, nil, schemaURL+"#")
	for _, s := range t.strs {
		t.words(s)
	}
	return t.out
}

func (t *translator) add(e *field.Error) { t.out = append(t.out, problem{err: e}) }

// oversized finds the lists and maps over their size limit (65,536 items given by one --set
// are not worth 65,536 messages that are not shown).
func (t *translator) oversized(e *jsonschema.ValidationError) {
	switch e.ErrorKind.(type) {
	case *kind.MaxItems, *kind.MaxProperties:
		t.over = append(t.over, e.InstanceLocation)
	}
	for _, c := range e.Causes {
		t.oversized(c)
	}
}

// inside reports whether loc is inside a list or map over its size limit.
func (t *translator) inside(loc []string) bool {
	for _, o := range t.over {
		if len(loc) > len(o) && slices.Equal(loc[:len(o)], o) {
			return true
		}
	}
	return false
}

// walk translates e; at and base are the instance location and schema of the nearest
// enclosing error (the library's location of a property name is not reliable: see
// propertyNamesAt).
func (t *translator) walk(e *jsonschema.ValidationError, at []string, base string) {
	if t.inside(e.InstanceLocation) {
		return
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf:
		for _, c := range e.Causes {
			t.walk(c, e.InstanceLocation, e.SchemaURL)
		}
	case *kind.Reference:
		for _, c := range e.Causes {
			t.walk(c, e.InstanceLocation, k.URL)
		}
	case *kind.AnyOf:
		t.anyOf(e)
	case *kind.OneOf:
		if k.Subschemas == nil {
			t.anyOf(e)
		} else {
			t.leaf(e)
		}
	case *kind.PropertyNames:
		loc := append(propertyNamesAt(at, base, e), k.Property)
		for _, c := range e.Causes {
			t.keyError(loc, k.Property, c)
		}
	default:
		t.leaf(e)
	}
}

// anyOf: when every alternative wants another type, the value has the wrong type (one error
// naming them all); otherwise the alternatives of its type say what is wrong.
func (t *translator) anyOf(e *jsonschema.ValidationError) {
	var want []string
	var deeper []*jsonschema.ValidationError
	for _, c := range e.Causes {
		if w, ok := typeMismatch(c, e.InstanceLocation); ok {
			want = append(want, w...)
		} else {
			deeper = append(deeper, c)
		}
	}
	if len(deeper) == 0 {
		t.typeError(e.InstanceLocation, want, e)
		return
	}
	for _, c := range deeper {
		t.walk(c, e.InstanceLocation, e.SchemaURL)
	}
}

func typeMismatch(e *jsonschema.ValidationError, loc []string) ([]string, bool) {
	for {
		if _, ref := e.ErrorKind.(*kind.Reference); !ref || len(e.Causes) != 1 {
			break
		}
		e = e.Causes[0]
	}
	k, ok := e.ErrorKind.(*kind.Type)
	if !ok || !slices.Equal(e.InstanceLocation, loc) {
		return nil, false
	}
	return k.Want, true
}

// propertyNamesAt is the location of the object whose property name failed. The library
// records it without copying (it changes as validation goes on), so it is found from the
// nearest enclosing error (at, validated by the schema at base) and the way from base to the
// propertyNames schema; the recorded one when that way cannot tell.
func propertyNamesAt(at []string, base string, e *jsonschema.ValidationError) []string {
	recorded := slices.Clone(e.InstanceLocation)
	rel, ok := strings.CutPrefix(e.SchemaURL, base)
	if !ok {
		return recorded
	}
	loc := slices.Clone(at)
	toks := strings.Split(strings.Trim(rel, "/"), "/")
	for i := 0; i < len(toks); i++ {
		switch toks[i] {
		case "properties":
			if i++; i < len(toks) {
				loc = append(loc, strings.NewReplacer("~1", "/", "~0", "~").Replace(toks[i]))
			}
		case "allOf", "anyOf", "oneOf":
			i++
		case "then", "else", "propertyNames", "":
		default:
			return recorded
		}
	}
	if len(loc) != len(recorded) {
		return recorded
	}
	return loc
}

// keyword is the keyword location of e in the schema, e.g. /$defs/instance/required.
func keyword(e *jsonschema.ValidationError) string {
	return strings.TrimPrefix(e.SchemaURL, schemaURL+"#") + "/" + strings.Join(e.ErrorKind.KeywordPath(), "/")
}

// explain adds the explained problem of a keyword, if it has one.
func (t *translator) explain(kw string, loc []string) bool {
	x, ok := explanations[kw]
	if !ok || x.typ == field.ErrorTypeTypeInvalid {
		return false
	}
	if x.at != nil {
		loc = x.at
	}
	p, _, _ := t.vs.walk(loc)
	v, _ := lookup(t.vals, loc...)
	t.add(&field.Error{Type: x.typ, Field: p.String(), BadValue: describe(v), Detail: x.detail})
	return true
}

func (t *translator) leaf(e *jsonschema.ValidationError) {
	loc := e.InstanceLocation
	if t.explain(keyword(e), loc) {
		return
	}
	v, _ := lookup(t.vals, loc...)
	p, _, _ := t.vs.walk(loc)
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		t.typeError(loc, k.Want, e)
	case *kind.InvalidJsonValue:
		t.typeError(loc, types(t.vs.at[e.SchemaURL]), e)
	case *kind.Enum:
		if _, isString := v.(string); !isString && allStrings(k.Want) {
			t.typeError(loc, []string{"string"}, e)
			return
		}
		t.add(field.NotSupported(p, describe(v), enumValues(k.Want)))
	case *kind.Const:
		t.add(field.Invalid(p, describe(v), fmt.Sprintf("must be %v", k.Want)))
	case *kind.Required:
		for _, m := range k.Missing {
			t.required(loc, m, e)
		}
	case *kind.AdditionalProperties:
		// Only the first MaxListedErrors of one map can be listed (they sort before the
		// others): the others are counted.
		names := slices.Sorted(slices.Values(k.Properties))
		if len(names) > MaxListedErrors {
			t.out = append(t.out, problem{omitted: len(names) - MaxListedErrors})
			names = names[:MaxListedErrors]
		}
		for _, name := range names {
			t.unknown(loc, name, e)
		}
	case *kind.Pattern, *kind.MinLength, *kind.MaxLength:
		s, _ := v.(string)
		t.stringError(p, s, e)
	case *kind.Minimum:
		t.add(field.Invalid(p, number(v), "must be "+k.Want.RatString()+" or greater"))
	case *kind.Maximum:
		t.add(field.Invalid(p, number(v), "must be at most "+k.Want.RatString()))
	case *kind.MaxItems:
		t.add(dgvalidation.ValidateCount(k.Got, k.Want, countNoun(t.vs.at[e.SchemaURL], loc), p))
	case *kind.MaxProperties:
		t.add(dgvalidation.ValidateCount(k.Got, k.Want, countNoun(t.vs.at[e.SchemaURL], loc), p))
	case *kind.MinItems:
		t.tooFew(p, v, k.Got, k.Want)
	case *kind.MinProperties:
		t.tooFew(p, v, k.Got, k.Want)
	case *kind.UniqueItems:
		l, _ := v.([]any)
		if j := k.Duplicates[1]; j < len(l) {
			t.add(field.Duplicate(p.Index(j), describe(l[j])))
		}
	case *kind.Not, *kind.FalseSchema:
		t.add(field.Forbidden(p, fmt.Sprintf("%s is not allowed here", quoted(v))))
	default:
		t.add(field.Invalid(p, describe(v), e.ErrorKind.LocalizedString(printer)))
	}
}

// keyError translates an error of a property name (key) of the object at loc[:len(loc)-1].
func (t *translator) keyError(loc []string, key string, e *jsonschema.ValidationError) {
	p, _, _ := t.vs.walk(loc)
	switch e.ErrorKind.(type) {
	case *kind.Group, *kind.Reference, *kind.AllOf, *kind.AnyOf, *kind.Schema:
		for _, c := range e.Causes {
			t.keyError(loc, key, c)
		}
	case *kind.Pattern, *kind.MinLength, *kind.MaxLength:
		t.stringError(p, key, e)
	case *kind.Not, *kind.FalseSchema:
		t.add(field.Forbidden(p, fmt.Sprintf("%s is not allowed here", quoted(key))))
	default:
		t.add(field.Invalid(p, key, e.ErrorKind.LocalizedString(printer)))
	}
}

// typeError: a value of the wrong type at loc. A number or boolean where only a string
// belongs gets the fix once listed; a map where a string belongs in a map of strings, the
// --set hint. An entry of a map of scalars is reported for its type alone (not its key).
func (t *translator) typeError(loc, want []string, e *jsonschema.ValidationError) {
	v, _ := lookup(t.vals, loc...)
	p, key, s := t.vs.walk(loc)
	wantsString := containsType(want, "string")
	hintable := wantsString && !containsType(want, "number") && !containsType(want, "integer")
	x, explained := explanations[keyword(e)]
	detail, sep := x.detail, ": "
	if !explained {
		detail, sep = "must be "+nouns(want, s), "; "
	}
	pr := problem{err: field.TypeInvalid(p, describe(v), detail), path: p, value: v, alone: key}
	if m, isMap := v.(map[string]any); isMap && wantsString && key {
		// Nested keys are --set's splitting a key at its dots only when --set gave them.
		pr.err.Detail = detail + ", not maps"
		at := slices.Clone(loc)
		pr.words = func(e *field.Error, src *Sources) {
			if l, ok := src.Locate(at...); ok && (l.Kind == FromSet || l.Kind == FromSetString) {
				parent, _, _ := t.vs.walk(at[:len(at)-1])
				e.Detail = splitKeyHint(detail, parent, at[len(at)-1], m)
			}
		}
	} else if hintable {
		pr.hintSep = sep
	}
	t.out = append(t.out, pr)
}

// required: the object at loc misses the property m.
func (t *translator) required(loc []string, m string, e *jsonschema.ValidationError) {
	at := append(slices.Clone(loc), m)
	if t.explain(keyword(e)+"/"+m, at) {
		return
	}
	p, _, s := t.vs.walk(at)
	detail := nouns(types(s), s)
	if ts := types(s); titleOf(s) != "" && !containsType(ts, "object") && !containsType(ts, "array") {
		detail = titleOf(s) // what is missing: "the variable's name"
	}
	if v, ok := lookup(t.defaults, at...); ok && v != nil {
		detail += " (a null removed the chart's default)"
	}
	t.add(field.Required(p, detail))
}

// unknown: the object at loc has a property its schema does not know.
func (t *translator) unknown(loc []string, name string, e *jsonschema.ValidationError) {
	at := append(slices.Clone(loc), name)
	if t.explain(keyword(e)+"/"+name, at) {
		return
	}
	p, _, _ := t.vs.walk(at)
	known, ok := t.known[e.SchemaURL]
	if !ok {
		if s := t.vs.at[e.SchemaURL]; s != nil {
			known = slices.Sorted(maps.Keys(s.Properties))
		}
		t.known[e.SchemaURL] = known
	}
	// Worded once listed (report): a million unknown keys are a million problems counted.
	err := &field.Error{Type: field.ErrorTypeNotSupported, Field: p.String(), BadValue: name}
	t.out = append(t.out, problem{err: err, words: func(e *field.Error, _ *Sources) { *e = *unknownField(p, name, known) }})
}

func (t *translator) tooFew(p *field.Path, v any, got, want int) {
	if got == 0 {
		t.add(field.Required(p, "must not be empty"))
		return
	}
	t.add(field.Invalid(p, describe(v), fmt.Sprintf("must have at least %d entries", want)))
}

// stringError collects the errors of one string (a value or a property name), worded
// together.
func (t *translator) stringError(p *field.Path, s string, e *jsonschema.ValidationError) {
	id := p.String()
	group := t.strAt[id]
	if group == nil {
		group = &stringErrors{path: p, value: s}
		t.strAt[id] = group
		t.strs = append(t.strs, group)
	}
	group.errs = append(group.errs, e)
	if k, ok := e.ErrorKind.(*kind.Pattern); ok {
		group.pattern = k.Want
	} else if sch := t.vs.at[e.SchemaURL]; sch != nil && sch.Pattern != nil && group.pattern == "" {
		group.pattern = sch.Pattern.String()
	}
}

// words adds the problems of one string: its pattern's phraser's, or generic ones.
func (t *translator) words(s *stringErrors) {
	if phrase := phrasers[basePattern(s.pattern)]; phrase != nil {
		if errs := phrase(s.value, s.path); len(errs) > 0 {
			for _, e := range errs {
				t.add(e)
			}
			return
		}
	}
	if s.value == "" {
		t.add(field.Required(s.path, "must not be empty"))
		return
	}
	for _, e := range s.errs {
		switch k := e.ErrorKind.(type) {
		case *kind.Pattern:
			t.add(field.Invalid(s.path, s.value, "must match the regular expression "+s.pattern))
		case *kind.MinLength:
			t.add(field.Invalid(s.path, s.value, fmt.Sprintf("must be at least %d characters", k.Want)))
		case *kind.MaxLength:
			t.add(field.Invalid(s.path, s.value, fmt.Sprintf("must be at most %d characters", k.Want)))
		}
	}
}

// nouns words what a value must be, from its schema: a map or list with its `title` ("a map
// of label key to label value", "a map of registry, repository, tag and pullPolicy", "a list
// of environment variables"), a scalar with its title and type ("the name of a Secret (a
// string)"), else its types ("a string", "true or false"); one of the values of an enum.
// A map's title says what it maps ("KEY to VALUE") or which fields it holds; a list's, its
// entries (plural); a scalar's, what it is (with its article).
func nouns(want []string, s *jsonschema.Schema) string {
	title := titleOf(s)
	var words []string
	for _, w := range want {
		switch w {
		case "null":
			continue
		case "object":
			w = "a map"
			if title != "" {
				w += " of " + title
			}
		case "array":
			w = "a list"
			if title != "" {
				w += " of " + title
			}
		case "boolean":
			w = "true or false"
		case "integer":
			w = "a whole number"
		default:
			w = "a " + w
		}
		if !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		if enum := find(s, func(s *jsonschema.Schema) *jsonschema.Enum { return s.Enum }); enum != nil {
			vals := enumValues(enum.Values)
			for i, v := range vals {
				vals[i] = strconv.Quote(v)
			}
			return "one of " + strings.Join(vals, ", ")
		}
		return "a value"
	}
	out := strings.Join(words, " or ")
	if title != "" && !containsType(want, "object") && !containsType(want, "array") {
		out = title + " (" + out + ")"
	}
	return out
}

// titleOf is the `title` of s: its own, else its $ref's or its anyOf branches' (a nullable
// field is anyOf its type and null).
func titleOf(s *jsonschema.Schema) string {
	if s != nil && s.Title != "" {
		return s.Title
	}
	return find(s, func(s *jsonschema.Schema) string { return s.Title })
}

// countNoun names what a map or list over its bound holds: a list's title ("environment
// variables"), a map's count noun (mapCounts), else the field's name.
func countNoun(s *jsonschema.Schema, loc []string) string {
	if noun := find(s, func(s *jsonschema.Schema) string { return mapCounts[strings.TrimPrefix(s.Location, schemaURL+"#")] }); noun != "" {
		return noun
	}
	if ts := types(s); containsType(ts, "array") {
		if title := titleOf(s); title != "" {
			return title
		}
	}
	if len(loc) > 0 {
		return loc[len(loc)-1]
	}
	return "entries"
}

// mapCounts: what the entries of a bounded map are called, as the webhook counts them on
// the RBLNDriver (api/validation). A map's title says what it maps, not what to count.
var mapCounts = map[string]string{
	"/$defs/labelSelector": "selector keys",
	"/$defs/annotations":   "annotations",
	"/$defs/resourceList":  "resources",
}

// enumValues are the values an enum lists, as text; "" (unset) is not listed.
func enumValues(vals []any) []string {
	var out []string
	for _, v := range vals {
		if s := fmt.Sprint(v); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func allStrings(vals []any) bool {
	for _, v := range vals {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return len(vals) > 0
}

func quoted(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", dgvalidation.Truncate(s, dgvalidation.MaxQuotedValue))
	}
	return fmt.Sprint(describe(v))
}

// number is a whole number as an integer (3000000000, not 3e+09).
func number(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) && f > -(1<<53) && f < 1<<53 {
		return int64(f)
	}
	return describe(v)
}

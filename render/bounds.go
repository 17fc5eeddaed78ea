package render

import (
	"fmt"
	"maps"
	"reflect"
	"regexp/syntax"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"k8s.io/apimachinery/pkg/util/validation/field"

	dgvalidation "github.com/driverguard/driverguard/api/validation"
)

// The bounds pass: one walk of the values, before the schema validates them or anything is
// decoded, that enforces the schema's size bounds — maxItems and maxProperties, and the length
// of strings the schema constrains — and keeps what is over them away from the validator and
// the decoding: a list or map over its bound is cut to one entry more than it (still over, so
// the rules that read it skip it as before), a string far over its bound to one byte more than
// it. The cost of the values is then bounded by the schema, whatever the user sends: 65,536
// items given by one --set are one problem, not 65,536 items validated and decoded.

// boundedStringSlack is how many bytes a string may have per character of its bound: one
// within it in bytes may still be within it in characters, and is left to the schema.
const boundedStringSlack = utf8.UTFMax

// unboundedPatternLength bounds a string whose pattern allows any length (a registry host, a
// repository path): no value of the driver's is legal beyond it (Kubernetes' limit on all the
// annotations of an object).
const unboundedPatternLength = dgvalidation.MaxAnnotationBytes

type bounder struct {
	vs  *valuesSchema
	out []problem
	// max caches the longest match of each pattern (-1: unbounded).
	max map[string]int
}

// bound enforces the schema's size bounds on vals and returns them cut (see above; vals are
// not changed: what is cut is copied) with the problems, each marking its field as judged
// (report drops the others at or under it).
func (vs *valuesSchema) bound(vals map[string]any) (map[string]any, []problem) {
	b := &bounder{vs: vs, max: map[string]int{}}
	cut, _ := b.node(vals, make([]string, 0, 16), []*jsonschema.Schema{vs.root}).(map[string]any)
	return cut, b.out
}

// applicable are the schemas that apply to a value unconditionally: ss, their $refs and allOf
// branches.
func applicable(ss []*jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	var add func(s *jsonschema.Schema, depth int)
	add = func(s *jsonschema.Schema, depth int) {
		if s == nil || depth > 32 || slices.Contains(out, s) {
			return
		}
		out = append(out, s)
		add(s.Ref, depth+1)
		for _, a := range s.AllOf {
			add(a, depth+1)
		}
	}
	for _, s := range ss {
		add(s, 0)
	}
	return out
}

// node bounds v at loc, validated by ss, and returns what replaces it.
func (b *bounder) node(v any, loc []string, ss []*jsonschema.Schema) any {
	if len(ss) == 1 && b.vs.applies[ss[0]] != nil {
		ss = b.vs.applies[ss[0]]
	} else {
		ss = applicable(ss)
	}
	if len(ss) == 0 {
		return v
	}
	switch v := v.(type) {
	case []any:
		limit := -1
		for _, s := range ss {
			if s.MaxItems != nil && (limit < 0 || *s.MaxItems < limit) {
				limit = *s.MaxItems
			}
		}
		if limit >= 0 && len(v) > limit {
			b.count(loc, len(v), limit)
			v = v[: limit+1 : limit+1]
		}
		copied := false
		var items []*jsonschema.Schema
		for _, s := range ss {
			if s.Items2020 != nil {
				items = append(items, s.Items2020)
			} else if it, ok := s.Items.(*jsonschema.Schema); ok {
				items = append(items, it)
			}
		}
		if len(items) > 0 {
			for i, e := range v {
				if r := b.node(e, append(loc, strconv.Itoa(i)), items); !same(r, e) {
					if !copied {
						v, copied = slices.Clone(v), true
					}
					v[i] = r
				}
			}
		}
		return v
	case map[string]any:
		limit := -1
		for _, s := range ss {
			if s.MaxProperties != nil && (limit < 0 || *s.MaxProperties < limit) {
				limit = *s.MaxProperties
			}
		}
		copied := false
		if limit >= 0 && len(v) > limit {
			b.count(loc, len(v), limit)
			cut := make(map[string]any, limit+1)
			for k, e := range v { // which ones stay does not matter: nothing under it is reported
				if len(cut) > limit {
					break
				}
				cut[k] = e
			}
			v, copied = cut, true
		}
		var sub []*jsonschema.Schema
		for k, e := range v {
			sub = sub[:0]
			for _, s := range ss {
				if p := s.Properties[k]; p != nil {
					sub = append(sub, p)
				} else if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
					sub = append(sub, a)
				}
			}
			if len(sub) > 0 {
				if r := b.node(e, append(loc, k), sub); !same(r, e) {
					if !copied {
						v, copied = maps.Clone(v), true
					}
					v[k] = r
				}
			}
		}
		return v
	case string:
		return b.str(v, loc, ss)
	}
	return v
}

// same reports whether node r is node e (what node returns when it changes nothing).
func same(r, e any) bool {
	switch e := e.(type) {
	case string:
		rs, ok := r.(string)
		return ok && len(rs) == len(e)
	case []any:
		rl, ok := r.([]any)
		return ok && len(rl) == len(e) && (len(e) == 0 || &rl[0] == &e[0])
	case map[string]any:
		rm, ok := r.(map[string]any)
		return ok && reflect.ValueOf(rm).UnsafePointer() == reflect.ValueOf(e).UnsafePointer()
	}
	return true
}

// count reports a list or map of n entries over its limit.
func (b *bounder) count(loc []string, n, limit int) {
	p, _, s := b.vs.walk(loc)
	b.out = append(b.out, problem{err: dgvalidation.ValidateCount(n, limit, countNoun(s, loc), p), bound: true})
}

// str bounds a string: longer than its bound (maxLength, else the longest its pattern allows)
// by more than boundedStringSlack bytes a character, it is reported as the schema's words would
// report it, and cut.
func (b *bounder) str(s string, loc []string, ss []*jsonschema.Schema) any {
	limit, pattern := -1, ""
	for _, sc := range ss {
		if sc.MaxLength != nil && (limit < 0 || *sc.MaxLength < limit) {
			limit = *sc.MaxLength
		}
		if sc.Pattern != nil && pattern == "" {
			pattern = sc.Pattern.String()
		}
	}
	if limit < 0 && pattern != "" {
		if limit = b.longest(pattern); limit < 0 {
			limit = unboundedPatternLength
		}
	}
	if limit < 0 || len(s) <= limit*boundedStringSlack {
		return s
	}
	p, _, _ := b.vs.walk(loc)
	var errs field.ErrorList
	if phrase := phrasers[basePattern(pattern)]; phrase != nil {
		errs = phrase(s, p)
	}
	if len(errs) == 0 {
		errs = field.ErrorList{field.Invalid(p, s, fmt.Sprintf("must be at most %d characters", limit))}
	}
	for _, e := range errs {
		b.out = append(b.out, problem{err: e, bound: true})
	}
	return s[:limit*boundedStringSlack+1]
}

// longest is the most characters a string matching pattern may have; -1 when unbounded.
func (b *bounder) longest(pattern string) int {
	if n, ok := b.max[pattern]; ok {
		return n
	}
	n := -1
	if re, err := syntax.Parse(pattern, syntax.Perl); err == nil {
		n = maxLen(re.Simplify())
	}
	b.max[pattern] = n
	return n
}

// maxLen is the most characters re matches; -1 when unbounded.
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpNoMatch:
		return 0
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture:
		return maxLen(re.Sub[0])
	case syntax.OpConcat:
		total := 0
		for _, s := range re.Sub {
			n := maxLen(s)
			if n < 0 {
				return -1
			}
			total += n
		}
		return total
	case syntax.OpAlternate:
		most := 0
		for _, s := range re.Sub {
			n := maxLen(s)
			if n < 0 {
				return -1
			}
			most = max(most, n)
		}
		return most
	case syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpRepeat:
		n := maxLen(re.Sub[0])
		if n < 0 || re.Max < 0 {
			return -1
		}
		return n * re.Max
	}
	return -1 // star, plus
}

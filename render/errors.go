package render

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/validation"
)

// InvalidValuesError lists every problem found in the values: the first MaxListedErrors, and
// how many more there are. Nothing is rendered when it is returned.
type InvalidValuesError struct {
	Errs field.ErrorList
	// Omitted counts the problems found beyond Errs.
	Omitted int
}

// maxErrorLine bounds one problem's line in the message (its values are cut already; this
// is the backstop for a message quoting something long).
const maxErrorLine = 2000

func (e *InvalidValuesError) Error() string {
	var b strings.Builder
	b.WriteString("invalid values, nothing rendered:")
	for _, fe := range validation.Quotable(e.Errs) {
		b.WriteString("\n  ")
		b.WriteString(validation.Truncate(fe.Error(), maxErrorLine))
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more (%d problems in all)", e.Omitted, e.Total())
	}
	return b.String()
}

// Total is the number of problems found.
func (e *InvalidValuesError) Total() int { return len(e.Errs) + e.Omitted }

// Unwrap exposes each field error to errors.Is and errors.As.
func (e *InvalidValuesError) Unwrap() []error {
	errs := make([]error, len(e.Errs))
	for i, fe := range e.Errs {
		errs[i] = fe
	}
	return errs
}

// unknownField is the problem of a key its object does not know, with the nearest known one.
func unknownField(p *field.Path, k string, known []string) *field.Error {
	detail := "unknown field"
	if s := suggest(k, known); s != "" {
		detail += fmt.Sprintf(", did you mean %q?", s)
	}
	detail += " (known: " + strings.Join(known, ", ") + "); a mistyped key would otherwise be ignored and its value inherited"
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: p.String(), BadValue: k, Detail: detail}
}

// describe renders a values node for an error message.
func describe(v any) any {
	switch v.(type) {
	case map[string]any:
		return "<map>"
	case []any:
		return "<list>"
	case nil:
		return "null"
	}
	return v
}

// stringHint is the fix for a number or boolean where a string belongs, after sep, quoting
// what the user wrote: the text of a values file (YAML reads an unquoted 3.10 as the number
// 3.1, an unquoted y as true), or of --set (which reads 3 and true as a number and a boolean;
// --set-string does not). Anything else gets no hint.
func stringHint(src *Sources, sep string, p *field.Path, v any) string {
	var what string
	switch v.(type) {
	case bool:
		what = fmt.Sprintf("the boolean %v", v)
	case int, int64, float64:
		what = fmt.Sprintf("the number %v", v)
	default:
		return ""
	}
	setPath := validation.Truncate(SetPath(p), validation.MaxFieldPath)
	if loc, ok := src.LocateField(p); ok && loc.Text != "" {
		text := validation.Truncate(loc.Text, validation.MaxQuotedValue)
		switch {
		case loc.Kind == FromFile && loc.Plain:
			return fmt.Sprintf("%sYAML reads the unquoted %s at %s as %s: quote it: %s", sep, text, loc, what, strconv.Quote(text))
		case loc.Kind == FromSet:
			return fmt.Sprintf("%s--set reads %s as %s: pass it with --set-string '%s=%s'", sep, text, what, setPath, text)
		}
	}
	text := validation.Truncate(fmt.Sprint(v), validation.MaxQuotedValue)
	return fmt.Sprintf("%sYAML and --set read unquoted numbers and booleans as such: quote it in a values file (%q), or pass it with --set-string '%s=%s'",
		sep, text, setPath, text)
}

// maxSplitKeyDepth bounds the nested keys splitKeyHint joins back: a label key has at most
// a few dots (253 characters of DNS prefix and 63 of name).
const maxSplitKeyDepth = 64

// splitKeyHint explains a map where a string belongs in a map of strings (lead says what
// belongs): --set splits keys at dots, so rebellions.ai/npu.family became nested keys.
func splitKeyHint(lead string, p *field.Path, k string, nested map[string]any) string {
	key := k
	var cur any = nested
	for depth := 0; ; depth++ {
		m, ok := cur.(map[string]any)
		if !ok {
			break
		}
		if len(m) != 1 || depth >= maxSplitKeyDepth {
			return lead + ", not maps"
		}
		for sub, v := range m {
			key, cur = key+"."+sub, v
		}
	}
	return fmt.Sprintf("%s, not maps: --set splits keys at dots, so %q became nested keys; escape its dots: --set '%s=%s'", lead,
		validation.Truncate(key, validation.MaxQuotedValue), validation.Truncate(SetPath(p.Key(pathKey(key))), validation.MaxFieldPath),
		validation.Truncate(fmt.Sprint(describe(cur)), validation.MaxQuotedValue))
}

// SetPath writes a field path the way --set takes it: segments joined with '.', and dots and
// commas inside a segment (label keys such as rebellions.ai/npu.family) escaped.
func SetPath(p *field.Path) string {
	segs := pathSegments(p)
	for i, seg := range segs {
		segs[i] = strings.NewReplacer(".", `\.`, ",", `\,`).Replace(seg)
	}
	return strings.Join(segs, ".")
}

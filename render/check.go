package render

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	dgvalidation "github.com/driverguard/driverguard/api/validation"
)

// MaxListedErrors bounds the problems an *InvalidValuesError holds; the others are counted
// (README.md "Exit codes": messages cap long lists with a total).
const MaxListedErrors = 50

// maxRepeatedDetail is the longest detail repeated word for word in one report.
const maxRepeatedDetail = 120

// problem is one problem of the values.
type problem struct {
	err *field.Error
	// A number or boolean where a string belongs gets its fix (stringHint, after hintSep)
	// once the problem is listed; path and value are where and what it is.
	path    *field.Path
	value   any
	hintSep string
	// rule marks a problem of rules: it replaces the schema's problems at its field (the
	// webhook's words for a label, e.g.).
	rule bool
	// alone marks a problem that replaces the schema's other problems at its field (an entry
	// of a map of strings with the wrong type: its key is not judged).
	alone bool
	// words, when set, completes err's Detail: only listed problems are worded (a million
	// unknown keys are counted, not each given a did-you-mean and the known keys).
	words func(*field.Error, *Sources)
	// omitted, in a problem without err, counts problems not listed (they would sort after
	// MaxListedErrors others).
	omitted int
	// bound marks a problem of the bounds pass (bounds.go): it replaces every other problem
	// at or under its field.
	bound bool
}

// checkValues lists every problem of the values at once — the schema's, and those of the
// rules it cannot state — or returns nil. vals are the coalesced values, defaults the chart's.
// bounds are the problems of the bounds pass, already run on vals.
func checkValues(ctx context.Context, vs *valuesSchema, vals, defaults map[string]any, d *driverValues, bounds []problem, src *Sources) error {
	verr, err := vs.validate(vals)
	if err != nil {
		return err
	}
	probs := bounds
	if verr != nil {
		probs = append(probs, vs.problems(verr, vals, defaults)...)
	}
	probs = append(probs, rules(ctx, d)...)
	if err := ctx.Err(); err != nil {
		return err
	}
	return report(probs, src)
}

// rules are what the schema cannot state (docs/values.md "Instances", "Errors"): label syntax and reserved selector keys
// and annotation keys and sizes (api/validation, as the webhook applies them); a null that
// removes a required inherited image field; the size limits of an instance's maps merged
// with those it inherits.
func rules(ctx context.Context, d *driverValues) []problem {
	p := field.NewPath("driver")
	errs := append(selectorRules(d.NodeSelector, p.Child("nodeSelector")), annotationRules(d.Annotations, p.Child("annotations"))...)
	instances, _ := d.Instances.get()
	for _, key := range slices.Sorted(maps.Keys(instances)) {
		inst, ok := instances[key].get()
		if !ok || ctx.Err() != nil {
			continue
		}
		ip := p.Child("instances", pathKey(key))
		errs = append(errs, selectorRules(inst.NodeSelector, ip.Child("nodeSelector"))...)
		errs = append(errs, annotationRules(inst.Annotations, ip.Child("annotations"))...)
		errs = append(errs, removedImage(inst.Image, ip.Child("image"))...)
		errs = append(errs, mergedCount(inst.Annotations, d.Annotations, dgvalidation.MaxAnnotations, "annotations", "annotations", ip.Child("annotations"))...)
		own, base := inst.Resources.value(), d.Resources.value()
		errs = append(errs, mergedCount(own.Limits, base.Limits, dgvalidation.MaxResourceNames, "resources", "resources.limits", ip.Child("resources", "limits"))...)
		errs = append(errs, mergedCount(own.Requests, base.Requests, dgvalidation.MaxResourceNames, "resources", "resources.requests", ip.Child("resources", "requests"))...)
		errs = append(errs, mergedAnnotationBytes(inst.Annotations, d.Annotations, ip.Child("annotations"))...)
	}
	probs := make([]problem, len(errs))
	for i, e := range errs {
		probs[i] = problem{err: e, rule: true}
	}
	return probs
}

func selectorRules(sel opt[map[string]opt[string]], p *field.Path) field.ErrorList {
	if !sel.set {
		return nil
	}
	strs := entries(sel)
	return quoteKeys(dgvalidation.ValidateNodeSelector(strs, p), p, strs)
}

// quoteKeys rewrites the fields of errs at the entries p[k] of a map whose key k is not
// printable as the schema's problems show them (pathKey): p["k\x1b"].
func quoteKeys(errs field.ErrorList, p *field.Path, m map[string]string) field.ErrorList {
	for k := range m {
		q := pathKey(k)
		if q == k {
			continue
		}
		raw, quoted := p.Key(k).String(), p.Key(q).String()
		for _, e := range errs {
			if e.Field == raw || strings.HasPrefix(e.Field, raw+".") || strings.HasPrefix(e.Field, raw+"[") {
				e.Field = quoted + e.Field[len(raw):]
			}
		}
	}
	return errs
}

func annotationRules(ann opt[map[string]opt[string]], p *field.Path) field.ErrorList {
	if !ann.set || len(ann.v) > dgvalidation.MaxAnnotations { // beyond it reported once, by its count
		return nil
	}
	strs := entries(ann)
	errs := dgvalidation.ValidateAnnotationKeys(strs, p)
	if e := dgvalidation.ValidateAnnotationsSize(strs, p); e != nil {
		errs = append(errs, e)
	}
	return quoteKeys(errs, p, strs)
}

// removedImage reports the required image fields an instance removes with null (image: null
// removes them all): its RBLNDriver would have none, whatever driver.image holds.
func removedImage(img opt[imageValues], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		key, field string
		value      opt[string]
	}{{"registry", "registry", img.v.Registry}, {"repository", "image", img.v.Repository}, {"tag", "version", img.v.Tag}} {
		if img.null || img.set && f.value.null {
			errs = append(errs, field.Required(p.Child(f.key), fmt.Sprintf(
				"spec.%s would be empty: a null on this instance removed the inherited driver.image.%s; remove the null to inherit it or set a value", f.field, f.key)))
		}
	}
	return errs
}

// mergedCount reports an instance's map that is within its size limit on its own and in the
// top-level block, but not once merged (the instance's keys win, a null removes a key): its
// RBLNDriver would carry more than the webhook allows.
func mergedCount[T any](own, base opt[map[string]opt[T]], limit int, what, from string, p *field.Path) field.ErrorList {
	if !own.set || !base.set || len(own.v) > limit || len(base.v) > limit {
		return nil // one side inherits or removes the other whole, or is reported already
	}
	n, inherited := len(entries(own)), 0
	for k, v := range base.v {
		if _, written := own.v[k]; !written && v.set {
			inherited++
		}
	}
	if n+inherited <= limit {
		return nil
	}
	e := field.TooMany(p, n+inherited, limit)
	e.Detail = fmt.Sprintf("its RBLNDriver would carry %d %s, %d of its own and %d inherited from driver.%s; at most %d are allowed: set fewer, or remove inherited ones with null",
		n+inherited, what, n, inherited, from, limit)
	return field.ErrorList{e}
}

// mergedAnnotationBytes reports an instance's annotations that are within the size limit on
// their own and in the top-level block (count and bytes), but over MaxAnnotationBytes once
// merged: its RBLNDriver (and its pods) would carry more than Kubernetes allows.
func mergedAnnotationBytes(own, base opt[map[string]opt[string]], p *field.Path) field.ErrorList {
	if !own.set || !base.set || len(own.v) > dgvalidation.MaxAnnotations || len(base.v) > dgvalidation.MaxAnnotations {
		return nil
	}
	merged, baseStrs := entries(own), entries(base)
	if dgvalidation.ValidateAnnotationsSize(merged, p) != nil || dgvalidation.ValidateAnnotationsSize(baseStrs, p) != nil {
		return nil // reported already
	}
	if merged == nil {
		merged = map[string]string{}
	}
	ownBytes, inheritedBytes := 0, 0
	for k, s := range merged {
		ownBytes += len(k) + len(s)
	}
	for k, s := range baseStrs {
		if _, written := own.v[k]; !written {
			merged[k] = s
			inheritedBytes += len(k) + len(s)
		}
	}
	if len(merged) > dgvalidation.MaxAnnotations {
		return nil // reported by its count
	}
	e := dgvalidation.ValidateAnnotationsSize(merged, p)
	if e == nil {
		return nil
	}
	e.Detail = fmt.Sprintf("its RBLNDriver would carry %d bytes of annotations (keys and values), %d of its own and %d inherited from driver.annotations; at most %d (256 KiB, Kubernetes' limit on the annotations of the driver pods) are allowed: set fewer, or remove inherited ones with null",
		ownBytes+inheritedBytes, ownBytes, inheritedBytes, dgvalidation.MaxAnnotationBytes)
	return field.ErrorList{e}
}

// report is the problems as users read them, or nil: a rule's problem (or one marked alone)
// replaces the schema's others at its field; a list or map over its size limit is reported
// alone; sorted by field; the first MaxListedErrors listed (with their hints), the others
// counted.
func report(probs []problem, src *Sources) error {
	first := map[string]bool{}
	bounded := map[string]bool{}
	var tooMany []string
	omitted := 0
	listable := probs[:0]
	for _, pr := range probs {
		if pr.err == nil {
			omitted += pr.omitted
		} else {
			listable = append(listable, pr)
		}
	}
	probs = listable
	for _, pr := range probs {
		if pr.rule || pr.alone {
			first[pr.err.Field] = true
		}
		if pr.bound {
			bounded[pr.err.Field] = true
		}
		if pr.err.Type == field.ErrorTypeTooMany {
			tooMany = append(tooMany, pr.err.Field)
		}
	}
	// A rule's count at a field the bounds pass cut words it (with the count before the cut).
	counted := map[string]bool{}
	for _, pr := range probs {
		if pr.rule && pr.err.Type == field.ErrorTypeTooMany && bounded[pr.err.Field] {
			for _, b := range probs {
				if b.bound && b.err.Field == pr.err.Field && b.err.Type == field.ErrorTypeTooMany {
					pr.err.BadValue = b.err.BadValue
					counted[pr.err.Field] = true
				}
			}
		}
	}
	kept := probs[:0]
	for _, pr := range probs {
		superseded := !pr.bound && (bounded[pr.err.Field] || !pr.rule && !pr.alone && first[pr.err.Field])
		if pr.rule && counted[pr.err.Field] && pr.err.Type == field.ErrorTypeTooMany {
			superseded = false
		} else if pr.bound && counted[pr.err.Field] {
			superseded = true
		}
		if !superseded && !under(pr.err.Field, tooMany) {
			kept = append(kept, pr)
		}
	}
	if len(kept) == 0 {
		return nil // the omitted are counted beside MaxListedErrors kept others
	}
	// By field; at one field the rules' problems in their order, the schema's (which come in
	// no set order) by type and words. A field has problems of one or the other.
	keys := make(map[*field.Error]string, len(kept))
	for _, pr := range kept {
		keys[pr.err] = sortKey(pr.err.Field)
	}
	sort.SliceStable(kept, func(i, j int) bool {
		a, b := kept[i], kept[j]
		if ka, kb := keys[a.err], keys[b.err]; ka != kb || a.rule || b.rule {
			return ka < kb
		}
		return a.err.Type < b.err.Type || a.err.Type == b.err.Type && a.err.Detail < b.err.Detail
	})
	n := min(len(kept), MaxListedErrors)
	// A long rule (the RFC 1123 paragraph of every bad name in a list) is said once: later
	// problems that would repeat it word for word point to the first.
	said := map[string]string{}
	errs := make(field.ErrorList, n)
	for i, pr := range kept[:n] {
		if pr.words != nil {
			pr.words(pr.err, src)
		}
		if pr.hintSep != "" {
			pr.err.Detail += stringHint(src, pr.hintSep, pr.path, pr.value)
		}
		if first, ok := said[pr.err.Detail]; ok {
			pr.err.Detail = "breaks the same rule as " + first + " (above)"
		} else if len(pr.err.Detail) > maxRepeatedDetail {
			said[pr.err.Detail] = pr.err.Field
		}
		errs[i] = pr.err
	}
	return &InvalidValuesError{Errs: errs, Omitted: len(kept) - n + omitted}
}

// under reports whether the field f is inside one of fields.
func under(f string, fields []string) bool {
	for _, p := range fields {
		if len(f) > len(p) && strings.HasPrefix(f, p) && (f[len(p)] == '.' || f[len(p)] == '[') {
			return true
		}
	}
	return false
}

// sortKey orders list indexes as numbers (tolerations[9] before tolerations[10]).
func sortKey(f string) string {
	if !strings.Contains(f, "[") {
		return f
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		b.WriteByte(f[i])
		if f[i] != '[' {
			continue
		}
		j := i + 1
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		if j > i+1 && j < len(f) && f[j] == ']' && j-i-1 < 20 {
			b.WriteString(strings.Repeat("0", 20-(j-i-1)))
		}
	}
	return b.String()
}

package render

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	dgvalidation "github.com/driverguard/driverguard/api/validation"
)

// Field names of the driver block. instanceFields may appear on an instance; the others are
// top-level only.
var (
	driverFields   = []string{"enabled", "deployDefault", "image", "imagePullSecrets", "resources", "manager", "smd", "annotations", "tolerations", "env", "priorityClassName", "nodeSelector", "upgradePolicy", "instances"}
	instanceFields = []string{"image", "imagePullSecrets", "resources", "manager", "smd", "annotations", "tolerations", "env", "priorityClassName", "nodeSelector"}
	rootFields     = []string{"driver", "global", "webhook"}

	// notInstanceFields explains the top-level-only fields when they appear on an instance.
	notInstanceFields = map[string]string{
		"upgradePolicy": "upgradePolicy is cluster-wide, not an instance field: set driver.upgradePolicy (rendered once onto the RBLNClusterPolicy); per-instance upgrade cadence is not supported",
		"enabled":       "enabled is not an instance field: remove the instance to stop rendering it, or set driver.enabled=false to render no RBLNDriver at all",
		"deployDefault": "deployDefault is not an instance field: set driver.deployDefault",
		"instances":     "instances cannot be nested: declare every instance directly under driver.instances",
	}
)

var (
	registryRE   = regexp.MustCompile(dgvalidation.RegistryPattern)
	repositoryRE = regexp.MustCompile(dgvalidation.RepositoryPattern)
)

// MaxListedErrors bounds the problems an *InvalidValuesError holds; the others are counted
// (SPEC §7: messages cap long lists with a total).
const MaxListedErrors = 50

// checker collects every structural problem of the values before anything is rendered: the
// first MaxListedErrors, and how many more there are.
type checker struct {
	ctx  context.Context
	errs field.ErrorList
	more int
	// src locates values in what the user wrote, for hints (nil: no hints from the source).
	src *Sources
}

func (c *checker) add(errs ...*field.Error) {
	n := min(len(errs), MaxListedErrors-len(c.errs))
	if n > 0 {
		c.errs = append(c.errs, errs[:n]...)
	}
	c.more += len(errs) - max(n, 0)
}

// full reports whether further problems are only counted: their messages are not built.
func (c *checker) full() bool { return len(c.errs) >= MaxListedErrors }

// err is the problems found, or nil.
func (c *checker) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return &InvalidValuesError{Errs: c.errs, Omitted: c.more}
}

// object returns v as a map. nullable allows an explicit null (returned as a nil map, ok).
func (c *checker) object(v any, p *field.Path, nullable bool, what string) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case nil:
		if nullable {
			return nil, true
		}
	}
	c.add(field.TypeInvalid(p, describe(v), "must be a map of "+what))
	return nil, false
}

// keys reports every key of m that is not in known, with the nearest known key.
func (c *checker) keys(m map[string]any, p *field.Path, known []string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if slices.Contains(known, k) {
			continue
		}
		c.add(unknownField(p.Child(k), k, known))
	}
}

func unknownField(p *field.Path, k string, known []string) *field.Error {
	detail := "unknown field"
	if s := suggest(k, known); s != "" {
		detail += fmt.Sprintf(", did you mean %q?", s)
	}
	detail += " (known: " + strings.Join(known, ", ") + "); a mistyped key would otherwise be ignored and its value inherited"
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: p.String(), BadValue: k, Detail: detail}
}

// str checks an optional string field. A pattern check runs on non-empty strings.
func (c *checker) str(m map[string]any, k string, p *field.Path, nullable bool, check func(string, *field.Path) field.ErrorList) {
	v, ok := m[k]
	if !ok {
		return
	}
	fp := p.Child(k)
	switch s := v.(type) {
	case string:
		if s != "" && check != nil {
			c.add(check(s, fp)...)
		}
	case nil:
		if !nullable {
			c.add(field.TypeInvalid(fp, nil, "must be a string"))
		}
	default:
		c.add(field.TypeInvalid(fp, describe(v), "must be a string"+c.stringHint("; ", fp, v)))
	}
}

func (c *checker) boolean(m map[string]any, k string, p *field.Path) {
	v, ok := m[k]
	if !ok {
		c.add(field.Required(p.Child(k), "true or false (a null removed the chart's default)"))
		return
	}
	if _, isBool := v.(bool); !isBool {
		c.add(field.TypeInvalid(p.Child(k), describe(v), "must be true or false"))
	}
}

func (c *checker) integer(m map[string]any, k string, p *field.Path) {
	v, ok := m[k]
	if !ok {
		c.add(field.Required(p.Child(k), "a whole number (a null removed the chart's default)"))
		return
	}
	n, isInt := asInt(v)
	switch {
	case !isInt:
		c.add(field.TypeInvalid(p.Child(k), describe(v), "must be a whole number"))
	case n < 0:
		c.add(field.Invalid(p.Child(k), n, "must be 0 or greater"))
	case n > math.MaxInt32:
		c.add(field.Invalid(p.Child(k), n, fmt.Sprintf("must be at most %d", math.MaxInt32)))
	}
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n), true
		}
	}
	return 0, false
}

func matchString(re *regexp.Regexp, detail string) func(string, *field.Path) field.ErrorList {
	return func(s string, p *field.Path) field.ErrorList {
		if re.MatchString(s) {
			return nil
		}
		return field.ErrorList{field.Invalid(p, s, detail)}
	}
}

var (
	checkRegistry   = matchString(registryRE, "must be a registry host with an optional port, e.g. repo.rebellions.ai or registry.local:5000 (no scheme, no path)")
	checkRepository = matchString(repositoryRE, "must be a lowercase image repository path such as rebellions/rbln-driver (no registry, no tag)")
	checkTag        = func(s string, p *field.Path) field.ErrorList { return dgvalidation.ValidateVersion(s, p) }
	checkPull       = func(s string, p *field.Path) field.ErrorList { return dgvalidation.ValidatePullPolicy(s, p) }
	checkSubdomain  = func(s string, p *field.Path) field.ErrorList {
		var errs field.ErrorList
		for _, msg := range validation.IsDNS1123Subdomain(s) {
			errs = append(errs, field.Invalid(p, s, msg))
		}
		return errs
	}
)

// driverBlock checks the top-level driver block.
func (c *checker) driverBlock(d map[string]any, p *field.Path) {
	c.keys(d, p, driverFields)
	c.boolean(d, "enabled", p)
	c.boolean(d, "deployDefault", p)
	if v, ok := d["image"]; !ok {
		c.add(field.Required(p.Child("image"), "the driver image (registry, repository, tag)"))
	} else if img, ok := c.object(v, p.Child("image"), false, "registry, repository, tag and pullPolicy"); ok {
		for _, k := range []string{"registry", "repository", "tag"} {
			if _, ok := img[k]; !ok {
				c.add(field.Required(p.Child("image", k), "the default driver image needs it (a null removed the chart's default)"))
			}
		}
		c.image(img, p.Child("image"), false)
	}
	c.inheritable(d, p, false)
	if v, ok := d["nodeSelector"]; ok {
		c.selector(v, p.Child("nodeSelector"), false)
	}
	if v, ok := d["upgradePolicy"]; !ok {
		c.add(field.Required(p.Child("upgradePolicy"), "the cluster-wide upgrade policy (a null removed the chart's default)"))
	} else {
		c.upgradePolicy(v, p.Child("upgradePolicy"))
	}
	instances, _ := c.object(d["instances"], p.Child("instances"), true, "instance key to partial driver block")
	for _, key := range slices.Sorted(maps.Keys(instances)) {
		if c.ctx.Err() != nil {
			return
		}
		ip := p.Child("instances", key)
		c.add(dgvalidation.ValidateInstanceKey(key, ip)...)
		c.instance(instances[key], ip)
		c.mergedCounts(d, instances[key], ip)
		c.mergedAnnotationBytes(d, instances[key], ip)
	}
	enabled, _ := d["enabled"].(bool)
	deployDefault, _ := d["deployDefault"].(bool)
	switch {
	case !enabled && len(instances) > 0:
		c.add(field.Forbidden(p.Child("instances"), "driver.enabled is false, so no RBLNDriver is rendered; remove the instances or set driver.enabled=true"))
	case enabled && !deployDefault && len(instances) == 0:
		c.add(field.Invalid(p.Child("deployDefault"), false, "it removes the default resource, so at least one entry in driver.instances is required"))
	}
}

// instance checks one driver.instances entry.
func (c *checker) instance(v any, p *field.Path) {
	inst, ok := c.object(v, p, false, "driver fields (at least nodeSelector)")
	if !ok {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(inst)) {
		if slices.Contains(instanceFields, k) {
			continue
		}
		if why, ok := notInstanceFields[k]; ok {
			c.add(field.Forbidden(p.Child(k), why))
			continue
		}
		c.add(unknownField(p.Child(k), k, instanceFields))
	}
	if v, ok := inst["image"]; ok {
		if img, ok := c.object(v, p.Child("image"), true, "registry, repository, tag and pullPolicy"); ok {
			c.image(img, p.Child("image"), true)
			c.removedImage(v == nil, img, p.Child("image"))
		}
	}
	c.inheritable(inst, p, true)
	sel, ok := inst["nodeSelector"]
	if !ok {
		c.add(field.Required(p.Child("nodeSelector"), "every instance needs its own non-empty selector (it is never inherited), e.g. {rebellions.ai/npu.family: atom}"))
		return
	}
	if m := c.selector(sel, p.Child("nodeSelector"), true); m != nil && len(m) == 0 {
		c.add(field.Required(p.Child("nodeSelector"), "must not be empty: only the default resource may select every node; select this instance's nodes, e.g. {rebellions.ai/npu.family: atom}"))
	}
}

// removedImage reports the required image fields an instance removes with null (image: null
// removes them all): its RBLNDriver would have none, whatever driver.image holds (the chart's
// defaults at least, or driver.image's own error).
func (c *checker) removedImage(all bool, img map[string]any, p *field.Path) {
	for _, f := range []struct{ key, field string }{{"registry", "registry"}, {"repository", "image"}, {"tag", "version"}} {
		if v, set := img[f.key]; all || (set && v == nil) {
			c.add(field.Required(p.Child(f.key), fmt.Sprintf(
				"spec.%s would be empty: a null on this instance removed the inherited driver.image.%s; remove the null to inherit it or set a value", f.field, f.key)))
		}
	}
}

func (c *checker) image(img map[string]any, p *field.Path, nullable bool) {
	c.keys(img, p, []string{"registry", "repository", "tag", "pullPolicy"})
	c.str(img, "registry", p, nullable, checkRegistry)
	c.str(img, "repository", p, nullable, checkRepository)
	c.str(img, "pullPolicy", p, nullable, checkPull)
	if v, ok := img["tag"]; ok && v == "" {
		c.add(field.Required(p.Child("tag"), "the driver version starts every driver image tag; set it, e.g. \"3.2.2\""))
	}
	c.str(img, "tag", p, nullable, checkTag)
	if v, ok := img["registry"]; ok && v == "" {
		c.add(field.Required(p.Child("registry"), "the registry host of the driver image, e.g. repo.rebellions.ai"))
	}
	if v, ok := img["repository"]; ok && v == "" {
		c.add(field.Required(p.Child("repository"), "the driver image repository, e.g. rebellions/rbln-driver"))
	}
}

// inheritable checks the fields an instance shares with the top-level block (all but image
// and nodeSelector). nullable allows explicit nulls, which remove an inherited value.
func (c *checker) inheritable(m map[string]any, p *field.Path, nullable bool) {
	if v, ok := m["imagePullSecrets"]; ok {
		if list, ok := c.list(v, p.Child("imagePullSecrets"), nullable); ok && c.count(len(list), dgvalidation.MaxPullSecrets, "pull secrets", p.Child("imagePullSecrets")) {
			for i, s := range list {
				ip := p.Child("imagePullSecrets").Index(i)
				if name, isStr := s.(string); isStr {
					c.add(checkSubdomain(name, ip)...)
				} else {
					c.add(field.TypeInvalid(ip, describe(s), "must be the name of a Secret (a string)"))
				}
			}
		}
	}
	if v, ok := m["resources"]; ok {
		c.resources(v, p.Child("resources"), nullable)
	}
	for _, comp := range []string{"manager", "smd"} {
		v, ok := m[comp]
		if !ok {
			continue
		}
		cp := p.Child(comp)
		cm, ok := c.object(v, cp, nullable, "image settings")
		if !ok || cm == nil {
			continue
		}
		c.keys(cm, cp, []string{"image"})
		iv, ok := cm["image"]
		if !ok {
			continue
		}
		img, ok := c.object(iv, cp.Child("image"), nullable, "image settings")
		if !ok || img == nil {
			continue
		}
		ip := cp.Child("image")
		if comp == "smd" {
			if _, hasTag := img["tag"]; hasTag {
				c.add(field.Forbidden(ip.Child("tag"), "smd has no tag of its own: its tag is always the driver version (image.tag); remove it"))
			}
			for _, k := range slices.Sorted(maps.Keys(img)) {
				if k != "registry" && k != "repository" && k != "tag" {
					c.add(unknownField(ip.Child(k), k, []string{"registry", "repository"}))
				}
			}
		} else {
			c.keys(img, ip, []string{"registry", "repository", "tag", "pullPolicy"})
			c.str(img, "tag", ip, true, checkTag)
			c.str(img, "pullPolicy", ip, true, checkPull)
		}
		c.str(img, "registry", ip, true, checkRegistry)
		c.str(img, "repository", ip, true, checkRepository)
	}
	if v, ok := m["annotations"]; ok {
		if ann, ok := c.object(v, p.Child("annotations"), nullable, "annotation key to string value"); ok && c.count(len(ann), dgvalidation.MaxAnnotations, "annotations", p.Child("annotations")) {
			strs := make(map[string]string, len(ann))
			var notStrings []string // reported in key order; the others need no order
			for k, v := range ann {
				switch s := v.(type) {
				case string:
					strs[k] = s
				case nil: // removes an inherited annotation
				default:
					notStrings = append(notStrings, k)
				}
			}
			slices.Sort(notStrings)
			for _, k := range notStrings {
				kp := p.Child("annotations").Key(k)
				c.add(field.TypeInvalid(kp, describe(ann[k]), "annotation values are strings"+c.stringHint(": ", kp, ann[k])))
			}
			c.add(dgvalidation.ValidateAnnotationKeys(strs, p.Child("annotations"))...)
			if e := dgvalidation.ValidateAnnotationsSize(strs, p.Child("annotations")); e != nil {
				c.add(e)
			}
		}
	}
	if v, ok := m["tolerations"]; ok {
		if list, ok := c.list(v, p.Child("tolerations"), nullable); ok && c.count(len(list), dgvalidation.MaxTolerations, "tolerations", p.Child("tolerations")) {
			for i, t := range list {
				c.toleration(t, p.Child("tolerations").Index(i))
			}
		}
	}
	if v, ok := m["env"]; ok {
		if list, ok := c.list(v, p.Child("env"), nullable); ok && c.count(len(list), dgvalidation.MaxEnv, "environment variables", p.Child("env")) {
			for i, e := range list {
				c.envVar(e, p.Child("env").Index(i))
			}
		}
	}
	c.str(m, "priorityClassName", p, nullable, checkSubdomain)
}

// mergedCounts reports the maps of an instance that are within their size limit on their own
// and within it in the top-level block, but not once merged (the instance's keys win, a null
// removes a key): its RBLNDriver would carry more than the webhook allows. Lists replace what
// they inherit, so only maps are counted.
func (c *checker) mergedCounts(d map[string]any, v any, p *field.Path) {
	inst, ok := v.(map[string]any)
	if !ok {
		return
	}
	for _, f := range []struct {
		path []string
		max  int
		what string
	}{
		{[]string{"annotations"}, dgvalidation.MaxAnnotations, "annotations"},
		{[]string{"resources", "limits"}, dgvalidation.MaxResourceNames, "resources"},
		{[]string{"resources", "requests"}, dgvalidation.MaxResourceNames, "resources"},
	} {
		own, _ := lookup(inst, f.path...)
		base, _ := lookup(d, f.path...)
		ownMap, ok1 := own.(map[string]any)
		baseMap, ok2 := base.(map[string]any)
		if !ok1 || !ok2 || len(ownMap) > f.max || len(baseMap) > f.max {
			// one side inherits or removes the other whole, or is reported already
			continue
		}
		n, inherited := 0, 0
		for _, v := range ownMap {
			if v != nil {
				n++
			}
		}
		for k, v := range baseMap {
			if _, set := ownMap[k]; !set && v != nil {
				inherited++
			}
		}
		if n+inherited > f.max {
			fp := p.Child(f.path[0], f.path[1:]...)
			e := field.TooMany(fp, n+inherited, f.max)
			e.Detail = fmt.Sprintf("its RBLNDriver would carry %d %s, %d of its own and %d inherited from driver.%s; at most %d are allowed: set fewer, or remove inherited ones with null",
				n+inherited, f.what, n, inherited, strings.Join(f.path, "."), f.max)
			c.add(e)
		}
	}
}

// mergedAnnotationBytes reports the annotations of an instance that are within the size limit
// on their own and in the top-level block (count and bytes), but over MaxAnnotationBytes once
// merged: its RBLNDriver would carry more than the webhook (and the API server, on its pods)
// allows. Values that are not strings are reported elsewhere and not counted.
func (c *checker) mergedAnnotationBytes(d map[string]any, v any, p *field.Path) {
	inst, ok := v.(map[string]any)
	if !ok {
		return
	}
	own, ok1 := inst["annotations"].(map[string]any)
	base, ok2 := d["annotations"].(map[string]any)
	if !ok1 || !ok2 || len(own) > dgvalidation.MaxAnnotations || len(base) > dgvalidation.MaxAnnotations {
		return // one side inherits or removes the other whole, or is reported already
	}
	stringValues := func(m map[string]any) map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
		return out
	}
	fp := p.Child("annotations")
	ownStrs, baseStrs := stringValues(own), stringValues(base)
	if dgvalidation.ValidateAnnotationsSize(ownStrs, fp) != nil || dgvalidation.ValidateAnnotationsSize(baseStrs, fp) != nil {
		return // reported already
	}
	merged := ownStrs
	ownBytes, inheritedBytes := 0, 0
	for k, s := range ownStrs {
		ownBytes += len(k) + len(s)
	}
	for k, s := range baseStrs {
		if _, set := own[k]; !set {
			merged[k] = s
			inheritedBytes += len(k) + len(s)
		}
	}
	if len(merged) > dgvalidation.MaxAnnotations {
		return // reported by its count (mergedCounts)
	}
	if e := dgvalidation.ValidateAnnotationsSize(merged, fp); e != nil {
		e.Detail = fmt.Sprintf("its RBLNDriver would carry %d bytes of annotations (keys and values), %d of its own and %d inherited from driver.annotations; at most %d (256 KiB, Kubernetes' limit on the annotations of the driver pods) are allowed: set fewer, or remove inherited ones with null",
			ownBytes+inheritedBytes, ownBytes, inheritedBytes, dgvalidation.MaxAnnotationBytes)
		c.add(e)
	}
}

// count reports whether n entries are within max; beyond it the field is reported once (the
// webhook would deny the object: api/validation's size limits) and its entries are not judged.
func (c *checker) count(n, max int, what string, p *field.Path) bool {
	if e := dgvalidation.ValidateCount(n, max, what, p); e != nil {
		c.add(e)
		return false
	}
	return true
}

func (c *checker) list(v any, p *field.Path, nullable bool) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case nil:
		if nullable {
			return nil, true
		}
	}
	c.add(field.TypeInvalid(p, describe(v), "must be a list"))
	return nil, false
}

// selector checks a nodeSelector and returns it as strings (nil when it is not a valid map).
func (c *checker) selector(v any, p *field.Path, instance bool) map[string]string {
	m, ok := c.object(v, p, false, "label key to label value")
	if !ok {
		return nil
	}
	sel := make(map[string]string, len(m))
	typesOK := true
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s, isStr := m[k].(string)
		if !isStr {
			typesOK = false
			var detail string
			if nested, ok := m[k].(map[string]any); ok {
				detail = splitKeyHint(p, k, nested)
			} else {
				detail = "label values are strings" + c.stringHint(": ", p.Key(k), m[k])
			}
			c.add(field.TypeInvalid(p.Key(k), describe(m[k]), detail))
			continue
		}
		sel[k] = s
	}
	c.add(dgvalidation.ValidateNodeSelector(sel, p)...)
	if !typesOK {
		return nil
	}
	return sel
}

func (c *checker) resources(v any, p *field.Path, nullable bool) {
	m, ok := c.object(v, p, nullable, "limits, requests and claims")
	if !ok || m == nil {
		return
	}
	c.keys(m, p, []string{"limits", "requests", "claims"})
	for _, k := range []string{"limits", "requests"} {
		rv, ok := m[k]
		if !ok {
			continue
		}
		rl, ok := c.object(rv, p.Child(k), true, "resource name to quantity")
		if !ok || !c.count(len(rl), dgvalidation.MaxResourceNames, "resources", p.Child(k)) {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(rl)) {
			qp := p.Child(k).Key(name)
			switch q := rl[name].(type) {
			case nil:
			case string:
				if _, err := resource.ParseQuantity(q); err != nil {
					c.add(field.Invalid(qp, q, "must be a quantity such as 500m, 2 or 128Mi"))
				}
			case int, int64, float64:
			default:
				c.add(field.TypeInvalid(qp, describe(q), "must be a quantity such as 500m, 2 or 128Mi"))
			}
		}
	}
	if cv, ok := m["claims"]; ok {
		if list, ok := c.list(cv, p.Child("claims"), true); ok {
			for i, cl := range list {
				var claim corev1.ResourceClaim
				if c.strict(cl, &claim, p.Child("claims").Index(i)) && claim.Name == "" {
					c.add(field.Required(p.Child("claims").Index(i).Child("name"), "the name of a resource claim of the pod"))
				}
			}
		}
	}
}

var (
	tolerationOperators = []string{"", string(corev1.TolerationOpExists), string(corev1.TolerationOpEqual)}
	taintEffects        = []string{"", string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}
)

func (c *checker) toleration(v any, p *field.Path) {
	var t corev1.Toleration
	if !c.strict(v, &t, p) {
		return
	}
	if !slices.Contains(tolerationOperators, string(t.Operator)) {
		c.add(field.NotSupported(p.Child("operator"), t.Operator, tolerationOperators[1:]))
	}
	if !slices.Contains(taintEffects, string(t.Effect)) {
		c.add(field.NotSupported(p.Child("effect"), t.Effect, taintEffects[1:]))
	}
}

func (c *checker) envVar(v any, p *field.Path) {
	var e corev1.EnvVar
	if !c.strict(v, &e, p) {
		return
	}
	if e.Name == "" {
		c.add(field.Required(p.Child("name"), "the variable's name"))
	}
	if f := e.ValueFrom; f != nil {
		vp := p.Child("valueFrom")
		if f.FieldRef != nil && f.FieldRef.FieldPath == "" {
			c.add(field.Required(vp.Child("fieldRef", "fieldPath"), ""))
		}
		if f.ResourceFieldRef != nil && f.ResourceFieldRef.Resource == "" {
			c.add(field.Required(vp.Child("resourceFieldRef", "resource"), ""))
		}
		if f.ConfigMapKeyRef != nil && f.ConfigMapKeyRef.Key == "" {
			c.add(field.Required(vp.Child("configMapKeyRef", "key"), ""))
		}
		if f.SecretKeyRef != nil && f.SecretKeyRef.Key == "" {
			c.add(field.Required(vp.Child("secretKeyRef", "key"), ""))
		}
		if r := f.FileKeyRef; r != nil && (r.VolumeName == "" || r.Path == "" || r.Key == "") {
			c.add(field.Required(vp.Child("fileKeyRef"), "volumeName, path and key"))
		}
	}
}

// strict decodes a values node into a Kubernetes type, rejecting unknown fields (with the
// nearest known field) and wrong types. It reports whether decoding succeeded.
func (c *checker) strict(v any, into any, p *field.Path) bool {
	if _, isMap := v.(map[string]any); !isMap {
		c.add(field.TypeInvalid(p, describe(v), "must be a map"))
		return false
	}
	data, err := json.Marshal(v)
	if err != nil {
		c.add(field.Invalid(p, describe(v), err.Error()))
		return false
	}
	strictErrs, err := kjson.UnmarshalStrict(data, into)
	if err != nil {
		c.add(field.Invalid(p, describe(v), "cannot be read: "+err.Error()))
		return false
	}
	for _, se := range strictErrs {
		msg := se.Error()
		if name, ok := strings.CutPrefix(msg, `unknown field "`); ok {
			name = strings.TrimSuffix(name, `"`)
			parent, leaf := splitFieldPath(name)
			fp := p
			for _, part := range parent {
				fp = fp.Child(part)
			}
			c.add(unknownField(fp.Child(leaf), leaf, jsonFieldsAt(reflect.TypeOf(into), parent)))
			continue
		}
		c.add(field.Invalid(p, describe(v), msg))
	}
	return len(strictErrs) == 0
}

func splitFieldPath(s string) ([]string, string) {
	parts := strings.Split(s, ".")
	return parts[:len(parts)-1], parts[len(parts)-1]
}

// jsonFieldsAt lists the JSON field names of the struct reached from t through path.
func jsonFieldsAt(t reflect.Type, path []string) []string {
	for {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if len(path) == 0 || t.Kind() != reflect.Struct {
			break
		}
		next := false
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == path[0] {
				t, path, next = f.Type, path[1:], true
				break
			}
		}
		if !next {
			return nil
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func (c *checker) upgradePolicy(v any, p *field.Path) {
	up, ok := c.object(v, p, false, "upgrade policy settings")
	if !ok {
		return
	}
	c.keys(up, p, []string{"autoUpgrade", "maxParallelUpgrades", "waitForCompletion", "npuPodDeletion", "drain", "reboot"})
	c.boolean(up, "autoUpgrade", p)
	c.integer(up, "maxParallelUpgrades", p)
	sub := func(k string, known []string, check func(m map[string]any, p *field.Path)) {
		sp := p.Child(k)
		v, ok := up[k]
		if !ok {
			c.add(field.Required(sp, "a null removed the chart's default"))
			return
		}
		m, ok := c.object(v, sp, false, strings.Join(known, ", "))
		if !ok {
			return
		}
		c.keys(m, sp, known)
		check(m, sp)
	}
	podSelector := func(m map[string]any, p *field.Path) {
		if _, ok := m["podSelector"]; !ok {
			c.add(field.Required(p.Child("podSelector"), "a label selector string; \"\" is the default"))
		}
		c.str(m, "podSelector", p, false, nil)
	}
	sub("waitForCompletion", []string{"timeoutSeconds", "podSelector"}, func(m map[string]any, p *field.Path) {
		c.integer(m, "timeoutSeconds", p)
		podSelector(m, p)
	})
	sub("npuPodDeletion", []string{"force", "timeoutSeconds"}, func(m map[string]any, p *field.Path) {
		c.boolean(m, "force", p)
		c.integer(m, "timeoutSeconds", p)
	})
	sub("drain", []string{"enable", "force", "deleteEmptyDirData", "podSelector", "timeoutSeconds"}, func(m map[string]any, p *field.Path) {
		c.boolean(m, "enable", p)
		c.boolean(m, "force", p)
		c.boolean(m, "deleteEmptyDirData", p)
		podSelector(m, p)
		c.integer(m, "timeoutSeconds", p)
	})
	sub("reboot", []string{"enable", "rebootTimeoutSeconds", "image"}, func(m map[string]any, p *field.Path) {
		c.boolean(m, "enable", p)
		c.integer(m, "rebootTimeoutSeconds", p)
		if iv, ok := m["image"]; ok {
			if img, ok := c.object(iv, p.Child("image"), false, "registry, image and version"); ok {
				ip := p.Child("image")
				c.keys(img, ip, []string{"registry", "image", "version"})
				c.str(img, "registry", ip, false, checkRegistry)
				c.str(img, "image", ip, false, checkRepository)
				c.str(img, "version", ip, false, checkTag)
			}
		}
	})
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
// --set-string does not). A list or a map gets no hint; nor does a problem that is only
// counted.
func (c *checker) stringHint(sep string, p *field.Path, v any) string {
	var what string
	switch v.(type) {
	case bool:
		what = fmt.Sprintf("the boolean %v", v)
	case int, int64, float64:
		what = fmt.Sprintf("the number %v", v)
	default:
		return ""
	}
	if c.full() {
		return ""
	}
	setPath := dgvalidation.Truncate(SetPath(p), dgvalidation.MaxFieldPath)
	if loc, ok := c.src.LocateField(p); ok && loc.Text != "" {
		text := dgvalidation.Truncate(loc.Text, dgvalidation.MaxQuotedValue)
		switch {
		case loc.Kind == FromFile && loc.Plain:
			return fmt.Sprintf("%sYAML reads the unquoted %s at %s as %s: quote it: %s", sep, text, loc, what, strconv.Quote(text))
		case loc.Kind == FromSet:
			return fmt.Sprintf("%s--set reads %s as %s: pass it with --set-string '%s=%s'", sep, text, what, setPath, text)
		}
	}
	text := dgvalidation.Truncate(fmt.Sprint(v), dgvalidation.MaxQuotedValue)
	return fmt.Sprintf("%sYAML and --set read unquoted numbers and booleans as such: quote it in a values file (%q), or pass it with --set-string '%s=%s'",
		sep, text, setPath, text)
}

// splitKeyHint explains a selector value that is a map: --set splits keys at dots, so
// rebellions.ai/npu.family became nested keys.
func splitKeyHint(p *field.Path, k string, nested map[string]any) string {
	key := k
	var cur any = nested
	for {
		m, ok := cur.(map[string]any)
		if !ok {
			break
		}
		if len(m) != 1 {
			return "label values are strings, not maps"
		}
		for sub, v := range m {
			key, cur = key+"."+sub, v
		}
	}
	return fmt.Sprintf("label values are strings, not maps: --set splits keys at dots, so %q became nested keys; escape its dots: --set '%s=%s'",
		dgvalidation.Truncate(key, dgvalidation.MaxQuotedValue), dgvalidation.Truncate(SetPath(p.Key(key)), dgvalidation.MaxFieldPath),
		dgvalidation.Truncate(fmt.Sprint(describe(cur)), dgvalidation.MaxQuotedValue))
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

package validation

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// MaxInstanceKeyLength is the longest instance key: rbln-driver-<key> must stay a valid label
// value (63 characters) with room to spare for the owner label.
const MaxInstanceKeyLength = 40

// InstanceKeyPattern is the regular expression every driver.instances key must match.
const InstanceKeyPattern = `^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`

var instanceKeyRE = regexp.MustCompile(InstanceKeyPattern)

// ociTagRE is the OCI distribution-spec tag grammar.
var ociTagRE = regexp.MustCompile(TagPattern)

// PullPolicies are the accepted image pull policies.
var PullPolicies = []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}

// ValidateInstanceKey checks a driver.instances key.
func ValidateInstanceKey(key string, fldPath *field.Path) field.ErrorList {
	if instanceKeyRE.MatchString(key) {
		return nil
	}
	detail := "must be a lowercase DNS-1123 label of 1-40 characters (a-z, 0-9 and '-', starting and ending alphanumeric), " +
		"because rbln-driver-<key> is written onto nodes as the " + operator.LabelOwner + " label value"
	if len(key) > MaxInstanceKeyLength {
		detail = fmt.Sprintf("is %d characters; at most %d are allowed, because rbln-driver-<key> is written onto nodes as a label value", len(key), MaxInstanceKeyLength)
	}
	return field.ErrorList{field.Invalid(fldPath, key, detail)}
}

// ValidateDriver applies every syntax rule of one RBLNDriver (docs/webhook.md "Decisions"): the name must be a
// DNS-1123 label (it becomes the owner label's value) and the spec must pass
// ValidateDriverSpec. It is the one validator the webhook, the routing engine (which excludes
// invalid drivers as InvalidSpec) and the CLI share.
func ValidateDriver(d *v1alpha1.RBLNDriver) field.ErrorList {
	errs := ValidateDriverName(d.Name, objectNamePath)
	return append(errs, ValidateDriverSpec(d.Name, &d.Spec, objectSpecPath)...)
}

// The paths ValidateDriver reports under, and the fields of objectSpecPath, built once: a
// field.Path is never changed once built, and the webhook validates every request.
var (
	objectNamePath  = field.NewPath("metadata", "name")
	objectSpecPath  = field.NewPath("spec")
	objectSpecPaths = newSpecPaths(objectSpecPath)
)

// specPaths are the paths of the fields of a spec ValidateDriverSpec reports on.
type specPaths struct {
	registry, image, version, pullPolicy, managerPullPolicy, nodeSelector, tolerations, env,
	pullSecrets, annotations, limits, requests, claims *field.Path
}

func newSpecPaths(p *field.Path) *specPaths {
	return &specPaths{
		registry: p.Child("registry"), image: p.Child("image"), version: p.Child("version"),
		pullPolicy: p.Child("imagePullPolicy"), managerPullPolicy: p.Child("manager", "imagePullPolicy"),
		nodeSelector: p.Child("nodeSelector"), tolerations: p.Child("tolerations"), env: p.Child("env"),
		pullSecrets: p.Child("imagePullSecrets"), annotations: p.Child("annotations"),
		limits: p.Child("resources", "limits"), requests: p.Child("resources", "requests"), claims: p.Child("resources", "claims"),
	}
}

// specPathsOf is newSpecPaths(p), the ones built once for objectSpecPath.
func specPathsOf(p *field.Path) *specPaths {
	if p == objectSpecPath {
		return objectSpecPaths
	}
	return newSpecPaths(p)
}

// ValidateDriverName checks that an RBLNDriver name can be the owner label's value.
func ValidateDriverName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(fldPath, name, msg+"; the name is written onto nodes as the "+operator.LabelOwner+" label value"))
	}
	return errs
}

// Size limits of an RBLNDriver spec. A driver selects its nodes by a few labels and carries
// a pod's worth of settings; the limits are far above any real driver and keep the cost of
// judging one object (and the size of what is reported about it) bounded whatever is sent.
const (
	MaxSelectorKeys = 64  // spec.nodeSelector
	MaxTolerations  = 256 // spec.tolerations
	MaxEnv          = 256 // spec.env
	MaxPullSecrets  = 64  // spec.imagePullSecrets
	// MaxAnnotations: 64, not more, so that the CRD's rule on their total size (MaxAnnotationBytes,
	// in bytes: 64 values of up to 256 KiB each) stays within the API server's CEL cost budget.
	MaxAnnotations   = 64 // spec.annotations
	MaxResourceNames = 64 // spec.resources.limits and spec.resources.requests, each
)

// MaxAnnotationBytes is the most bytes spec.annotations may hold, keys and values together:
// Kubernetes' limit on the annotations of one object (apimachinery's
// TotalAnnotationSizeLimitB, 256 KiB), which the driver pods carrying them would exceed.
const MaxAnnotationBytes = apivalidation.TotalAnnotationSizeLimitB

// ValidateAnnotationsSize checks that annotations hold at most MaxAnnotationBytes, keys and
// values together, with apimachinery's ValidateAnnotationsSize (the API server's own check of
// metadata.annotations). Beyond it the field is reported once, as FieldValueTooLong.
func ValidateAnnotationsSize(ann map[string]string, fldPath *field.Path) *field.Error {
	err := apivalidation.ValidateAnnotationsSize(ann)
	if err == nil {
		return nil
	}
	e := field.TooLong(fldPath, "", MaxAnnotationBytes)
	e.Detail = err.Error() + " (bytes of keys and values together: Kubernetes' limit on the annotations of the driver pods)"
	return e
}

// ValidateCount checks that a list or map of n entries holds at most max. what names the
// entries for the message ("selector keys").
func ValidateCount(n, max int, what string, fldPath *field.Path) *field.Error {
	if n <= max {
		return nil
	}
	e := field.TooMany(fldPath, n, max)
	e.Detail = fmt.Sprintf("must have at most %d %s; nothing else about this field is judged until it does", max, what)
	return e
}

// ValidateNodeSelector checks label syntax and reserved keys of a nodeSelector. A selector of
// more than MaxSelectorKeys keys is reported once, without judging each key.
func ValidateNodeSelector(sel map[string]string, fldPath *field.Path) field.ErrorList {
	if err := ValidateCount(len(sel), MaxSelectorKeys, "selector keys", fldPath); err != nil {
		return field.ErrorList{err}
	}
	valid := true
	for k, v := range sel { // the common case, judged without building paths or sorting
		if operator.IsReservedSelectorKey(k) || len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			valid = false
			break
		}
	}
	if valid {
		return nil
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		v := sel[k]
		p := fldPath.Key(k)
		if operator.IsReservedSelectorKey(k) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s is reserved: rbln-npu-operator writes it onto nodes itself (the owner label) or scopes nodes by it (the deploy label); remove it from the selector and select nodes by your own labels (e.g. %s)", k, operator.LabelFamily)))
			continue
		}
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p, k, "selector key is not a valid label key: "+msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(p, v, "selector value is not a valid label value: "+msg))
		}
	}
	return errs
}

// ValidateAnnotationKeys checks that every annotation key is a qualified name.
func ValidateAnnotationKeys(ann map[string]string, fldPath *field.Path) field.ErrorList {
	valid := true
	for k := range ann { // the common case, judged without building paths or sorting
		if len(validation.IsQualifiedName(k)) > 0 {
			valid = false
			break
		}
	}
	if valid {
		return nil
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(fldPath.Key(k), k, "annotation key is not valid: "+msg))
		}
	}
	return errs
}

// ValidatePullPolicy checks an image pull policy; empty is allowed (the kubelet default).
func ValidatePullPolicy(p string, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return nil
	}
	for _, ok := range PullPolicies {
		if p == ok {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, PullPolicies)}
}

// ValidateVersion checks that a driver version can start an OCI image tag.
func ValidateVersion(v string, fldPath *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(fldPath, "the driver version starts every driver image tag; set it, e.g. \"3.2.2\"")}
	}
	if !ociTagRE.MatchString(v) {
		return field.ErrorList{field.Invalid(fldPath, v, "cannot start an OCI image tag: use letters, digits, '_', '.' and '-' only (first character not '.' or '-'), at most 128 characters")}
	}
	return nil
}

// DigestMessage is why a driver image cannot be given by digest.
const DigestMessage = "rbln-npu-operator cannot build a driver image from a digest: it composes each pool's tag " +
	"<version>-<kernel>-<os><osVersion> from the version; set the repository (e.g. rebellions/rbln-driver) and a version (e.g. 3.2.2)"

// ValidateDriverVersion is ValidateVersion for the driver's version, which rbln-npu-operator
// refuses when it holds a digest (sha256:).
func ValidateDriverVersion(v string, fldPath *field.Path) field.ErrorList {
	if operator.HasDigest("", v) {
		return field.ErrorList{field.Invalid(fldPath, v, DigestMessage)}
	}
	return ValidateVersion(v, fldPath)
}

// ValidateDriverImage refuses a driver image repository that holds a digest (@sha256:), as
// rbln-npu-operator does.
func ValidateDriverImage(image string, fldPath *field.Path) field.ErrorList {
	if operator.HasDigest(image, "") {
		return field.ErrorList{field.Invalid(fldPath, image, DigestMessage)}
	}
	return nil
}

// IsValidTag reports whether s is a valid OCI image tag.
func IsValidTag(s string) bool { return ociTagRE.MatchString(s) }

// ValidateDriverSpec checks one RBLNDriver's spec. name decides whether an empty nodeSelector
// is allowed: only the default resource (rbln-driver) may have one.
func ValidateDriverSpec(name string, spec *v1alpha1.RBLNDriverSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	p := specPathsOf(fldPath)
	if spec.Registry == "" {
		errs = append(errs, field.Required(p.registry, "the registry host of the driver image, e.g. repo.rebellions.ai"))
	}
	if spec.Image == "" {
		errs = append(errs, field.Required(p.image, "the driver image repository without the NPU family, e.g. rebellions/rbln-driver"))
	}
	errs = append(errs, ValidateDriverImage(spec.Image, p.image)...)
	errs = append(errs, ValidateDriverVersion(spec.Version, p.version)...)
	errs = append(errs, ValidatePullPolicy(string(spec.ImagePullPolicy), p.pullPolicy)...)
	if spec.Manager != nil {
		errs = append(errs, ValidatePullPolicy(string(spec.Manager.ImagePullPolicy), p.managerPullPolicy)...)
	}
	errs = append(errs, ValidateNodeSelector(spec.NodeSelector, p.nodeSelector)...)
	for _, c := range [...]struct {
		n, max int
		what   string
		path   *field.Path
	}{
		{len(spec.Tolerations), MaxTolerations, "tolerations", p.tolerations},
		{len(spec.Env), MaxEnv, "environment variables", p.env},
		{len(spec.ImagePullSecrets), MaxPullSecrets, "pull secrets", p.pullSecrets},
		{len(spec.Annotations), MaxAnnotations, "annotations", p.annotations},
	} {
		if e := ValidateCount(c.n, c.max, c.what, c.path); e != nil {
			errs = append(errs, e)
		}
	}
	if len(spec.Annotations) <= MaxAnnotations { // beyond it reported once, by its count
		if e := ValidateAnnotationsSize(spec.Annotations, p.annotations); e != nil {
			errs = append(errs, e)
		}
		// The keys the driver pods get: render refuses an invalid one, so the webhook does too.
		errs = append(errs, ValidateAnnotationKeys(spec.Annotations, p.annotations)...)
	}
	if r := spec.Resources; r != nil {
		if e := ValidateCount(len(r.Limits), MaxResourceNames, "resources", p.limits); e != nil {
			errs = append(errs, e)
		}
		if e := ValidateCount(len(r.Requests), MaxResourceNames, "resources", p.requests); e != nil {
			errs = append(errs, e)
		}
		if e := ValidateCount(len(r.Claims), MaxResourceNames, "resource claims", p.claims); e != nil {
			errs = append(errs, e)
		}
	}
	if len(spec.NodeSelector) == 0 && name != v1alpha1.DefaultDriverName {
		errs = append(errs, field.Required(p.nodeSelector, "only the default resource "+v1alpha1.DefaultDriverName+" may have an empty selector; select the nodes this driver owns, e.g. {"+operator.LabelFamily+": atom}"))
	}
	return errs
}

// ValidateUpgradePolicy checks upgradePolicy sanity. It returns errors (negative counts and
// timeouts) and warnings (settings the reference documents advise against: reboot without
// drain, the one home of that rule). fldPath is the object's path (spec.driver.upgradePolicy)
// or the values path (ValuesUpgradePolicy); a warning on the object names the values path too.
func ValidateUpgradePolicy(up *v1alpha1.UpgradePolicy, fldPath *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	nonNeg := func(v int32, p *field.Path) {
		if v < 0 {
			errs = append(errs, field.Invalid(p, v, "must be 0 or greater"))
		}
	}
	nonNeg(up.MaxParallelUpgrades, fldPath.Child("maxParallelUpgrades"))
	nonNeg(up.WaitForCompletion.TimeoutSeconds, fldPath.Child("waitForCompletion", "timeoutSeconds"))
	nonNeg(up.NPUPodDeletion.TimeoutSeconds, fldPath.Child("npuPodDeletion", "timeoutSeconds"))
	nonNeg(up.Drain.TimeoutSeconds, fldPath.Child("drain", "timeoutSeconds"))
	nonNeg(up.Reboot.RebootTimeoutSeconds, fldPath.Child("reboot", "rebootTimeoutSeconds"))
	var warnings []string
	if up.Reboot.Enable && !up.Drain.Enable {
		drain := fldPath.Child("drain", "enable")
		fix := "set " + drain.String() + ": true"
		if fldPath.String() != ValuesUpgradePolicy {
			fix += " (values: " + ValuesUpgradePolicy + ".drain.enable)"
		}
		warnings = append(warnings, fmt.Sprintf("%s is true but %s is false: the node would reboot without being drained, its workloads still running; enable them together: %s, or turn reboot off",
			fldPath.Child("reboot", "enable"), drain, fix))
	}
	return errs, warnings
}

// ValuesUpgradePolicy is where the chart's values hold the RBLNClusterPolicy's upgradePolicy.
const ValuesUpgradePolicy = "driver.upgradePolicy"

// MaxQuotedValue bounds a user value quoted in an error message.
const MaxQuotedValue = 80

// MaxFieldPath bounds a field path quoted in an error message (a path holds map keys, which
// may be as long as a user makes them).
const MaxFieldPath = 2 * MaxQuotedValue

// Quotable returns errs with every long string value cut to MaxQuotedValue bytes and every
// long field path to MaxFieldPath bytes, each with its full length, so that a message never
// echoes a 50 MB value or key back. errs is not modified.
func Quotable(errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		s, long := e.BadValue.(string)
		long = long && len(s) > MaxQuotedValue
		if long || len(e.Field) > MaxFieldPath {
			c := *e
			if long {
				c.BadValue = Truncate(s, MaxQuotedValue)
			}
			if len(c.Field) > MaxFieldPath {
				c.Field = Truncate(c.Field, MaxFieldPath)
			}
			e = &c
		}
		out[i] = e
	}
	return out
}

// Truncate returns s when it has at most n bytes; otherwise its first n bytes (cut at a
// character boundary) followed by "... (<length> bytes)".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:n], ""), len(s))
}

package validation

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/v1alpha1"
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
		"because rbln-driver-<key> is written onto nodes as the " + v1alpha1.LabelOwner + " label value"
	if len(key) > MaxInstanceKeyLength {
		detail = fmt.Sprintf("is %d characters; at most %d are allowed, because rbln-driver-<key> is written onto nodes as a label value", len(key), MaxInstanceKeyLength)
	}
	return field.ErrorList{field.Invalid(fldPath, key, detail)}
}

// ValidateDriver applies every syntax rule of one RBLNDriver (SPEC §5): the name must be a
// DNS-1123 label (it becomes the owner label's value) and the spec must pass
// ValidateDriverSpec. It is the one validator the webhook, the routing engine (which excludes
// invalid drivers as InvalidSpec) and the CLI share.
func ValidateDriver(d *v1alpha1.RBLNDriver) field.ErrorList {
	errs := ValidateDriverName(d.Name, field.NewPath("metadata", "name"))
	return append(errs, ValidateDriverSpec(d.Name, &d.Spec, field.NewPath("spec"))...)
}

// ValidateDriverName checks that an RBLNDriver name can be the owner label's value.
func ValidateDriverName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(fldPath, name, msg+"; the name is written onto nodes as the "+v1alpha1.LabelOwner+" label value"))
	}
	return errs
}

// ValidateNodeSelector checks label syntax and reserved keys of a nodeSelector.
func ValidateNodeSelector(sel map[string]string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		v := sel[k]
		p := fldPath.Key(k)
		if v1alpha1.IsReservedSelectorKey(k) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s is reserved: driverguard writes it onto nodes itself; remove it from the selector and select nodes by your own labels (e.g. %s)", k, v1alpha1.LabelFamily)))
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

// IsValidTag reports whether s is a valid OCI image tag.
func IsValidTag(s string) bool { return ociTagRE.MatchString(s) }

// ValidateDriverSpec checks one RBLNDriver's spec. name decides whether an empty nodeSelector
// is allowed: only the default resource (rbln-driver) may have one.
func ValidateDriverSpec(name string, spec *v1alpha1.RBLNDriverSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Registry == "" {
		errs = append(errs, field.Required(fldPath.Child("registry"), "the registry host of the driver image, e.g. repo.rebellions.ai"))
	}
	if spec.Image == "" {
		errs = append(errs, field.Required(fldPath.Child("image"), "the driver image repository without the NPU family, e.g. rebellions/rbln-driver"))
	}
	errs = append(errs, ValidateVersion(spec.Version, fldPath.Child("version"))...)
	errs = append(errs, ValidatePullPolicy(string(spec.ImagePullPolicy), fldPath.Child("imagePullPolicy"))...)
	if spec.Manager != nil {
		errs = append(errs, ValidatePullPolicy(string(spec.Manager.ImagePullPolicy), fldPath.Child("manager", "imagePullPolicy"))...)
	}
	errs = append(errs, ValidateNodeSelector(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	if len(spec.NodeSelector) == 0 && name != v1alpha1.DefaultDriverName {
		errs = append(errs, field.Required(fldPath.Child("nodeSelector"), "only the default resource "+v1alpha1.DefaultDriverName+" may have an empty selector; select the nodes this driver owns, e.g. {"+v1alpha1.LabelFamily+": atom}"))
	}
	return errs
}

// ValidateUpgradePolicy checks upgradePolicy sanity. It returns errors (negative counts and
// timeouts) and warnings (settings the reference documents advise against).
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
		warnings = append(warnings, fmt.Sprintf("%s is true but %s is false: the node would reboot without being drained; enable them together",
			fldPath.Child("reboot", "enable"), fldPath.Child("drain", "enable")))
	}
	return errs, warnings
}

// MaxQuotedValue bounds a user value quoted in an error message.
const MaxQuotedValue = 80

// Quotable returns errs with every long string value cut to MaxQuotedValue bytes and its full
// length, so that a message never echoes a 50 MB value back. errs is not modified.
func Quotable(errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		if s, ok := e.BadValue.(string); ok && len(s) > MaxQuotedValue {
			c := *e
			c.BadValue = fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:MaxQuotedValue], ""), len(s))
			e = &c
		}
		out[i] = e
	}
	return out
}

package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// The object-local rules of docs/webhook.md "Decisions" as the API server enforces them
// without the webhook (docs/webhook.md "With the webhook away"): structural limits and CEL validation rules on the CRDs, generated from the
// definitions the Go validators above use (hack/crdrules writes them into the CRDs that
// controller-gen generates; `make generate`). The CEL rules use Kubernetes' format library,
// the same apimachinery checks the validators call (IsDNS1123Label, IsQualifiedName,
// IsValidLabelValue): the rules need Kubernetes MinKubernetesForCRDRules.
//
// Cross-object rules (ties, supersets, node routing) and policies stay the webhook's, and the
// audit judges whatever was stored while it was away.

// MinKubernetesForCRDRules is the oldest Kubernetes that accepts the CRDs' rules: CEL's format
// library in new CRD expressions (1.32) and validation ratcheting (on by default since 1.30).
const MinKubernetesForCRDRules = "1.32"

// SchemaLimit is a structural limit at a path of a CRD's schema (no elements: the root; "*":
// a map's values or a list's items).
type SchemaLimit struct {
	Path []string
	// MaxLength, MaxItems, MaxProperties: 0 is no limit.
	MaxLength, MaxItems, MaxProperties int64
	// Declare adds the property, a string, when the schema does not declare it.
	Declare bool
}

// CRDRule is one x-kubernetes-validations rule at a path of a CRD's schema.
type CRDRule struct {
	Path []string
	// Rule is the CEL expression; Message or MessageExpression what the API server says when
	// it is false (naming the field, the rule and the fix, as the webhook does).
	Rule, Message, MessageExpression string
	// Reason is the cause the API server reports (FieldValueInvalid, FieldValueForbidden,
	// FieldValueRequired); FieldPath, for a rule at the root, the field it is about.
	Reason, FieldPath string
	// OptionalOldSelf: the rule sees oldSelf as an optional (None on create), so that a rule
	// at the root, which every update re-evaluates, can spare what an update did not change.
	OptionalOldSelf bool
}

// CRDValidation is what a CRD's schema carries of the object-local rules.
type CRDValidation struct {
	Limits []SchemaLimit
	Rules  []CRDRule
}

func celString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

func celList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = celString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// pullPolicyRule accepts "" (the kubelet's default) and PullPolicies, as ValidatePullPolicy.
func pullPolicyRule(path ...string) CRDRule {
	return CRDRule{Path: path, Rule: "self == '' || self in " + celList(PullPolicies),
		MessageExpression: celString("unsupported value '") + " + self + " +
			celString("': use one of "+strings.Join(PullPolicies, ", ")+", or leave it unset")}
}

// countLimit is a list's or map's ValidateCount limit.
func countLimit(max int64, list bool, path ...string) SchemaLimit {
	if list {
		return SchemaLimit{Path: path, MaxItems: max}
	}
	return SchemaLimit{Path: path, MaxProperties: max}
}

// DriverCRDValidation is what the RBLNDriver CRD enforces of ValidateDriver.
func DriverCRDValidation() CRDValidation {
	sel := []string{"spec", "nodeSelector"}
	return CRDValidation{
		Limits: []SchemaLimit{
			// metadata.name: a CRD may constrain it (its schema declares it for that).
			{Path: []string{"metadata", "name"}, Declare: true, MaxLength: int64(validation.DNS1123LabelMaxLength)},
			{Path: []string{"spec", "version"}, MaxLength: 128},
			countLimit(MaxSelectorKeys, false, sel...),
			// A longer label value is invalid anyway; the bound keeps the rules' cost known.
			{Path: append(sel[:len(sel):len(sel)], "*"), MaxLength: int64(validation.LabelValueMaxLength)},
			// One annotation longer than all may hold together is too long anyway.
			{Path: []string{"spec", "annotations", "*"}, MaxLength: int64(MaxAnnotationBytes)},
			countLimit(MaxTolerations, true, "spec", "tolerations"),
			countLimit(MaxEnv, true, "spec", "env"),
			countLimit(MaxPullSecrets, true, "spec", "imagePullSecrets"),
			countLimit(MaxAnnotations, false, "spec", "annotations"),
			countLimit(MaxResourceNames, false, "spec", "resources", "limits"),
			countLimit(MaxResourceNames, false, "spec", "resources", "requests"),
			countLimit(MaxResourceNames, true, "spec", "resources", "claims"),
		},
		Rules: []CRDRule{
			{
				// A regular expression, not format.dns1123Label(): the same label (the schema's
				// maxLength is 63), whose estimated cost Kubernetes 1.32 accepts in a CRD (the
				// format library's is 1% over its budget there).
				Path: []string{"metadata", "name"}, Rule: "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
				MessageExpression: "self + " +
					celString(" is not a DNS-1123 label (at most 63 characters: lowercase a-z, 0-9 and '-', starting and ending alphanumeric); the name is written onto nodes as the "+operator.LabelOwner+" label value: rename the driver"),
			},
			{
				// Ratcheted by hand: a root rule runs on every update, so an empty selector the
				// object already had does not block an update of another field.
				Rule: fmt.Sprintf("self.metadata.name == %s || (has(self.spec) && has(self.spec.nodeSelector) && size(self.spec.nodeSelector) > 0) || "+
					"(oldSelf.hasValue() && !(has(oldSelf.value().spec) && has(oldSelf.value().spec.nodeSelector) && size(oldSelf.value().spec.nodeSelector) > 0))",
					celString(v1alpha1.DefaultDriverName)),
				OptionalOldSelf: true,
				Message: "only the default resource " + v1alpha1.DefaultDriverName + " may have an empty selector; select the nodes this driver owns, e.g. {" +
					operator.LabelFamily + ": atom}",
				Reason: "FieldValueRequired", FieldPath: ".spec.nodeSelector",
			},
			{
				Path: []string{"spec", "version"}, Rule: "self.contains('sha256:') || self.matches(" + celString(TagPattern) + ")",
				MessageExpression: "self + " +
					celString(" cannot start an OCI image tag: use letters, digits, '_', '.' and '-' only (first character not '.' or '-'), at most 128 characters"),
			},
			{
				Path: []string{"spec", "version"}, Rule: "!self.contains('sha256:')",
				Message: DigestMessage,
			},
			{
				Path: []string{"spec", "image"}, Rule: "!self.contains('@sha256:')",
				Message: DigestMessage,
			},
			pullPolicyRule("spec", "imagePullPolicy"),
			pullPolicyRule("spec", "manager", "imagePullPolicy"),
			{
				Path: sel, Rule: "!self.exists(k, k in " + celList(operator.ReservedSelectorKeys) + ")",
				MessageExpression: "self.filter(k, k in " + celList(operator.ReservedSelectorKeys) + ")[0] + " +
					celString(" is reserved: rbln-npu-operator writes it onto nodes itself (the owner label) or scopes nodes by it (the deploy label); remove it from the selector and select nodes by your own labels (e.g. "+operator.LabelFamily+")"),
				Reason: "FieldValueForbidden",
			},
			{
				Path: sel, Rule: "self.all(k, !format.qualifiedName().validate(k).hasValue())",
				MessageExpression: celString("key ") + " + self.filter(k, format.qualifiedName().validate(k).hasValue())[0] + " +
					celString(" is not a valid label key: a name of at most 63 characters (a-z, A-Z, 0-9, '-', '_', '.', starting and ending alphanumeric), with an optional DNS subdomain prefix and '/', e.g. "+operator.LabelFamily),
			},
			{
				Path: sel, Rule: "self.all(k, !format.labelValue().validate(self[k]).hasValue())",
				MessageExpression: celString("the value of ") + " + self.filter(k, format.labelValue().validate(self[k]).hasValue())[0] + " +
					celString(" is not a valid label value: at most 63 characters (a-z, A-Z, 0-9, '-', '_', '.', starting and ending alphanumeric), or empty"),
			},
			{
				Path: []string{"spec", "annotations"}, Rule: "self.all(k, !format.qualifiedName().validate(k).hasValue())",
				MessageExpression: celString("key ") + " + self.filter(k, format.qualifiedName().validate(k).hasValue())[0] + " +
					celString(" is not a valid annotation key: a name of at most 63 characters with an optional DNS subdomain prefix and '/'"),
			},
			{
				Path: []string{"spec", "annotations"},
				Rule: fmt.Sprintf("self.map(k, size(bytes(k)) + size(bytes(self[k]))).sum() <= %d", MaxAnnotationBytes),
				Message: fmt.Sprintf("may hold at most %d bytes of keys and values together (Kubernetes' limit on the annotations of the driver pods)",
					MaxAnnotationBytes),
			},
		},
	}
}

// ClusterPolicyCRDValidation is what the RBLNClusterPolicy CRD enforces of
// ValidateUpgradePolicy: counts and timeouts of 0 or more.
func ClusterPolicyCRDValidation() CRDValidation {
	var rules []CRDRule
	for _, p := range [][]string{{"maxParallelUpgrades"}, {"waitForCompletion", "timeoutSeconds"}, {"npuPodDeletion", "timeoutSeconds"},
		{"drain", "timeoutSeconds"}, {"reboot", "rebootTimeoutSeconds"}} {
		path := append([]string{"spec", "driver", "upgradePolicy"}, p...)
		rules = append(rules, CRDRule{Path: path, Rule: "self >= 0",
			Message: "must be 0 or greater: negative counts and timeouts have no meaning; use 0 for unlimited or no timeout"})
	}
	return CRDValidation{Rules: rules}
}

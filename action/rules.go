package action

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/routing"
)

// ruleDescriptions are the one-line descriptions of the rules results name besides policies.
var ruleDescriptions = map[string]string{
	decision.RuleIdenticalNodeSelector:   "The selector is identical to another RBLNDriver's",
	decision.RuleConflictingNodeSelector: "The selector ties with another RBLNDriver's on existing nodes",
	decision.RulePotentialConflict:       "The selector could tie with another RBLNDriver's on a future node",
	decision.RuleUpgradePolicy:           "A legal but risky upgrade policy",
	decision.RuleClusterPolicyName:       "An RBLNClusterPolicy that is not the one driverguard reads",
	decision.RulePolicyUnavailable:       "Policy evaluation failed and the decision is fail-open",
	RuleDriverLoss:                       "A node that carries a driver now would get none",
	RuleInvalidValues:                    "The values do not render",
	RuleRenderWarning:                    "Legal but suspicious values",
	RuleOmittedFindings:                  "Findings beyond what the decision lists for one object",
	RuleInputWarning:                     "An input that looks like a failed read, not a cluster",
	routing.DriftUnowned:                 "A node that matches no RBLNDriver",
	routing.DriftFamilyLabelMissing:      "A node without its NPU family label",
	routing.DriftInvalidImageTag:         "A pool's image tag is not a valid tag",
	routing.DriftStaleOwnerLabel:         "A node's owner label is not the driver routing gives it",
	audit.RuleImageNotFound:              "The registry answers 404 for an image a pool pulls",
	audit.RuleImageNotVerified:           "No registry answered for an image a pool pulls (unreachable, timeout, TLS, DNS, 401/403)",
	audit.RuleImageCheck:                 "What the registry check covered: images found, missing, not verified",
}

// fieldErrorTypes are the rules of syntax findings: field error types.
var fieldErrorTypes = []field.ErrorType{
	field.ErrorTypeNotFound, field.ErrorTypeRequired, field.ErrorTypeDuplicate, field.ErrorTypeInvalid,
	field.ErrorTypeNotSupported, field.ErrorTypeForbidden, field.ErrorTypeTooLong, field.ErrorTypeTooMany,
	field.ErrorTypeInternal, field.ErrorTypeTypeInvalid,
}

// RuleDescription is a rule's one-line description: a built-in rule's, a field error type's
// (apimachinery's words), else that of the Rego policy the rule names.
func RuleDescription(rule string) string {
	if d, ok := ruleDescriptions[rule]; ok {
		return d
	}
	for _, t := range fieldErrorTypes {
		if string(t) == rule {
			return t.String()
		}
	}
	return "Rego policy " + rule
}

package finding

import (
	"slices"

	"github.com/driverguard/driverguard/operator"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The built-in rules: the one place their IDs are spelled (the packages that fire them name
// these constants).
const (
	// The selectors (package routing, judged by package decision).
	RuleIdenticalNodeSelector   = "IdenticalNodeSelector"
	RuleConflictingNodeSelector = operator.ReasonConflictingNodeSelector
	RulePotentialConflict       = "PotentialConflict"
	// The decision (package decision).
	RuleUpgradePolicy     = "UpgradePolicy"
	RuleClusterPolicyName = "ClusterPolicyName"
	RulePolicyUnavailable = "PolicyUnavailable"
	// A release (package release) and its values (package render).
	RuleDriverLoss      = "DriverLoss"
	RuleInvalidValues   = "InvalidValues"
	RuleRenderWarning   = "RenderWarning"
	RuleOmittedFindings = "OmittedFindings"
	RuleInputWarning    = "InputWarning"
	// The drift now (package routing).
	RuleUnowned                  = "Unowned"
	RuleNFDLabelMissing          = "NFDLabelMissing"
	RuleDriverFamilyLabelMissing = operator.ReasonDriverFamilyLabelMissing
	RulePoolNameCollision        = "PoolNameCollision"
	RuleDaemonSetNotCreated      = "DaemonSetNotCreated"
	RuleInvalidImageTag          = "InvalidImageTag"
	RuleStaleOwnerLabel          = "StaleOwnerLabel"
	// The driver DaemonSet mutation (package webhook).
	RuleDaemonSetCorrected = "DaemonSetCorrected"
	// The registry check (packages registry and audit).
	RuleDriverImageNotFound    = operator.ReasonDriverImageNotFound
	RuleDriverImageNotVerified = "DriverImageNotVerified"
	RuleDriverImageCheck       = "DriverImageCheck"
	// A test run (package suite).
	RuleTestCaseFailed = "TestCaseFailed"
	RuleTestCaseError  = "TestCaseError"
	RuleNeverFired     = "RuleNeverFired"
)

// Homes of the built-in rules: the Go packages that fire them.
const (
	homeValidation = "api/validation"
	homeDecision   = "decision"
	homeRouting    = "routing"
	homeRelease    = "release"
	homeRender     = "render"
	homeRegistry   = "registry"
	homeCluster    = "cluster"
	homeSuite      = "suite"
	homeWebhook    = "webhook"
)

// FieldErrorTypes are the rules of the object syntax: apimachinery's field error types,
// each a rule of api/validation.
var FieldErrorTypes = []field.ErrorType{
	field.ErrorTypeNotFound, field.ErrorTypeRequired, field.ErrorTypeDuplicate, field.ErrorTypeInvalid,
	field.ErrorTypeNotSupported, field.ErrorTypeForbidden, field.ErrorTypeTooLong, field.ErrorTypeTooMany,
	field.ErrorTypeInternal, field.ErrorTypeTypeInvalid,
}

var builtin = func() []Rule {
	rule := func(id string, level Level, home, title string) Rule {
		return Rule{ID: id, Level: level, Enforcement: level, Title: title, Home: home, Source: SourceBuiltin}
	}
	rules := []Rule{
		rule(RuleIdenticalNodeSelector, Deny, homeRouting, "The selector is identical to another RBLNDriver's"),
		rule(RuleConflictingNodeSelector, Deny, homeRouting, "The selector ties with another RBLNDriver's on existing nodes"),
		rule(RulePotentialConflict, Warn, homeRouting, "The selector could tie with another RBLNDriver's on a future node"),
		rule(RuleUpgradePolicy, Warn, homeDecision, "A legal but risky upgrade policy"),
		rule(RuleClusterPolicyName, Deny, homeDecision, "An RBLNClusterPolicy that is not the one driverguard reads"),
		rule(RulePolicyUnavailable, Warn, homeDecision, "Policy evaluation failed and the decision is fail-open"),
		rule(RuleDriverLoss, Deny, homeRelease, "A node that carries a driver now would get none (--allow-driver-loss warns)"),
		rule(RuleInvalidValues, Deny, homeRender, "The values do not render"),
		rule(RuleRenderWarning, Warn, homeRender, "Legal but suspicious values"),
		rule(RuleOmittedFindings, Warn, homeDecision, "Findings beyond what a decision lists for one object, counted"),
		rule(RuleInputWarning, Warn, homeCluster, "An input that looks like a failed read, not a cluster"),
		rule(RuleUnowned, Deny, homeRouting, "A node that matches no RBLNDriver (drift)"),
		rule(RuleNFDLabelMissing, Deny, homeRouting, "A node without a Node Feature Discovery label joins no pool (drift)"),
		rule(RuleDriverFamilyLabelMissing, Deny, homeRouting, "A node whose NPU family label is missing or unusable joins no pool (drift)"),
		rule(RulePoolNameCollision, Deny, homeRouting, "Two nodes compose one pool name from different labels: the pool's DaemonSet skips the later one (drift)"),
		rule(RuleDaemonSetNotCreated, Deny, homeRouting, "The operator cannot create a pool's DaemonSet: an invalid name or another driver's DaemonSet of that name (drift)"),
		rule(RuleInvalidImageTag, Deny, homeRouting, "No valid driver image can be composed for a pool (drift)"),
		rule(RuleStaleOwnerLabel, Deny, homeRouting, "A node's owner label is not the driver rbln-npu-operator gives it (drift)"),
		rule(RuleDriverImageNotFound, Deny, homeRegistry, "The registry answers 404 for an image a pool pulls"),
		rule(RuleDriverImageNotVerified, Warn, homeRegistry, "No registry answered for an image a pool pulls (unreachable, timeout, TLS, DNS, 401/403)"),
		rule(RuleDriverImageCheck, Warn, homeRegistry, "What the registry check covered: images found, missing, not verified"),
		rule(RuleDaemonSetCorrected, Warn, homeWebhook, "The webhook corrected an operator DaemonSet to what the operator composes (image, pull policy, nodeSelector, update strategy)"),
		rule(RuleTestCaseFailed, Deny, homeSuite, "A test case missed an expectation"),
		rule(RuleTestCaseError, Deny, homeSuite, "A test case could not be judged"),
		rule(RuleNeverFired, Audit, homeSuite, "No test case makes the rule fire"),
	}
	for _, t := range FieldErrorTypes {
		rules = append(rules, rule(string(t), Deny, homeValidation, "Object syntax: "+t.String()))
	}
	return rules
}()

// Builtin are the built-in rules, a copy.
func Builtin() []Rule { return slices.Clone(builtin) }

// Drift reports whether a built-in rule is a drift kind: what is wrong with the nodes now,
// whatever a change would do.
func Drift(rule string) bool {
	switch rule {
	case RuleUnowned, RuleConflictingNodeSelector, RuleNFDLabelMissing, RuleDriverFamilyLabelMissing, RulePoolNameCollision,
		RuleDaemonSetNotCreated, RuleInvalidImageTag, RuleStaleOwnerLabel:
		return true
	}
	return false
}

// DriftRules are the drift kinds: what is wrong with the nodes now, whatever a change does.
var DriftRules = []string{RuleUnowned, RuleConflictingNodeSelector, RuleDriverFamilyLabelMissing,
	RuleInvalidImageTag, RuleStaleOwnerLabel}

// Package decision is driverguard's one decision: the [Verdict] on an RBLNDriver or an
// RBLNClusterPolicy as a function of (object, old object, operation, cluster view, policies)
// (docs/webhook.md "Decisions", "One decision"). Every front end — the webhook (`serve`, `review`, `test`), package release
// (`check`, `preview`, `plan`, the post-renderer, `test`) and package audit — builds a
// [Request], calls a [Decider] and reports the verdict, so CI, admission and the audit cannot
// disagree.
//
// An RBLNDriver is judged in order: its syntax (api/validation.ValidateDriver); then, when it
// is valid, its selector conflicts as the [View] sees them (routing.Index at admission,
// routing.Cluster at render time: identical selectors and ties on existing nodes are denied,
// ties on future nodes warned); then the policies, with input.routing from the same
// assessment. An object over a size limit is denied for its size and not given to the
// policies. An RBLNClusterPolicy: its upgradePolicy (api/validation.ValidateUpgradePolicy:
// negative counts denied, risky settings warned), its name (only rbln-cluster-policy is read:
// another is warned), the policies.
//
// A verdict holds denials, warnings and the findings of policies in audit enforcement, each a
// [Finding] (rule, field or policy package, message), at most [MaxFindings] of each kind with
// the rest counted. Updates are judged by what they change (update.go, the one home of that
// rule): an object being deleted or an unchanged spec is allowed; a finding the stored object
// already had is a warning. A policy evaluation that fails is an [*UnavailableError] unless the
// Decider is fail-open (then a warning). docs/webhook.md and docs/policy-authoring.md describe
// the rules and the input.
package decision

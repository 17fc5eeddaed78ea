// Package decision is driverguard's one decision: the [Verdict] on an RBLNDriver or an
// RBLNClusterPolicy as a function of (object, old object, operation, cluster view, policies)
// (SPEC §5, §5.1). `serve`, `review` and `check` only build a [Request], call a [Decider] and
// print the verdict, so CI and admission cannot disagree.
//
// An RBLNDriver is judged in order: its syntax (api/validation.ValidateDriver); then, when it
// is valid, its selector conflicts as the [View] sees them (routing.Index at admission,
// routing.Cluster at render time: identical selectors and ties on existing nodes are denied,
// ties on future nodes warned); then the policies, with input.routing from the same
// assessment. An RBLNClusterPolicy: its upgradePolicy (api/validation.ValidateUpgradePolicy:
// negative counts denied, reboot without drain warned), its name, the policies.
//
// Updates are judged by what they change (update.go, the one home of that rule): an object
// being deleted or an unchanged spec is allowed; a finding the stored object already had is a
// warning. A policy evaluation that fails is an [*UnavailableError] unless the Decider is
// fail-open. docs/webhook.md and docs/policy-authoring.md describe the rules and the input.
package decision

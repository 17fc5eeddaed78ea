// Package decision is driverguard's one decision: the verdict on an RBLNDriver or an
// RBLNClusterPolicy as a function of (object, old object, operation, cluster view, policies)
// (SPEC §5, §5.1). The admission webhook (`serve`), its offline twin (`review`) and the
// render-time check (`check`, through package release) are adapters that build a [Request],
// call a [Decider] and print its [Verdict]; none of them has a rule of its own, so CI and
// admission cannot disagree.
//
// # RBLNDriver
//
// Denied: every syntax rule of api/validation.ValidateDriver (a name that is not a DNS-1123
// label, reserved, malformed or missing selector keys, missing image fields); a selector
// identical to another driver's (rule IdenticalNodeSelector); a selector that ties with
// another driver on an existing node (rule ConflictingNodeSelector); every policy deny
// (rule PolicyDenied). Warned: ties that could only happen on a future node, conflicts the
// old object already had (UPDATE), policy warnings. Conflicts are judged by the [View]
// (routing.Index at admission, routing.Cluster at render time) in O(the nodes the selector
// matches + drivers).
//
// # RBLNClusterPolicy
//
// Denied: negative counts and timeouts in spec.driver.upgradePolicy, policy denies. Warned:
// reboot without drain, a name other than rbln-cluster-policy, policy warnings.
//
// # Policies
//
// The policy input is the object, the old object on UPDATE, the operation, the user, the
// source and — for an RBLNDriver — what routing says the driver would do if admitted
// (input.routing, from the same assessment the conflict rules use). The rest of the cluster
// is data.driverguard_cluster, held once by the policy engine (SPEC §5.2). An evaluation
// error is an [*UnavailableError] unless the Decider is fail-open, which turns it into a
// warning.
package decision

// Package release judges what applying a set of rendered values to a cluster would do, as
// `helm upgrade` would apply them with the webhook in the way (docs/webhook.md "One decision"): every object is
// decided by the one decision core (package decision) against the cluster as the objects
// before it left it, the allowed ones are applied, the drivers the release no longer renders
// are deleted, and the nodes that would lose their driver are found. `check` and `preview`
// report its [Result]; `policy input` and `policy data` show what it evaluated, stepping
// through a [Replay] one object at a time.
//
// # Order
//
// Helm applies objects of kinds it does not know (custom resources) after every built-in kind,
// sorted by kind name — the RBLNClusterPolicy before the RBLNDrivers — and, within a kind, in
// the order the chart renders them: the default driver, then the instances by key. `helm
// upgrade` applies them one at a time in that order and deletes removed objects last; `helm
// install` creates objects of one kind concurrently, so two new instances that tie could both
// be admitted by a webhook that decides each against a view without the other. [Apply]
// judges them one at a time, in order, which is what the webhook decides on upgrade and the
// stricter reading on install.
//
// # Cost
//
// The cluster view is a routing.Cluster and, for policies, the engine's
// data.driverguard_cluster: built once, then changed by each applied object in O(the nodes
// its selector matches). Judging a release is linear in its objects and in the nodes.
package release

// Package policy evaluates OPA (Rego v1) policies on RBLNDrivers and the RBLNClusterPolicy
// (docs/policy-authoring.md), with one input document ([Input], docs/policy-input.schema.json) at render time
// (`driverguard check`) and at admission (the webhook, `driverguard review`).
//
// The input holds the object and what is specific to it (old object, operation, user, source
// and, for a driver, its routing verdict [Routing]). The cluster is held once, in the engine's
// store at data.driverguard_cluster ([ClusterView]), and shared by every evaluation:
// [Engine.SyncCluster] replaces it writing only what changed (the webhook),
// [Engine.PatchCluster] applies one change (`check`).
//
// A policy is any package under driverguard. declaring deny and/or warn message sets. The
// [Engine] compiles the bundled library (driverguard.lib.*, library/) with the modules and data
// of the policy directories into one prepared query; [RunTests] runs *_test.rego with the
// library's own tests, through the same loader. [Engine.Start] watches the directories; a
// reload that fails keeps the previous set active and is reported ([Engine.Status]).
//
// The library holds only what Go does not judge: syntax, ties, identical selectors,
// reboot without drain and "an update denies only what it introduces" are the decision's
// (package decision). docs/policy-authoring.md is the guide (input, rules, tests, the library,
// data.driverguard_config); docs/webhook.md has what evaluation costs.
package policy

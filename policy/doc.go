// Package policy evaluates OPA (Rego v1) policies on RBLNDrivers and the RBLNClusterPolicy,
// with one input document ([Input], published as docs/policy-input.schema.json) at render
// time (`driverguard check`) and at admission time (the webhook, `driverguard review`).
//
// # Input and cluster view
//
// The input is the object and what is specific to it: the old object, the operation, the
// user, the source and, for a driver, its routing verdict ([Routing]: pools, ties, nodes). The
// cluster is held once, in the engine's store, at data.driverguard_cluster ([ClusterView]:
// drivers by name, the cluster policy, nodes with owner and pool, node counts per family) and
// shared by every evaluation (SPEC §5.2). [Engine.SyncCluster] replaces it with a new view,
// writing only what changed (the webhook, after every rebuild of its cluster view);
// [Engine.PatchCluster] applies one change (`check`, after each object it applies). The store
// keeps AST values, so a policy that reads one driver pays for one driver, and a policy that
// never reads the cluster pays nothing for it.
//
// # Policies
//
// A policy is any package under driverguard. (e.g. package driverguard.platform) that
// declares deny and/or warn as sets of message strings (conftest's convention; an object with
// a msg field is accepted too):
//
//	deny contains msg if { ...; msg := "RBLNDriver/x: what is wrong; how to fix it" }
//
// The [Engine] compiles the bundled library (driverguard.lib.*, embedded from library/) and
// the modules of the policy directories once into a prepared query. Every module must be in a
// package under driverguard.; the engine and the test runner ([RunTests]) check modules the
// same way (one loader), so a module `policy test` accepts is one `check` and `serve` load. That query returns one
// decision object with every enabled package's messages, each tagged with its package; the
// aggregation is generated from the packages found at compile time, so evaluation reads
// exactly the enabled rules. Evaluate is safe for concurrent use and bounded by a deadline.
//
// # Policy directories
//
// A directory holds .rego modules and JSON/YAML data documents, read recursively as `opa
// test DIR` reads them (data is merged under the path of its directory). *_test.rego files
// are tests: [RunTests] runs them with the library's own; the engine ignores them. Entries
// whose name starts with "." are skipped, which is what makes a mounted ConfigMap (visible
// symlinks into a hidden ..data directory) read once. data.driverguard_config configures the
// engine and the library: disabled (policies to turn off), allowed_registries and
// known_families.
//
// [Engine.Start] watches the directories (file system events plus a poll) and reloads on
// change. A reload that fails to parse, compile or configure keeps the previous set active
// and is reported with file and line: [Engine.Status], the log, and the
// driverguard_policy_load_failed metric.
package policy

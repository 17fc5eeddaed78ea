// Package finding is what every front end of driverguard reports (docs/output.md "A finding"): a Finding — a
// rule that fired on an object, at a level, with its message and where it came from — and the
// Registry of every rule that can fire: the built-in rules of Go (Builtin) and the rule bodies
// of the Rego policies (a package's deny and its warn are two rules).
//
// check, review, audit, test, plan, the post-renderer and serve build Findings; the output
// writers (package output), admission responses, ClusterReports and SARIF read them. The
// package imports nothing of driverguard: every layer may use it.
package finding

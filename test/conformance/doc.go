// Package conformance holds driverguard to what rbln-npu-operator does. Its corpus
// (testdata/clusters, written by hack/opcorpus from the operator's rules, independently of
// package operator) is many clusters of nodes with real kernels and random families, and the
// operator's outcome for each: every node's owner label, pool and DaemonSet, and the driver and
// RSMD DaemonSets the operator renders. Every front end must agree with it on every node:
// `route`, `preview`, `plan` and `audit` (the driverguard binary, DRIVERGUARD_BIN or built once
// for the package) and the admission webhook's DaemonSet mutation (its handler, as `review` and
// `serve` run it), which leaves each operator-rendered DaemonSet unpatched and restores one
// that drifted from it. docs/operator.md lists the rules.
package conformance

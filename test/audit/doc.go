// Package audit checks serve's audit (docs/audit.md) on one real API server for the package
// (envtest, with the CRDs and openreports' ClusterReport CRD): a node relabelled into a tie
// shows ConflictingNodeSelector in both drivers' reports and clears, a stale owner label and
// a node losing its family label show up, a report deleted or edited by hand comes back
// (whatever annotations the edit kept), a steady cluster causes no report write,
// status.audit follows the totals, a policy in audit enforcement reports while a driver that
// breaks it is admitted, two serve replicas elect one auditor that is replaced when killed,
// an image deleted from an in-process registry shows DriverImageNotFound, and the metrics
// count every finding of a report capped at one result.
package audit

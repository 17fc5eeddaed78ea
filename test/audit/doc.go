// Package audit checks serve's audit (SPEC §9) on a real API server (envtest, with the CRDs
// and openreports' ClusterReport CRD): a node relabelled into a tie shows
// ConflictingNodeSelector in both drivers' reports and clears when relabelled back, a stale
// owner label and a node losing its family label show up, a report deleted by hand comes
// back, a steady cluster causes no report write, and a policy in audit enforcement reports on
// stored drivers while a new driver that breaks it is admitted.
package audit

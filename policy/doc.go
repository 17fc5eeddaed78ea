// Package policy evaluates OPA (Rego v1) policies on RBLNDrivers and the RBLNClusterPolicy,
// with one input document (Input) at render time (`driverguard check`) and at admission time
// (the webhook, `driverguard review`).
package policy

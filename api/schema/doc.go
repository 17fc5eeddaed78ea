// Package schema judges RBLNDriver and RBLNClusterPolicy objects as the API server's CRD
// handling does, before any of driverguard's own rules: the request is decoded, unknown fields
// are pruned and nulls of non-nullable fields dropped, metadata is coerced and defaults are
// applied, then the structural schema (types, required fields, limits) and the CEL rules are
// checked — on UPDATE with the API server's validation ratcheting, which spares a field the
// update leaves as it was and nothing else. It runs the apiextensions-apiserver's own
// functions over the CRDs the chart installs (config/crd), so that `review`, `check` and
// `post-render` refuse what the API server refuses, in its words (docs/promises.md).
package schema

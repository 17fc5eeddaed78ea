// Package routing answers, for every node, which RBLNDriver owns it, which driver DaemonSet
// (pool) runs on it and which image that DaemonSet pulls: docs/routing.md "Owner of a node" and
// "Pools, DaemonSets, images", once, for the CLI and the admission webhook alike.
//
// Everything here is pure: functions take drivers and nodes and return values sorted
// independently of input order; nothing reads files, the API server or a registry.
//
//   - [Route] routes a set of nodes (the `driverguard route -o json` contract).
//   - [NewIndex] builds an [Index] once; [Index.Route] equals [Route], and [Index.Conflicts]
//     answers the webhook's question for one new or changed driver.
//   - [PoolLabelsOf], [DaemonSetName], [DriverImage], [SMDDaemonSetName] and [SMDImage] are
//     the per-pool rules for callers that start from a DaemonSet's nodeSelector.
//
// The rules, with every decision where the specification is silent, are in
// docs/routing.md ("The precise rules").
package routing

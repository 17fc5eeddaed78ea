// Package cluster is the one cluster view of the commands and the webhook: the nodes (as
// routing reads them), the RBLNDrivers, the RBLNClusterPolicy and, for a plan, the workloads
// that govern draining, held once in a [State].
//
// A State is read from files ([FromFiles]: the --nodes, --drivers, --cluster-policy and --pods
// streams), from the API server ([ReadLive], list only, through a [Target]: a kubeconfig, a
// context and a namespace, with Helm's plugin environment as defaults), or built from lists
// and changed one object at a time ([State.SetNode], [State.DeleteDriver], ...), as
// informer events do: [Informed] feeds a State from informers (`serve`) and rebuilds its
// [Snapshot] after changes. A Snapshot is the immutable view the webhook decides on, with its
// projections: the routing index, built once, and the policies' cluster view
// (data.driverguard_cluster), synced from the same events. [Static] serves one snapshot
// (`review`, tests).
//
// See docs/development.md for where it sits, docs/plan.md for what a plan reads live.
package cluster

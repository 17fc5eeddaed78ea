// Package cluster is the cluster view of the one-shot commands: the nodes (as routing reads
// them), the RBLNDrivers, the RBLNClusterPolicy and, for a plan, the workloads that govern
// draining, held once in a [State].
//
// A State is read from files ([FromFiles]: the --nodes, --drivers, --cluster-policy and --pods
// streams), from the API server ([ReadLive], list only, through a [Target]: a kubeconfig, a
// context and a namespace, with Helm's plugin environment as defaults), or built from lists
// and changed one object at a time ([State.SetNode], [State.DeleteDriver], ...), as
// informer events would.
//
// See docs/development.md for where it sits, docs/plan.md for what a plan reads live.
package cluster

// Package plan checks `driverguard plan` against a real cluster: a kube-apiserver and etcd
// (envtest, with the CRDs and the in-process webhook of test/controlplane) and the real
// disruption controller, run by the tests as kube-controller-manager wires it
// (bin/disruption-controller, built by hack/tools.sh control-plane from
// hack/tools/disruption-controller). No other
// controller runs: the tests create the Deployments, their ReplicaSets and the pods (bound to
// nodes, made Ready through the status subresource) themselves.
//
//   - TestEvictionsMatchPlan plans a driver upgrade with `plan --kubeconfig`, then drains the
//     nodes whose driver pod restarts through the Eviction API, pod by pod, in the order the
//     plan implies: every pod the plan says a PodDisruptionBudget blocks must be refused, every
//     other pod must be evicted.
//   - TestLivePlanEqualsFilePlan plans the same cluster once live and once from the objects
//     written to files (--nodes, --drivers, --cluster-policy, --pods), with values and without
//     (the drift-only audit): the plans must be equal.
//
// Without the binaries the tests fail; with -short they skip.
package plan

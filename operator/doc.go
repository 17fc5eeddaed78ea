// Package operator is what rbln-npu-operator does, read from its code: the one place in this
// repository where the operator's label keys, pool and DaemonSet names, image paths and
// routing rules are written down. Everything driverguard predicts (route, preview, plan, the
// audit) or corrects (the admission webhook's DaemonSet mutation) calls this package; nothing
// else spells these names.
//
// Each rule carries the operator file and commit it was read from ([Rules]); docs/operator.md
// lists them with where the product documents disagree. An operator release is this package
// to re-read, not a hunt through the repository.
//
// The package is a leaf: it takes plain values (label maps, names, image fields) and imports
// no other package of this module, so the API types, their validation and every front end
// can use it.
//
//   - [PoolOf] composes a node's pool ([Pool]) or says why it has none ([PoolError]).
//   - [DriverImage], [SMDImage] and [PullPolicy] compose the images the operator deploys.
//   - [DriverDaemonSet] and [SMDDaemonSet] are the DaemonSets' names, labels and selectors;
//     [Recognize] tells an operator DaemonSet from any other.
//   - [Excluded] says which RBLNDrivers the owner resolver leaves out; [ActiveClusterPolicy]
//     picks the RBLNClusterPolicy the operator reads.
package operator

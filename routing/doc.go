// Package routing answers, for every node, which RBLNDriver owns it, which driver DaemonSet
// (pool) runs on it and which image that DaemonSet pulls. It implements SPEC §3 (node routing)
// and §4 (pools, DaemonSets, image paths) once, for the CLI (route, preview) and the admission
// webhook alike.
//
// Everything here is pure: functions take drivers and nodes and return values; nothing reads
// files, talks to the API server or a registry, or keeps global state. Inputs are never
// modified. Output is sorted and does not depend on the order of the inputs.
//
// # Entry points
//
//   - [Route] routes a set of nodes: owners, ties, pools, DaemonSet names, images, RSMD
//     DaemonSets, invalid drivers. Its JSON form is the `driverguard route -o json` contract.
//   - [NewIndex] builds an [Index] once from drivers and nodes; [Index.Route] is the same as
//     [Route], and [Index.Conflicts] answers the webhook's question for one new or changed
//     driver: on which existing nodes would it tie, with which resources, and could it tie on
//     a future node.
//   - [PoolLabelsOf], [PoolLabels.Name], [DaemonSetName], [DriverImage], [SMDDaemonSetName] and
//     [SMDImage] expose the per-pool rules for callers that start from a DaemonSet's
//     nodeSelector rather than from nodes.
//
// # Routing rules (SPEC §3)
//
// Candidate nodes carry rebellions.ai/npu.deploy.driver=true; every other node (including
// "pre-installed") is [ReasonOutOfScope] and gets no owner. A driver matches a candidate when
// every key=value of its nodeSelector equals the node's label; the empty selector matches every
// candidate, and {env: ""} matches only nodes that carry env="" (a missing label never equals
// ""). Drivers whose name fails validation.ValidateDriverName or whose spec fails
// validation.ValidateDriverSpec (reserved or malformed selector keys, empty selector on a
// resource other than rbln-driver, missing image fields, ...) are reported in
// [Result.Invalid] with reason [ReasonInvalidSpec] and take no part in routing. Two or more
// drivers with the same name and different specs are all invalid (identical copies count as
// one).
//
// The owner is the matching driver whose selector is a strict superset of every other matching
// selector. Without such a unique maximum the node is tied ([ReasonConflictingNodeSelector]);
// the tied set is the set of maximal matching selectors. A tied node keeps its current owner
// (its rebellions.ai/npu.driver.owner label) if that owner is a valid driver that still matches
// the node — whether or not it is one of the tied resources, so a node on the default driver
// stays there while two instances tie over it — and otherwise has no owner. A unique most
// specific match always wins, whatever the node's current owner (specificity beats
// stickiness). Ties are reported once per distinct tied set, in [Result.Conflicts], with a
// sorted sample of at most [ConflictSampleSize] node names and the total count.
//
// # Pools and images (SPEC §4)
//
// An owned node joins the pool of its owner identified by the raw labels family
// (rebellions.ai/npu.family), os (…system-os_release.ID), osVersion (…VERSION_ID) and kernel
// (…kernel-version.full); see [PoolLabels]. Decisions where the specification is silent:
//
//   - A valid family is a non-empty valid Kubernetes label value. Anything else (missing,
//     empty, "+", ...) is [ReasonDriverFamilyLabelMissing]: the node keeps its owner but joins
//     no pool, so it never causes a DaemonSet to be removed.
//   - Missing or empty os, osVersion or kernel labels also mean no pool: the image tag cannot be
//     composed, so the node is [ReasonInvalidImageTag] and [NodeResult.Detail] names the missing
//     labels. (The route JSON contract has a closed set of reasons; no new one is invented.)
//   - The pool name is <family>-<os><osVersion>-<kernel> as is when it is canonical: family
//     [a-z0-9]+, os [a-z]+, osVersion a digit followed by [a-z0-9.], and a kernel that is
//     already a lowercase DNS-1123 subdomain fragment. Those names parse back uniquely, so they
//     never collide. Any other pool (uppercase, '_', '+', '-' in family or os, ...) is
//     sanitised — lowercased, every character outside [a-z0-9.-] becomes '-', a '.' not between
//     two alphanumerics becomes '-', non-alphanumerics are trimmed from both ends — and gets a
//     stable 10-hex-digit hash of the raw labels appended, so two raw pools never share a name
//     (e.g. kernels "5.14.0-1.el9_2" and "5.14.0-1.el9-2", or families "Atom" and "atom").
//   - The DaemonSet name is <CR_NAME>-<POOL_NAME> when that fits in 63 characters; otherwise
//     it is cut to 52 characters (trailing '-' and '.' removed) plus '-' and a hash of the
//     driver name and the raw pool labels. [Route] additionally checks that no two pools of
//     the result share a DaemonSet name (possible only with contrived labels across drivers)
//     and, if they would, gives each of them a hashed name.
//   - The image is <registry>/<org…>/<family>/<name>:<version>-<kernel>-<os><osVersion>, the
//     family inserted before the last segment of spec.image (one, two or more segments). Raw
//     labels are used, never sanitised. If the tag is not a valid OCI tag (e.g. a kernel with
//     '+') or a repository path component is not valid (e.g. family "Atom_X" with capitals),
//     the pool is still listed, with an empty image and [ReasonInvalidImageTag]; its nodes get
//     the same reason and no image.
//   - Nodes keep their pool while tied if they keep their owner.
//
// When a node has several problems it reports the first of: OutOfScope, NoMatchingDriver,
// ConflictingNodeSelector, DriverFamilyLabelMissing, InvalidImageTag.
//
// Invariants (property-tested): every owner matches its node and its selector is a strict
// superset of every other matching valid selector unless the node is tied; the pools
// partition the owned nodes that have a valid family and all three node-feature labels; the
// result is identical for any order of drivers and nodes.
package routing

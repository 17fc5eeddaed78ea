# METADATA
# title: Shared helpers of the bundled library
# description: |
#   Not a policy (it has no deny or warn rules): helpers the bundled rules share and that
#   user policies may import as data.driverguard.lib.util.
package driverguard.lib.util

# Node labels (docs/routing.md "Pools, DaemonSets, images").
family_label := "rebellions.ai/npu.family"

os_label := "feature.node.kubernetes.io/system-os_release.ID"

os_version_label := "feature.node.kubernetes.io/system-os_release.VERSION_ID"

kernel_label := "feature.node.kubernetes.io/kernel-version.full"

# default_driver is the name of the default RBLNDriver, the only one that may select every node.
default_driver := "rbln-driver"

# The policies apply to objects being created or updated, never to deletions.
applies if input.operation != "DELETE"

# is_driver is true when the object under evaluation is an RBLNDriver. The bundled rules do
# not call it: they start with `input.object.kind == "RBLNDriver"` (or "RBLNClusterPolicy"),
# which OPA's rule index uses to skip the rules of the other kind without evaluating them, and
# test `input.operation != "DELETE"` after their own condition (most rules end there). Every
# expression an admission request evaluates costs; your rules can do the same.
is_driver if {
	applies
	input.object.kind == "RBLNDriver"
}

# is_cluster_policy is true when the object under evaluation is the RBLNClusterPolicy.
is_cluster_policy if {
	applies
	input.object.kind == "RBLNClusterPolicy"
}

# name is the object's name ("" when it has none yet).
name := object.get(input.object, ["metadata", "name"], "")

# resource names the object in messages, e.g. RBLNDriver/rbln-driver-atom-canary.
resource := sprintf("%s/%s", [object.get(input.object, "kind", "object"), name])

# spec is the object's spec ({} when absent).
spec := object.get(input.object, "spec", {})

# upgrade_policy is the RBLNClusterPolicy's spec.driver.upgradePolicy ({} when absent).
upgrade_policy := object.get(spec, ["driver", "upgradePolicy"], {})

# selector returns an RBLNDriver's spec.nodeSelector ({} when absent).
selector(driver) := object.get(driver, ["spec", "nodeSelector"], {})

# subset is true when every key=value of a is also in b (a selects at least the nodes b does).
subset(a, b) if object.subset(b, a)

# format_selector prints a selector as sorted k=v pairs; the empty selector is {}.
format_selector(sel) := "{}" if count(sel) == 0

format_selector(sel) := concat(",", sort([sprintf("%s=%s", [k, v]) | some k, v in sel])) if count(sel) > 0

# known_families are the RBLN NPU families driverguard knows without node data;
# data.driverguard_config.known_families replaces the list.
default known_families := {"atom", "rebel", "ca", "cr"}

known_families := {lower(f) | some f in configured} if configured := data.driverguard_config.known_families

# families are the known families plus every family label of the cluster's nodes.
families := known_families | node_families

# node_families are the rebellions.ai/npu.family values of the cluster's nodes, lowercased,
# from the per-family node counts of data.driverguard_cluster.families (never a walk over
# the nodes).
node_families contains lower(f) if {
	some f, _ in cluster_families
}

# The cluster view is data.driverguard_cluster: drivers (every RBLNDriver by name, the
# object's stored version included), clusterPolicy, nodes (by name: name, labels, owner,
# pool) and families (the number of nodes per family). Each part is read where it is, never
# copied.

# drivers are the cluster's RBLNDrivers by name ({} when unknown).
default drivers := {}

drivers := data.driverguard_cluster.drivers

# cluster_families are the node counts per rebellions.ai/npu.family value ({} when unknown).
default cluster_families := {}

cluster_families := data.driverguard_cluster.families

# routing is what routing says the RBLNDriver under evaluation would do if admitted:
# selected, nodes, pools, unpooled, ties, potentialTies ({} for other objects).
default routing := {}

routing := input.routing

# pools are the driver DaemonSets the object would run, each with name, daemonSet, family,
# os, osVersion, kernel, tag, image, reason and nodes.
pools := object.get(routing, "pools", [])

# allowed_registries is data.driverguard_config.allowed_registries ([] when unset: every
# registry is allowed).
default allowed_registries := []

allowed_registries := data.driverguard_config.allowed_registries

# oci_tag_pattern is the OCI distribution-spec tag grammar.
oci_tag_pattern := `^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`

# instance_key is the driver.instances key an RBLNDriver named rbln-driver-<key> renders from.
instance_key := trim_prefix(name, "rbln-driver-") if startswith(name, "rbln-driver-")

# values names the chart values behind an RBLNDriver field (path relative to driver.), for
# messages: values("image.tag") on rbln-driver-atom is
# "values: driver.instances.atom.image.tag, or the driver.image.tag it inherits".
values(path) := sprintf("values: driver.instances.%s.%s, or the driver.%s it inherits", [instance_key, path, path])

values(path) := sprintf("values: driver.%s", [path]) if not instance_key

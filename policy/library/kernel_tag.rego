# METADATA
# title: Every known node kernel forms a valid driver image tag
# description: |
#   A driver image tag is <spec.version>-<kernel>-<os><osVersion> (SPEC §4), with the kernel
#   label used raw. For every node of input.cluster.nodes this RBLNDriver owns, the tag must be
#   a valid OCI tag; a kernel such as 5.15.0+custom cannot be, and that node would get no
#   driver. One message per invalid tag, with a sample of its nodes.
package driverguard.lib.kernel_tag

import data.driverguard.lib.util

tag(node) := sprintf("%s-%s-%s%s", [
	object.get(util.spec, "version", ""),
	node.labels[util.kernel_label],
	object.get(node.labels, util.os_label, ""),
	object.get(node.labels, util.os_version_label, ""),
])

# invalid maps every invalid tag to the owned nodes that need it.
invalid[t] contains node.name if {
	util.is_driver
	some node in input.cluster.nodes
	node.owner == util.name
	node.labels[util.family_label] != ""
	t := tag(node)
	not regex.match(util.oci_tag_pattern, t)
}

deny contains msg if {
	some t, names in invalid
	sample := array.slice(sort(names), 0, 5)
	kernels := {sprintf("%q", [k]) | some n in input.cluster.nodes; n.name in names; k := n.labels[util.kernel_label]}
	msg := sprintf("%s: driver image tag %q for %d node(s) (%s) is not a valid OCI tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}) because of kernel %s: those nodes would get no driver; run a kernel whose version is a valid tag, publish a build under a valid tag and relabel, or move the nodes off this driver (narrow spec.nodeSelector)", [util.resource, t, count(names), concat(", ", sample), concat(", ", sort(kernels))])
}

# METADATA
# title: Every known node kernel forms a valid driver image tag
# description: |
#   A driver image tag is <spec.version>-<kernel>-<os><osVersion> (SPEC §4), with the kernel
#   label used raw. For every node of input.cluster.nodes this RBLNDriver owns, the tag must be
#   a valid OCI tag; a kernel such as 5.15.0+custom cannot be, and that node would get no
#   driver. One message per invalid tag, with a sample of its nodes.
package driverguard.lib.kernel_tag

import data.driverguard.lib.util

# invalid maps every invalid tag to the owned nodes that need it. Rule values are bound before
# the loop over nodes (see util.node_families).
invalid[t] contains node.name if {
	util.is_driver
	me := util.name
	version := object.get(util.spec, "version", "")
	[family, kernel, os, os_version] := [util.family_label, util.kernel_label, util.os_label, util.os_version_label]
	pattern := util.oci_tag_pattern
	some node in input.cluster.nodes
	node.owner == me
	node.labels[family] != ""
	t := sprintf("%s-%s-%s%s", [version, node.labels[kernel], object.get(node.labels, os, ""), object.get(node.labels, os_version, "")])
	not regex.match(pattern, t)
}

deny contains msg if {
	some t, names in invalid
	sample := array.slice(sort(names), 0, 5)
	kernels := {sprintf("%q", [k]) | some n in input.cluster.nodes; n.name in names; k := n.labels[util.kernel_label]}
	msg := sprintf("%s: driver image tag %q for %d node(s) (%s) is not a valid OCI tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}) because of kernel %s: those nodes would get no driver; run a kernel whose version is a valid tag, publish a build under a valid tag and relabel, or move the nodes off this driver (narrow spec.nodeSelector)", [util.resource, t, count(names), concat(", ", sample), concat(", ", sort(kernels))])
}

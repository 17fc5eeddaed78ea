# METADATA
# title: Every pool's kernel forms a valid driver image tag
# description: |
#   A driver image tag is <spec.version>-<kernel>-<os><osVersion> (docs/routing.md "Pools, DaemonSets, images"), with the kernel
#   label used raw. For every pool the RBLNDriver would run (input.routing.pools), the tag
#   must be a valid OCI tag; a kernel such as 5.15.0+custom cannot be, and that pool's nodes
#   would get no driver. One message per invalid tag, with a sample of its nodes.
package driverguard.lib.kernel_tag

import data.driverguard.lib.util

deny contains msg if {
	input.object.kind == "RBLNDriver"
	some pool in input.routing.pools
	not regex.match(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`, pool.tag) # util.oci_tag_pattern
	input.operation != "DELETE"
	t := pool.tag
	names := {name | some p in input.routing.pools; p.tag == t; some name in p.nodes}
	sample := array.slice(sort(names), 0, 5)
	kernels := {sprintf("%q", [p.kernel]) | some p in input.routing.pools; p.tag == t}
	msg := sprintf("%s: driver image tag %q for %d node(s) (%s) is not a valid OCI tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}) because of kernel %s: those nodes would get no driver; run a kernel whose version is a valid tag, publish a build under a valid tag and relabel, or move the nodes off this driver (narrow spec.nodeSelector)", [util.resource, t, count(names), concat(", ", sample), concat(", ", sort(kernels))])
}

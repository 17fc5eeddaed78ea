# METADATA
# title: The NPU family is not written into spec.image
# description: |
#   The operator inserts the node pool's family before the last segment of spec.image
#   (rebellions/rbln-driver becomes rebellions/atom/rbln-driver on ATOM nodes). A family already
#   in spec.image is doubled (rebellions/atom/atom/rbln-driver) and pins every pool to one
#   family's build. Families are the known ones (atom, rebel, ca, cr, or
#   data.driverguard_config.known_families) plus every rebellions.ai/npu.family value of the
#   cluster's nodes (data.driverguard_cluster.families).
package driverguard.lib.family_in_image

import data.driverguard.lib.util

# The rule and is_family spell their conditions out with literals and direct data refs rather
# than util's derived sets (util.families, util.known_families): a rule such as
# util.known_families is evaluated on every request that reaches it, at a cost of its own,
# and this rule runs on every RBLNDriver request.
deny contains msg if {
	input.object.kind == "RBLNDriver"
	image := object.get(input.object, ["spec", "image"], "")
	segments := split(image, "/")
	some i, segment in array.slice(segments, 0, count(segments) - 1) # every segment but the last
	is_family(lower(segment))
	fixed := concat("/", [s | some j, s in segments; j != i])
	input.operation != "DELETE"
	msg := sprintf("%s: spec.image %q contains the NPU family %q; leave the family out, the operator inserts it per node pool (this would pull .../%s/%s/...): set spec.image to %q (%s)", [util.resource, image, segment, segment, segment, fixed, util.values("image.repository")])
}

# is_family: f (lowercase) is a known family (util.known_families: the defaults, or
# data.driverguard_config.known_families in their place) or the lowercase family label of some
# node.
is_family(f) if {
	{"atom", "rebel", "ca", "cr"}[f] # util.known_families' default, unless configured
	not data.driverguard_config.known_families
}

is_family(f) if {
	some known in data.driverguard_config.known_families
	lower(known) == f
}

is_family(f) if {
	some family, _ in data.driverguard_cluster.families
	lower(family) == f
}

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

deny contains msg if {
	input.object.kind == "RBLNDriver"
	image := object.get(input.object, ["spec", "image"], "")
	contains(image, "/") # a repository without a path has no segment before the last
	segments := split(image, "/")
	some i, segment in segments
	i < count(segments) - 1
	is_family(lower(segment))
	fixed := concat("/", [s | some j, s in segments; j != i])
	input.operation != "DELETE"
	msg := sprintf("%s: spec.image %q contains the NPU family %q; leave the family out, the operator inserts it per node pool (this would pull .../%s/%s/...): set spec.image to %q (%s)", [util.resource, image, segment, segment, segment, fixed, util.values("image.repository")])
}

# is_family: f (lowercase) is a known family or the lowercase family label of some node.
is_family(f) if f in util.known_families

is_family(f) if {
	some family, _ in data.driverguard_cluster.families
	lower(family) == f
}

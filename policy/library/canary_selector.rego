# METADATA
# title: Instances select a strict subset of the default driver's nodes
# description: |
#   An instance (a canary, a per-family version) must be more specific than the default
#   rbln-driver: its nodeSelector must contain every key=value of rbln-driver's and at least one
#   more. An identical selector ties with the default on every node both match (neither driver
#   is installed there); a broader one (a strict subset of the default's) loses every node the
#   default matches and takes only nodes the default does not select. Selectors neither of
#   which contains the other are driverguard's own rule (PotentialConflict, in Go): it warns
#   only when a node could carry both, and policies read its verdict from input.routing.
package driverguard.lib.canary_selector

import data.driverguard.lib.util

# The instance under evaluation is compared with the default rbln-driver in the cluster, and
# the default under evaluation with every instance in the cluster
# (data.driverguard_cluster.drivers). Each rule states its whole condition, the instance's and
# the default's selector read directly: a shared helper rule (a set of comparisons) would be
# evaluated, and iterated, on every RBLNDriver request, and nearly every instance is more
# specific than the default (the rules end at their first object.subset).

# The instance's selector is a subset of the default's: identical, or broader.
deny contains msg if {
	input.object.kind == "RBLNDriver"
	def := data.driverguard_cluster.drivers["rbln-driver"]
	inst := input.object.metadata.name
	inst != "rbln-driver"
	inst_sel := object.get(input.object, ["spec", "nodeSelector"], {})
	def_sel := object.get(def, ["spec", "nodeSelector"], {})
	object.subset(def_sel, inst_sel)
	input.operation != "DELETE"
	msg := denial(inst, inst_sel, def_sel)
}

deny contains msg if {
	input.object.kind == "RBLNDriver"
	input.object.metadata.name == "rbln-driver"
	def_sel := object.get(input.object, ["spec", "nodeSelector"], {})
	some inst, d in data.driverguard_cluster.drivers
	inst != "rbln-driver"
	inst_sel := object.get(d, ["spec", "nodeSelector"], {})
	object.subset(def_sel, inst_sel)
	input.operation != "DELETE"
	msg := denial(inst, inst_sel, def_sel)
}

# denial is the message for an instance inst whose selector inst_sel is a subset of the
# default's def_sel.
denial(inst, inst_sel, def_sel) := sprintf("%s: RBLNDriver/%s's nodeSelector %s is identical to the default rbln-driver's: the two tie on every node they match and neither driver is installed there; add a label only the instance's nodes carry, e.g. env=canary", [util.resource, inst, util.format_selector(inst_sel)]) if {
	inst_sel == def_sel
}

denial(inst, inst_sel, def_sel) := sprintf("%s: RBLNDriver/%s's nodeSelector %s is broader than the default rbln-driver's %s: the default wins every node both match; give the instance all of the default's labels plus one of its own, e.g. %s", [util.resource, inst, util.format_selector(inst_sel), util.format_selector(def_sel), util.format_selector(object.union(def_sel, {"env": "canary"}))]) if {
	inst_sel != def_sel
}

# METADATA
# title: Instances select a strict subset of the default driver's nodes
# description: |
#   An instance (a canary, a per-family version) must be more specific than the default
#   rbln-driver: its nodeSelector must contain every key=value of rbln-driver's and at least one
#   more. A broader one (a strict subset of the default's) loses every node the default matches
#   and takes only nodes the default does not select. The other cases are driverguard's own
#   rules, in Go, which policies read from input.routing: an identical selector is
#   IdenticalNodeSelector (denied), selectors neither of which contains the other are
#   PotentialConflict (warned only when a node could carry both).
package driverguard.lib.canary_selector

import data.driverguard.lib.util

# The instance under evaluation is compared with the default rbln-driver in the cluster, and
# the default under evaluation with every instance in the cluster
# (data.driverguard_cluster.drivers). Each rule states its whole condition, the instance's and
# the default's selector read directly: a shared helper rule (a set of comparisons) would be
# evaluated, and iterated, on every RBLNDriver request, and nearly every instance is more
# specific than the default (the rules end at their first object.subset).

# The instance's selector is a strict subset of the default's: broader.
deny contains msg if {
	input.object.kind == "RBLNDriver"
	def := data.driverguard_cluster.drivers["rbln-driver"]
	inst := input.object.metadata.name
	inst != "rbln-driver"
	inst_sel := object.get(input.object, ["spec", "nodeSelector"], {})
	def_sel := object.get(def, ["spec", "nodeSelector"], {})
	object.subset(def_sel, inst_sel)
	inst_sel != def_sel # identical is IdenticalNodeSelector's
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
	inst_sel != def_sel # identical is IdenticalNodeSelector's
	input.operation != "DELETE"
	msg := denial(inst, inst_sel, def_sel)
}

# denial is the message for an instance inst whose selector inst_sel is a strict subset of
# the default's def_sel.
denial(inst, inst_sel, def_sel) := sprintf("%s: RBLNDriver/%s's nodeSelector %s is broader than the default rbln-driver's %s: the default wins every node both match; give the instance all of the default's labels plus one of its own, e.g. %s", [util.resource, inst, util.format_selector(inst_sel), util.format_selector(def_sel), util.format_selector(object.union(def_sel, {"env": "canary"}))])

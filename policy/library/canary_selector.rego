# METADATA
# title: Instances select a strict subset of the default driver's nodes
# description: |
#   An instance (a canary, a per-family version) must be more specific than the default
#   rbln-driver: its nodeSelector must contain every key=value of rbln-driver's and at least one
#   more. An identical selector ties with the default on every node both match (neither driver
#   is installed there); a broader one (a strict subset of the default's) loses every node the
#   default matches and takes only nodes the default does not select. Selectors neither of
#   which contains the other tie on nodes that match both: a warning.
package driverguard.lib.canary_selector

import data.driverguard.lib.util

# The instance under evaluation is compared with the default rbln-driver in the cluster, and
# the default under evaluation with every instance. Each rule reads the cluster view directly
# (data.driverguard_cluster.drivers) and holds its whole condition: helper rules would cost an
# evaluation each on every request.

deny contains msg if {
	input.object.kind == "RBLNDriver"
	input.operation != "DELETE"
	some [inst, def] in pairs
	object.get(inst, ["spec", "nodeSelector"], {}) == object.get(def, ["spec", "nodeSelector"], {})
	msg := sprintf("%s: RBLNDriver/%s's nodeSelector %s is identical to the default %s's: the two tie on every node they match and neither driver is installed there; add a label only the instance's nodes carry, e.g. env=canary", [util.resource, inst.metadata.name, util.format_selector(util.selector(inst)), def.metadata.name])
}

deny contains msg if {
	input.object.kind == "RBLNDriver"
	input.operation != "DELETE"
	some [inst, def] in pairs
	inst_sel := object.get(inst, ["spec", "nodeSelector"], {})
	def_sel := object.get(def, ["spec", "nodeSelector"], {})
	inst_sel != def_sel
	util.subset(inst_sel, def_sel)
	msg := sprintf("%s: RBLNDriver/%s's nodeSelector %s is broader than the default %s's %s: the default wins every node both match; give the instance all of the default's labels plus one of its own, e.g. %s", [util.resource, inst.metadata.name, util.format_selector(inst_sel), def.metadata.name, util.format_selector(def_sel), util.format_selector(object.union(def_sel, {"env": "canary"}))])
}

warn contains msg if {
	input.object.kind == "RBLNDriver"
	input.operation != "DELETE"
	some [inst, def] in pairs
	inst_sel := object.get(inst, ["spec", "nodeSelector"], {})
	def_sel := object.get(def, ["spec", "nodeSelector"], {})
	not util.subset(inst_sel, def_sel)
	not util.subset(def_sel, inst_sel)
	msg := sprintf("%s: RBLNDriver/%s's nodeSelector %s and the default %s's %s do not contain one another: they tie on nodes that carry both sets of labels; make the instance's selector include %s", [util.resource, inst.metadata.name, util.format_selector(inst_sel), def.metadata.name, util.format_selector(def_sel), util.format_selector(def_sel)])
}

# pairs yields [instance, default]: the object under evaluation and the default in the
# cluster, or, when the object is the default, each instance in the cluster and the object.
pairs contains [input.object, d] if {
	object.get(input.object, ["metadata", "name"], "") != "rbln-driver"
	d := data.driverguard_cluster.drivers["rbln-driver"]
}

pairs contains [d, input.object] if {
	input.object.metadata.name == "rbln-driver"
	some name, d in data.driverguard_cluster.drivers
	name != "rbln-driver"
}

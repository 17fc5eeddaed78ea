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

# pairs yields [instance, default] for the object under evaluation and the cluster's other
# drivers (data.driverguard_cluster.drivers): one lookup for an instance, a pass over the
# drivers only when the default itself is evaluated.
pairs contains [input.object, d] if {
	default_name := util.default_driver
	util.name != default_name
	d := util.drivers[default_name]
}

pairs contains [d, input.object] if {
	default_name := util.default_driver
	util.name == default_name
	some name, d in util.drivers
	name != default_name
}

deny contains msg if {
	util.is_driver
	some [inst, def] in pairs
	util.selector(inst) == util.selector(def)
	msg := sprintf("%s: RBLNDriver/%s's nodeSelector %s is identical to the default %s's: the two tie on every node they match and neither driver is installed there; add a label only the instance's nodes carry, e.g. env=canary", [util.resource, inst.metadata.name, util.format_selector(util.selector(inst)), def.metadata.name])
}

deny contains msg if {
	util.is_driver
	some [inst, def] in pairs
	inst_sel := util.selector(inst)
	def_sel := util.selector(def)
	inst_sel != def_sel
	util.subset(inst_sel, def_sel)
	msg := sprintf("%s: RBLNDriver/%s's nodeSelector %s is broader than the default %s's %s: the default wins every node both match; give the instance all of the default's labels plus one of its own, e.g. %s", [util.resource, inst.metadata.name, util.format_selector(inst_sel), def.metadata.name, util.format_selector(def_sel), util.format_selector(object.union(def_sel, {"env": "canary"}))])
}

warn contains msg if {
	util.is_driver
	some [inst, def] in pairs
	inst_sel := util.selector(inst)
	def_sel := util.selector(def)
	not util.subset(inst_sel, def_sel)
	not util.subset(def_sel, inst_sel)
	msg := sprintf("%s: RBLNDriver/%s's nodeSelector %s and the default %s's %s do not contain one another: they tie on nodes that carry both sets of labels; make the instance's selector include %s", [util.resource, inst.metadata.name, util.format_selector(inst_sel), def.metadata.name, util.format_selector(def_sel), util.format_selector(def_sel)])
}

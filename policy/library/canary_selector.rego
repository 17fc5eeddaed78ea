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
# the default under evaluation with every instance in the cluster (data.driverguard_cluster.drivers).

deny contains msg if {
	some c in comparisons
	c.inst_sel == c.def_sel
	msg := sprintf("%s: RBLNDriver/%s's nodeSelector %s is identical to the default %s's: the two tie on every node they match and neither driver is installed there; add a label only the instance's nodes carry, e.g. env=canary", [util.resource, c.inst, util.format_selector(c.inst_sel), c.def])
}

deny contains msg if {
	some c in comparisons
	c.inst_sel != c.def_sel
	object.subset(c.def_sel, c.inst_sel)
	msg := sprintf("%s: RBLNDriver/%s's nodeSelector %s is broader than the default %s's %s: the default wins every node both match; give the instance all of the default's labels plus one of its own, e.g. %s", [util.resource, c.inst, util.format_selector(c.inst_sel), c.def, util.format_selector(c.def_sel), util.format_selector(object.union(c.def_sel, {"env": "canary"}))])
}

warn contains msg if {
	some c in comparisons
	not object.subset(c.def_sel, c.inst_sel)
	not object.subset(c.inst_sel, c.def_sel)
	msg := sprintf("%s: RBLNDriver/%s's nodeSelector %s and the default %s's %s do not contain one another: they tie on nodes that carry both sets of labels; make the instance's selector include %s", [util.resource, c.inst, util.format_selector(c.inst_sel), c.def, util.format_selector(c.def_sel), util.format_selector(c.def_sel)])
}

# comparisons are the selectors to compare: the instance's and the default's, with their names.
# They hold the two selectors only, never whole objects (a set hashes what it holds).
comparisons contains {"inst": input.object.metadata.name, "inst_sel": object.get(input.object, ["spec", "nodeSelector"], {}), "def": "rbln-driver", "def_sel": object.get(d, ["spec", "nodeSelector"], {})} if {
	input.object.kind == "RBLNDriver"
	input.operation != "DELETE"
	object.get(input.object, ["metadata", "name"], "") != "rbln-driver"
	d := data.driverguard_cluster.drivers["rbln-driver"]
}

comparisons contains {"inst": name, "inst_sel": object.get(d, ["spec", "nodeSelector"], {}), "def": "rbln-driver", "def_sel": object.get(input.object, ["spec", "nodeSelector"], {})} if {
	input.object.kind == "RBLNDriver"
	input.operation != "DELETE"
	input.object.metadata.name == "rbln-driver"
	some name, d in data.driverguard_cluster.drivers
	name != "rbln-driver"
}

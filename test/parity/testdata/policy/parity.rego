# METADATA
# title: Parity probes
# description: |
#   Rules whose verdicts depend on the cluster view (data.driverguard_cluster) and on the
#   object's routing (input.routing): `check` and the served webhook agree on them only if
#   they see the same cluster at the same point of the release.
package driverguard.parity

import data.driverguard.lib.util

# Every RBLNDriver is told what it sees.
warn contains msg if {
	util.is_driver
	others := [name | some name, _ in util.drivers; name != util.name]
	msg := sprintf("%s: %d other driver(s) in the cluster; it would run on %d node(s) in %d pool(s)", [util.resource, count(others), util.routing.nodes, count(util.pools)])
}

# A driver may not run on more than 10 nodes.
deny contains msg if {
	util.is_driver
	util.routing.nodes > 10
	msg := sprintf("%s: would run on %d nodes, more than 10", [util.resource, util.routing.nodes])
}

# An instance may only be created while the default driver exists.
deny contains msg if {
	util.is_driver
	input.operation == "CREATE"
	util.name != util.default_driver
	not util.drivers[util.default_driver]
	count(data.driverguard_cluster.nodes) > 20
	msg := sprintf("%s: create the default driver first", [util.resource])
}

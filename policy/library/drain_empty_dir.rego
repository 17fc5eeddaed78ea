# METADATA
# title: Draining must not delete emptyDir data silently
# description: |
#   upgradePolicy.drain.deleteEmptyDirData: true evicts pods that use emptyDir volumes, and
#   their data is lost. Legal, but worth a warning every time.
package driverguard.lib.drain_empty_dir

import data.driverguard.lib.util

warn contains msg if {
	input.object.kind == "RBLNClusterPolicy"
	object.get(util.upgrade_policy, ["drain", "deleteEmptyDirData"], false) == true
	input.operation != "DELETE"
	msg := sprintf("%s: spec.driver.upgradePolicy.drain.deleteEmptyDirData is true: draining a node for a driver upgrade deletes the emptyDir data of its pods, and that data is lost; set it to false (values: driver.upgradePolicy.drain.deleteEmptyDirData) unless every such pod can lose it", [util.resource])
}

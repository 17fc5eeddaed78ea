# METADATA
# title: Reboot only drained nodes
# description: |
#   upgradePolicy.reboot.enable without drain.enable reboots nodes with their workloads still
#   on them; the reference documents tell users to enable the two together.
package driverguard.lib.reboot_requires_drain

import data.driverguard.lib.util

warn contains msg if {
	input.object.kind == "RBLNClusterPolicy"
	object.get(util.upgrade_policy, ["reboot", "enable"], false) == true
	object.get(util.upgrade_policy, ["drain", "enable"], false) != true
	input.operation != "DELETE"
	msg := sprintf("%s: spec.driver.upgradePolicy.reboot.enable is true but drain.enable is false: nodes would reboot with their workloads still running; set drain.enable: true (values: driver.upgradePolicy.drain.enable) or turn reboot off", [util.resource])
}

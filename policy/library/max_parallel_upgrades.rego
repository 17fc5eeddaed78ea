# METADATA
# title: Bounded upgrade parallelism
# description: |
#   upgradePolicy.maxParallelUpgrades: 0 means unlimited: with autoUpgrade every NPU node can be
#   cordoned, drained and upgraded at the same time.
package driverguard.lib.max_parallel_upgrades

import data.driverguard.lib.util

warn contains msg if {
	input.object.kind == "RBLNClusterPolicy"
	object.get(util.upgrade_policy, "maxParallelUpgrades", 1) == 0
	input.operation != "DELETE"
	msg := sprintf("%s: spec.driver.upgradePolicy.maxParallelUpgrades is 0 (unlimited): an automatic upgrade may take every NPU node out of service at once; set it to the number of nodes you can lose at a time, e.g. 1 (values: driver.upgradePolicy.maxParallelUpgrades)", [util.resource])
}

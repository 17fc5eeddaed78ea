package driverguard.lib.max_parallel_upgrades_test

import data.driverguard.lib.fixtures
import data.driverguard.lib.max_parallel_upgrades

policy(n) := fixtures.review(fixtures.cluster_policy({"autoUpgrade": true, "maxParallelUpgrades": n}))

test_warn_unlimited if {
	some msg in max_parallel_upgrades.warn with input as policy(0)
	contains(msg, "RBLNClusterPolicy/rbln-cluster-policy")
	contains(msg, "maxParallelUpgrades is 0 (unlimited)")
}

test_ok_sequential if {
	count(max_parallel_upgrades.warn) == 0 with input as policy(1)
}

test_ok_bounded if {
	count(max_parallel_upgrades.warn) == 0 with input as policy(4)
}

test_ok_unset if {
	obj := json.remove(fixtures.cluster_policy({}), ["spec/driver/upgradePolicy/maxParallelUpgrades"])
	count(max_parallel_upgrades.warn) == 0 with input as fixtures.review(obj)
}

package driverguard.lib.reboot_requires_drain_test

import data.driverguard.lib.fixtures
import data.driverguard.lib.reboot_requires_drain

policy(reboot, drain) := fixtures.review(fixtures.cluster_policy({"reboot": {"enable": reboot}, "drain": {"enable": drain}}))

test_warn_reboot_without_drain if {
	some msg in reboot_requires_drain.warn with input as policy(true, false)
	contains(msg, "RBLNClusterPolicy/rbln-cluster-policy")
	contains(msg, "set drain.enable: true")
}

test_warn_reboot_without_drain_block if {
	obj := json.remove(fixtures.cluster_policy({"reboot": {"enable": true}}), ["spec/driver/upgradePolicy/drain"])
	count(reboot_requires_drain.warn) == 1 with input as fixtures.review(obj)
}

test_ok_reboot_with_drain if {
	count(reboot_requires_drain.warn) == 0 with input as policy(true, true)
}

test_ok_no_reboot if {
	count(reboot_requires_drain.warn) == 0 with input as policy(false, false)
}

test_ok_drivers_ignored if {
	count(reboot_requires_drain.warn) == 0 with input as fixtures.review(fixtures.driver("rbln-driver", {}))
}

package driverguard.platform_test

import data.driverguard.lib.fixtures
import data.driverguard.platform

test_deny_prerelease_outside_canary if {
	driver := fixtures.driver("rbln-driver-rebel", {"version": "3.3.0-rc1", "nodeSelector": {"rebellions.ai/npu.family": "rebel"}})
	some msg in platform.deny with input as fixtures.review(driver)
	contains(msg, "RBLNDriver/rbln-driver-rebel: version \"3.3.0-rc1\" is a pre-release")
}

test_ok_prerelease_on_canary if {
	driver := fixtures.driver("rbln-driver-atom-canary", {"version": "3.3.0-rc1", "nodeSelector": {"env": "canary"}})
	count(platform.deny) == 0 with input as fixtures.review(driver)
}

test_warn_below_minimum if {
	driver := fixtures.driver("rbln-driver", {"version": "3.1.0"})
	some msg in platform.warn with input as fixtures.review(driver)
		with data.platform.minimum_version as "3.2.0"
	contains(msg, "older than the fleet minimum 3.2.0")
}

test_ok_minimum if {
	driver := fixtures.driver("rbln-driver", {"version": "3.2.0"})
	count(platform.warn) == 0 with input as fixtures.review(driver)
		with data.platform.minimum_version as "3.2.0"
}

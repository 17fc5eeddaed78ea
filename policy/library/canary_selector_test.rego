package driverguard.lib.canary_selector_test

import data.driverguard.lib.canary_selector
import data.driverguard.lib.fixtures

default_driver(sel) := fixtures.driver("rbln-driver", {"nodeSelector": sel})

canary(sel) := fixtures.driver("rbln-driver-atom-canary", {"nodeSelector": sel})

# check evaluates the instance against the default, and the default against the instance.
check_instance(inst_sel, def_sel) := fixtures.review_with(canary(inst_sel), {"drivers": [default_driver(def_sel)]})

check_default(inst_sel, def_sel) := fixtures.review_with(default_driver(def_sel), {"drivers": [canary(inst_sel)]})

test_deny_identical if {
	some msg in canary_selector.deny with input as check_instance({"env": "canary"}, {"env": "canary"})
	contains(msg, "RBLNDriver/rbln-driver-atom-canary")
	contains(msg, "is identical to the default rbln-driver's")
}

test_deny_identical_empty if {
	count(canary_selector.deny) == 1 with input as check_instance({}, {})
}

test_deny_broader if {
	some msg in canary_selector.deny with input as check_instance({"env": "canary"}, {"env": "canary", "zone": "a"})
	contains(msg, "is broader than the default rbln-driver's env=canary,zone=a")
	contains(msg, "e.g. env=canary,zone=a")
}

test_deny_when_the_default_changes if {
	some msg in canary_selector.deny with input as check_default({"zone": "a"}, {"zone": "a"})
	startswith(msg, "RBLNDriver/rbln-driver: RBLNDriver/rbln-driver-atom-canary's nodeSelector zone=a is identical")
}

test_warn_incomparable if {
	some msg in canary_selector.warn with input as check_instance({"rebellions.ai/npu.family": "atom"}, {"env": "prod"})
	contains(msg, "do not contain one another")
	count(canary_selector.deny) == 0 with input as check_instance({"rebellions.ai/npu.family": "atom"}, {"env": "prod"})
}

test_ok_strict_superset if {
	inp := check_instance({"rebellions.ai/npu.family": "atom", "env": "canary"}, {"rebellions.ai/npu.family": "atom"})
	count(canary_selector.deny) == 0 with input as inp
	count(canary_selector.warn) == 0 with input as inp
}

test_ok_empty_default if {
	inp := check_default({"rebellions.ai/npu.family": "atom"}, {})
	count(canary_selector.deny) == 0 with input as inp
	count(canary_selector.warn) == 0 with input as inp
}

test_ok_no_default_deployed if {
	inp := fixtures.review_with(canary({"env": "canary"}), {"drivers": [fixtures.driver("rbln-driver-rebel", {"nodeSelector": {"env": "canary"}})]})
	count(canary_selector.deny) == 0 with input as inp
}

package driverguard.lib.manager_version_test

import data.driverguard.lib.fixtures
import data.driverguard.lib.manager_version

manager(v) := fixtures.review(fixtures.driver("rbln-driver-rebel", {"manager": {"version": v}}))

test_deny_old_manager if {
	some msg in manager_version.deny with input as manager("v0.2.1")
	contains(msg, "RBLNDriver/rbln-driver-rebel")
	contains(msg, `spec.manager.version "v0.2.1" is older than v0.2.2`)
	contains(msg, "set spec.manager.version to v0.2.2 or later")
}

test_deny_old_manager_without_v if {
	count(manager_version.deny) == 1 with input as manager("0.1.9")
}

test_deny_uncomparable if {
	some msg in manager_version.deny with input as manager("v0.2")
	contains(msg, `"v0.2" is not a version driverguard can compare`)
}

test_warn_unset_manager if {
	obj := json.remove(fixtures.driver("rbln-driver", {}), ["spec/manager/version"])
	some msg in manager_version.warn with input as fixtures.review(obj)
	contains(msg, "spec.manager.version is not set")
	count(manager_version.deny) == 0 with input as fixtures.review(obj)
}

test_ok_minimum if {
	count(manager_version.deny) == 0 with input as manager("v0.2.2")
}

test_ok_newer if {
	count(manager_version.deny) == 0 with input as manager("v0.10.0")
}

test_ok_old_manager_without_smd if {
	obj := json.remove(fixtures.driver("rbln-driver", {"manager": {"version": "v0.1.0"}}), ["spec/smd"])
	count(manager_version.deny) == 0 with input as fixtures.review(obj)
}

test_ok_no_manager_block if {
	obj := json.remove(fixtures.driver("rbln-driver", {}), ["spec/manager"])
	count(manager_version.warn) == 0 with input as fixtures.review(obj)
	count(manager_version.deny) == 0 with input as fixtures.review(obj)
}

test_ok_empty_smd if {
	obj := fixtures.driver("rbln-driver", {"manager": {"version": "v0.1.0"}, "smd": {"registry": "", "image": ""}})
	count(manager_version.deny) == 0 with input as fixtures.review(obj)
}

test_ok_moving_tag_left_to_pinned_version if {
	count(manager_version.deny) == 0 with input as manager("latest")
}

# The rule writes the minimum out (a rule costs an evaluation of its own).
test_minimum_is_the_boundary if {
	count(manager_version.deny) == 0 with input as manager(sprintf("v%s", [manager_version.minimum]))
	parts := [to_number(p) | some p in split(manager_version.minimum, ".")]
	older := sprintf("v%d.%d.%d", [parts[0], parts[1], parts[2] - 1])
	count(manager_version.deny) == 1 with input as manager(older)
}

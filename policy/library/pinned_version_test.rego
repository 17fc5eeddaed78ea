package driverguard.lib.pinned_version_test

import data.driverguard.lib.fixtures
import data.driverguard.lib.pinned_version

version(v) := fixtures.review(fixtures.driver("rbln-driver-atom-canary", {"version": v}))

test_deny_latest if {
	some msg in pinned_version.deny with input as version("latest")
	contains(msg, "RBLNDriver/rbln-driver-atom-canary")
	contains(msg, `spec.version is "latest", a moving tag`)
	contains(msg, "pin an exact driver version")
}

test_deny_latest_any_case if {
	count(pinned_version.deny) == 1 with input as version("Latest")
}

test_deny_empty if {
	some msg in pinned_version.deny with input as version("")
	contains(msg, "spec.version is empty")
}

test_deny_missing_version if {
	obj := json.remove(fixtures.driver("rbln-driver", {}), ["spec/version"])
	some msg in pinned_version.deny with input as fixtures.review(obj)
	contains(msg, "RBLNDriver/rbln-driver: spec.version is empty")
}

test_deny_not_semver if {
	some msg in pinned_version.deny with input as version("3.2")
	contains(msg, `"3.2" is not a semver-like version`)
}

test_deny_manager_latest if {
	obj := fixtures.driver("rbln-driver", {"manager": {"version": "latest"}})
	some msg in pinned_version.deny with input as fixtures.review(obj)
	contains(msg, `spec.manager.version is "latest"`)
}

test_ok_release if {
	count(pinned_version.deny) == 0 with input as version("3.2.2")
}

test_ok_prerelease if {
	count(pinned_version.deny) == 0 with input as version("3.3.0-rc1")
}

test_ok_v_prefix if {
	count(pinned_version.deny) == 0 with input as version("v3.2.2")
}

test_ok_cluster_policy_ignored if {
	count(pinned_version.deny) == 0 with input as fixtures.review(fixtures.cluster_policy({}))
}

test_ok_delete_ignored if {
	count(pinned_version.deny) == 0 with input as object.union(version("latest"), {"operation": "DELETE"})
}

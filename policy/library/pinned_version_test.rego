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

# An empty or absent spec.version is the built-in syntax rule's (Required), not denied again.
test_empty_is_left_to_go if {
	count(pinned_version.deny) == 0 with input as version("")
	obj := json.remove(fixtures.driver("rbln-driver", {}), ["spec/version"])
	count(pinned_version.deny) == 0 with input as fixtures.review(obj)
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

# The rules write the semver_like pattern out (a rule costs an evaluation of its own): they
# must judge exactly as semver_like and moving_tags say.
test_every_moving_tag_is_denied if {
	every tag in pinned_version.moving_tags {
		count(pinned_version.deny) == 1 with input as version(upper(tag))
		count(pinned_version.deny) == 1 with input as fixtures.review(fixtures.driver("rbln-driver", {"manager": {"version": tag}}))
	}
}

test_rules_follow_semver_like if {
	every v in ["3.2.2", "v3.2.2", "3.3.0-rc1", "3.2.2.1", "3.2", "3.2.2-", "v", "3.2.2+build", "03.2.2"] {
		denied := count(pinned_version.deny) == 1 with input as version(v)
		denied != regex.match(pinned_version.semver_like, v)
	}
}

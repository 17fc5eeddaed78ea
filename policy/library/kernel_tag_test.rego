package driverguard.lib.kernel_tag_test

import data.driverguard.lib.fixtures
import data.driverguard.lib.kernel_tag

names := [sprintf("n%d", [i]) | some i in numbers.range(1, 7)]

driver(pools) := fixtures.review_routed(fixtures.driver("rbln-driver", {}), pools)

test_deny_plus_in_kernel if {
	denials := kernel_tag.deny with input as driver([fixtures.pool("5.15.0+custom", names)])
	count(denials) == 1
	some msg in denials
	contains(msg, `RBLNDriver/rbln-driver: driver image tag "3.2.2-5.15.0+custom-ubuntu22.04" for 7 node(s) (n1, n2, n3, n4, n5)`)
	contains(msg, `kernel "5.15.0+custom"`)
}

test_deny_one_message_per_tag if {
	pools := [fixtures.pool("5.15.0+custom", ["a"]), fixtures.pool("5.15.0+other", ["b"]), fixtures.pool("6.8.0-90-generic", ["c"])]
	count(kernel_tag.deny) == 2 with input as driver(pools)
}

test_deny_too_long if {
	long := concat("", ["6.8.0-", concat("", [x | some _ in numbers.range(1, 130); x := "a"])])
	count(kernel_tag.deny) == 1 with input as driver([fixtures.pool(long, names)])
}

test_ok_valid_kernel if {
	count(kernel_tag.deny) == 0 with input as driver([fixtures.pool("6.8.0-90-generic", names)])
}

test_ok_no_pools if {
	count(kernel_tag.deny) == 0 with input as driver([])
}

test_ok_no_routing if {
	count(kernel_tag.deny) == 0 with input as fixtures.review(fixtures.driver("rbln-driver", {}))
}

test_ok_cluster_policy if {
	count(kernel_tag.deny) == 0 with input as fixtures.review_routed(fixtures.cluster_policy({}), [fixtures.pool("5.15.0+custom", names)])
}

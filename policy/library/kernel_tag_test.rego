package driverguard.lib.kernel_tag_test

import data.driverguard.lib.fixtures
import data.driverguard.lib.kernel_tag

nodes(kernel, owner) := [fixtures.node(sprintf("n%d", [i]), fixtures.pool_labels(kernel), owner) | some i in numbers.range(1, 7)]

driver(nodes) := fixtures.review_with(fixtures.driver("rbln-driver", {}), {"nodes": nodes})

test_deny_plus_in_kernel if {
	denials := kernel_tag.deny with input as driver(nodes("5.15.0+custom", "rbln-driver"))
	count(denials) == 1
	some msg in denials
	contains(msg, `RBLNDriver/rbln-driver: driver image tag "3.2.2-5.15.0+custom-ubuntu22.04" for 7 node(s) (n1, n2, n3, n4, n5)`)
	contains(msg, `kernel "5.15.0+custom"`)
}

test_deny_too_long if {
	long := concat("", ["6.8.0-", concat("", [x | some _ in numbers.range(1, 130); x := "a"])])
	count(kernel_tag.deny) == 1 with input as driver(nodes(long, "rbln-driver"))
}

test_ok_valid_kernel if {
	count(kernel_tag.deny) == 0 with input as driver(nodes("6.8.0-90-generic", "rbln-driver"))
}

test_ok_nodes_of_other_drivers if {
	count(kernel_tag.deny) == 0 with input as driver(nodes("5.15.0+custom", "rbln-driver-rebel"))
}

test_ok_no_nodes if {
	count(kernel_tag.deny) == 0 with input as fixtures.review(fixtures.driver("rbln-driver", {}))
}

test_ok_node_without_family if {
	n := fixtures.node("n1", {"feature.node.kubernetes.io/kernel-version.full": "5.15.0+custom"}, "rbln-driver")
	count(kernel_tag.deny) == 0 with input as driver([n])
}

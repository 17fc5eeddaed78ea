package driverguard.lib.family_in_image_test

import data.driverguard.lib.family_in_image
import data.driverguard.lib.fixtures
import data.driverguard.lib.util

image(repo) := fixtures.review(fixtures.driver("rbln-driver-atom", {"image": repo}))

test_deny_known_family if {
	some msg in family_in_image.deny with input as image("rebellions/atom/rbln-driver")
	contains(msg, "RBLNDriver/rbln-driver-atom")
	contains(msg, `contains the NPU family "atom"`)
	contains(msg, `set spec.image to "rebellions/rbln-driver"`)
}

test_deny_family_first_segment if {
	some msg in family_in_image.deny with input as image("rebel/rbln-driver")
	contains(msg, `set spec.image to "rbln-driver"`)
}

test_deny_family_from_nodes if {
	obj := fixtures.driver("rbln-driver", {"image": "rebellions/quasar/rbln-driver"})
	nodes := [fixtures.node("n1", {"rebellions.ai/npu.family": "Quasar"}, "rbln-driver")]
	some msg in family_in_image.deny with input as fixtures.review(obj) with data.driverguard_cluster as fixtures.cluster([], nodes)
	contains(msg, `"quasar"`)
}

test_deny_configured_family if {
	obj := fixtures.driver("rbln-driver", {"image": "rebellions/quasar/rbln-driver"})
	count(family_in_image.deny) == 1 with input as fixtures.review(obj)
		with data.driverguard_config.known_families as ["quasar"]
}

test_ok_plain_image if {
	count(family_in_image.deny) == 0 with input as image("rebellions/rbln-driver")
}

test_ok_family_only_in_last_segment if {
	count(family_in_image.deny) == 0 with input as image("rebellions/atom")
}

test_ok_family_inside_a_segment if {
	count(family_in_image.deny) == 0 with input as image("rebellions-atom/rbln-driver")
}

test_ok_configured_families_replace_defaults if {
	count(family_in_image.deny) == 0 with input as image("rebellions/atom/rbln-driver")
		with data.driverguard_config.known_families as ["quasar"]
}

# is_family writes util.known_families' default out (a rule costs an evaluation of its own).
test_default_families_are_util_known_families if {
	every f in util.known_families {
		count(family_in_image.deny) == 1 with input as image(sprintf("rebellions/%s/rbln-driver", [f]))
	}
	count({f | some f in ["atom", "rebel", "ca", "cr", "npu", "quasar"]; family_in_image.is_family(f)}) == count(util.known_families)
}

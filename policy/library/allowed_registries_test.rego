package driverguard.lib.allowed_registries_test

import data.driverguard.lib.allowed_registries
import data.driverguard.lib.fixtures

driver := fixtures.review(fixtures.driver("rbln-driver", {}))

test_deny_manager_registry if {
	denials := allowed_registries.deny with input as driver
		with data.driverguard_config.allowed_registries as ["repo.rebellions.ai"]
	count(denials) == 1
	some msg in denials
	contains(msg, `RBLNDriver/rbln-driver: spec.manager.registry "docker.io" is not an allowed registry (allowed: repo.rebellions.ai)`)
}

test_deny_reboot_image_registry if {
	some msg in allowed_registries.deny with input as fixtures.review(fixtures.cluster_policy({}))
		with data.driverguard_config.allowed_registries as ["*.corp.example"]
	contains(msg, `spec.driver.upgradePolicy.reboot.image.registry "docker.io"`)
}

test_deny_every_registry if {
	count(allowed_registries.deny) == 3 with input as driver
		with data.driverguard_config.allowed_registries as ["registry.corp.example"]
}

test_ok_off_by_default if {
	count(allowed_registries.deny) == 0 with input as driver
}

test_ok_all_allowed if {
	count(allowed_registries.deny) == 0 with input as driver
		with data.driverguard_config.allowed_registries as ["repo.rebellions.ai", "docker.io"]
}

test_ok_glob if {
	inp := fixtures.review(fixtures.driver("rbln-driver", {
		"registry": "mirror.corp.example",
		"manager": {"registry": "mirror.corp.example"},
		"smd": {"registry": "npu.corp.example:5000"},
	}))
	count(allowed_registries.deny) == 0 with input as inp
		with data.driverguard_config.allowed_registries as ["*.corp.example", "*.corp.example:*"]
}

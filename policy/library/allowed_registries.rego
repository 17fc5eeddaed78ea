# METADATA
# title: Images come from allowed registries
# description: |
#   Off by default. With data.driverguard_config.allowed_registries set (host names or glob
#   patterns such as *.corp.example), every registry an RBLNDriver or the RBLNClusterPolicy
#   pulls from must be in the list: spec.registry, spec.manager.registry, spec.smd.registry and
#   spec.driver.upgradePolicy.reboot.image.registry.
package driverguard.lib.allowed_registries

import data.driverguard.lib.util

registries contains ["spec.registry", "image.registry", r] if {
	input.object.kind == "RBLNDriver"
	input.operation != "DELETE"
	r := object.get(util.spec, "registry", "")
}

registries contains ["spec.manager.registry", "manager.image.registry", r] if {
	input.object.kind == "RBLNDriver"
	input.operation != "DELETE"
	r := object.get(util.spec, ["manager", "registry"], "")
}

registries contains ["spec.smd.registry", "smd.image.registry", r] if {
	input.object.kind == "RBLNDriver"
	input.operation != "DELETE"
	r := object.get(util.spec, ["smd", "registry"], "")
}

registries contains ["spec.driver.upgradePolicy.reboot.image.registry", "upgradePolicy.reboot.image.registry", r] if {
	input.object.kind == "RBLNClusterPolicy"
	input.operation != "DELETE"
	r := object.get(util.upgrade_policy, ["reboot", "image", "registry"], "")
}

allowed(registry) if {
	some pattern in util.allowed_registries
	glob.match(lower(pattern), [], lower(registry))
}

deny contains msg if {
	count(data.driverguard_config.allowed_registries) > 0 # util.allowed_registries, undefined when unset
	some [field, values_path, registry] in registries
	registry != ""
	not allowed(registry)
	msg := sprintf("%s: %s %q is not an allowed registry (allowed: %s); pull from one of them, e.g. through a mirror (%s)", [util.resource, field, registry, concat(", ", util.allowed_registries), values_hint(values_path)])
}

# The RBLNClusterPolicy renders from driver.upgradePolicy, which instances do not override.
values_hint(path) := util.values(path) if util.is_driver

values_hint(path) := sprintf("values: driver.%s", [path]) if util.is_cluster_policy

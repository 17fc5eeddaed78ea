# METADATA
# title: Driver manager v0.2.2 or later when smd is configured
# description: |
#   Driver Manager v0.2.2 is the first that updates the rebellions.ai/npu.deploy.rbln-smd node
#   label controlling the RSMD DaemonSet. An RBLNDriver that configures spec.smd with an older
#   manager leaves RSMD stuck during upgrades.
package driverguard.lib.manager_version

import data.driverguard.lib.util

minimum := "0.2.2"

smd_configured if {
	smd := object.get(util.spec, "smd", {})
	object.get(smd, "registry", "") != ""
}

smd_configured if {
	smd := object.get(util.spec, "smd", {})
	object.get(smd, "image", "") != ""
}

manager_version := object.get(util.spec, ["manager", "version"], "")

# moving tags are the pinned_version rule's concern.
moving if lower(manager_version) in data.driverguard.lib.pinned_version.moving_tags

comparable if semver.is_valid(trim_prefix(manager_version, "v"))

deny contains msg if {
	util.is_driver
	smd_configured
	comparable
	semver.compare(trim_prefix(manager_version, "v"), minimum) < 0
	msg := sprintf("%s: spec.manager.version %q is older than v%s, the first driver manager that drives the RSMD DaemonSet configured in spec.smd; set spec.manager.version to v%s or later (%s)", [util.resource, manager_version, minimum, minimum, util.values("manager.image.tag")])
}

deny contains msg if {
	util.is_driver
	smd_configured
	manager_version != ""
	not moving
	not comparable
	msg := sprintf("%s: spec.manager.version %q is not a version driverguard can compare with v%s (vX.Y.Z), and spec.smd needs driver manager v%s or later; pin a release such as v%s (%s)", [util.resource, manager_version, minimum, minimum, minimum, util.values("manager.image.tag")])
}

# A manager block without a version runs a custom manager image under the operator's default
# tag: say so. (Without any manager block the operator runs its own default manager, which
# driverguard cannot judge; that stays quiet.)
warn contains msg if {
	util.is_driver
	smd_configured
	util.spec.manager
	manager_version == ""
	msg := sprintf("%s: spec.smd is configured but spec.manager.version is not set, so the operator's default tag is used for spec.manager's image; the driver manager must be v%s or later to drive RSMD: pin spec.manager.version (%s)", [util.resource, minimum, util.values("manager.image.tag")])
}

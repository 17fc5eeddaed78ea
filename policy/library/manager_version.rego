# METADATA
# title: Driver manager v0.2.2 or later when smd is configured
# description: |
#   Driver Manager v0.2.2 is the first that updates the rebellions.ai/npu.deploy.rbln-smd node
#   label controlling the RSMD DaemonSet. An RBLNDriver that configures spec.smd with an older
#   manager leaves RSMD stuck during upgrades.
package driverguard.lib.manager_version

import data.driverguard.lib.util

minimum := "0.2.2"

# Each rule holds its whole condition, cheapest and most selective first, and reads input
# directly: helper rules cost an evaluation each on every request (see util.is_driver).

deny contains msg if {
	input.object.kind == "RBLNDriver"
	version := input.object.spec.manager.version
	bare := trim_prefix(version, "v")
	semver.is_valid(bare)
	semver.compare(bare, "0.2.2") < 0 # minimum, written out: a rule costs an evaluation of its own
	smd_configured(input.object.spec)
	input.operation != "DELETE"
	msg := sprintf("%s: spec.manager.version %q is older than v%s, the first driver manager that drives the RSMD DaemonSet configured in spec.smd; set spec.manager.version to v%s or later (%s)", [util.resource, version, minimum, minimum, util.values("manager.image.tag")])
}

deny contains msg if {
	input.object.kind == "RBLNDriver"
	version := input.object.spec.manager.version
	not semver.is_valid(trim_prefix(version, "v")) # a comparable version ends the rule here
	version != ""
	not lower(version) in data.driverguard.lib.pinned_version.moving_tags # the pinned_version rule's concern
	smd_configured(input.object.spec)
	input.operation != "DELETE"
	msg := sprintf("%s: spec.manager.version %q is not a version driverguard can compare with v%s (vX.Y.Z), and spec.smd needs driver manager v%s or later; pin a release such as v%s (%s)", [util.resource, version, minimum, minimum, minimum, util.values("manager.image.tag")])
}

# A manager block without a version runs a custom manager image under the operator's default
# tag: say so. (Without any manager block the operator runs its own default manager, which
# driverguard cannot judge; that stays quiet.)
warn contains msg if {
	input.object.kind == "RBLNDriver"
	manager := input.object.spec.manager
	object.get(manager, "version", "") == ""
	smd_configured(input.object.spec)
	input.operation != "DELETE"
	msg := sprintf("%s: spec.smd is configured but spec.manager.version is not set, so the operator's default tag is used for spec.manager's image; the driver manager must be v%s or later to drive RSMD: pin spec.manager.version (%s)", [util.resource, minimum, util.values("manager.image.tag")])
}

# smd_configured: spec.smd names a registry or an image (the only drivers this policy judges).
smd_configured(spec) if object.get(spec, ["smd", "registry"], "") != ""

smd_configured(spec) if object.get(spec, ["smd", "image"], "") != ""

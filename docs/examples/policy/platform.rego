# METADATA
# title: Pre-release drivers only on canary nodes; a fleet minimum version
# description: |
#   An example of a team policy (docs/policy-authoring.md walks through it). Pre-release
#   driver versions (3.3.0-rc1) may only run on nodes selected with env=canary, and drivers
#   older than data.platform.minimum_version get a warning.
package driverguard.platform

import data.driverguard.lib.util

deny contains msg if {
	util.is_driver
	version := object.get(util.spec, "version", "")
	contains(version, "-")
	object.get(util.selector(input.object), "env", "") != "canary"
	msg := sprintf("%s: version %q is a pre-release, and pre-releases run only on canary nodes: add env=canary to spec.nodeSelector or use a released version", [util.resource, version])
}

warn contains msg if {
	util.is_driver
	minimum := data.platform.minimum_version
	version := trim_prefix(object.get(util.spec, "version", ""), "v")
	semver.is_valid(version)
	semver.compare(version, minimum) < 0
	msg := sprintf("%s: version %q is older than the fleet minimum %s; plan its upgrade", [util.resource, version, minimum])
}

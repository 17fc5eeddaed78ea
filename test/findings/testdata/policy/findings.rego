# METADATA
# title: Findings probes
# description: |
#   A deny and a warn rule whose findings depend on the object alone (never on the cluster
#   view nor the operation): every front end must report them the same, the audit included.
package driverguard.findingstest

import data.driverguard.lib.util

# A pre-release driver version is denied.
deny contains msg if {
	util.is_driver
	contains(object.get(util.spec, "version", ""), "-")
	msg := sprintf("%s: version %q is a pre-release", [util.resource, util.spec.version])
}

# A driver without a memory limit is warned.
warn contains msg if {
	util.is_driver
	not util.spec.resources.limits.memory
	msg := "no memory limit: set resources.limits.memory"
}

# A cluster policy that never upgrades drivers by itself is warned.
warn contains msg if {
	util.is_cluster_policy
	not util.upgrade_policy.autoUpgrade
	msg := sprintf("%s: autoUpgrade is off: drivers change only when their pods are restarted", [util.resource])
}

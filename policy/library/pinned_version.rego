# METADATA
# title: Driver versions are pinned
# description: |
#   spec.version (values: image.tag) must be an exact, semver-like release, not a moving tag
#   such as latest. A moving tag makes two nodes run different drivers under one RBLNDriver
#   and makes every rollout unreviewable. spec.manager.version must not be a moving tag
#   either. An empty spec.version is the built-in rule's (it is required).
package driverguard.lib.pinned_version

import data.driverguard.lib.util

moving_tags := {"latest", "stable", "main", "master", "edge", "nightly", "dev"}

# X.Y.Z with an optional leading v and an optional pre-release or build suffix (3.3.0-rc1).
semver_like := `^v?[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z][0-9A-Za-z.-]*)?$`

# The rules test the version with the semver_like pattern written out: a rule such as
# semver_like or moving_tags is evaluated on every request that reads it, at a cost of its own,
# and these rules run on every RBLNDriver request; the pattern ends them for a pinned version.
deny contains msg if {
	input.object.kind == "RBLNDriver"
	v := object.get(input.object, ["spec", "version"], "")
	not regex.match(`^v?[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z][0-9A-Za-z.-]*)?$`, v) # semver_like: a pinned version ends the rule here
	problem := version_problem(v)
	input.operation != "DELETE"
	msg := sprintf("%s: spec.version %s; pin an exact driver version, e.g. \"3.2.2\" (%s)", [util.resource, problem, util.values("image.tag")])
}

deny contains msg if {
	input.object.kind == "RBLNDriver"
	v := input.object.spec.manager.version
	not regex.match(`^v?[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z][0-9A-Za-z.-]*)?$`, v) # semver_like: a pinned version ends the rule here
	lower(v) in moving_tags
	input.operation != "DELETE"
	msg := sprintf("%s: spec.manager.version is %q, a moving tag; pin the driver manager, e.g. \"v0.2.2\" (%s)", [util.resource, v, util.values("manager.image.tag")])
}

# An empty (or absent) spec.version has no problem here: it is the built-in syntax rule's
# (api/validation: spec.version Required), denied once, by Go.
version_problem(v) := sprintf("is %q, a moving tag", [v]) if lower(v) in moving_tags

version_problem(v) := sprintf("%q is not a semver-like version (X.Y.Z, optionally with a suffix such as -rc1)", [v]) if {
	v != ""
	not lower(v) in moving_tags
	not regex.match(semver_like, v)
}

package driverguard.lib.canary_selector_test

import data.driverguard.lib.canary_selector
import data.driverguard.lib.fixtures

default_driver(sel) := fixtures.driver("rbln-driver", {"nodeSelector": sel})

canary(sel) := fixtures.driver("rbln-driver-atom-canary", {"nodeSelector": sel})

# The instance is evaluated against the default in the cluster, and the default against the
# instance: the input and the cluster view of each.
instance_in(inst_sel, def_sel) := [fixtures.review(canary(inst_sel)), fixtures.cluster([default_driver(def_sel)], [])]

default_in(inst_sel, def_sel) := [fixtures.review(default_driver(def_sel)), fixtures.cluster([canary(inst_sel), default_driver({"old": "selector"})], [])]

deny(case) := d if {
	d := canary_selector.deny with input as case[0] with data.driverguard_cluster as case[1]
}

test_deny_broader if {
	some msg in deny(instance_in({"env": "canary"}, {"env": "canary", "zone": "a"}))
	contains(msg, "is broader than the default rbln-driver's env=canary,zone=a")
	contains(msg, "e.g. env=canary,zone=a")
}

test_deny_when_the_default_changes if {
	some msg in deny(default_in({"zone": "a"}, {"zone": "a", "pool": "p"}))
	startswith(msg, "RBLNDriver/rbln-driver: RBLNDriver/rbln-driver-atom-canary's nodeSelector zone=a is broader")
}

# An identical selector is the built-in IdenticalNodeSelector's (denied by Go, from either
# side; policies read it from input.routing.potentialTies): the library does not deny it again.
test_identical_is_left_to_go if {
	count(deny(instance_in({"env": "canary"}, {"env": "canary"}))) == 0
	count(deny(instance_in({}, {}))) == 0
	count(deny(default_in({"zone": "a"}, {"zone": "a"}))) == 0
}

# Selectors neither of which contains the other are the built-in PotentialConflict's: the library
# has no warn rule and does not deny them (it warned, wrongly, on disjoint selectors such as env=prod and
# env=canary, and twice with Go on a real potential tie).
test_incomparable_is_left_to_go if {
	inp := instance_in({"rebellions.ai/npu.family": "atom"}, {"env": "prod"})
	count(deny(inp)) == 0
	disjoint := instance_in({"env": "canary", "rebellions.ai/npu.family": "atom"}, {"env": "prod"})
	count(deny(disjoint)) == 0
}

test_ok_strict_superset if {
	inp := instance_in({"rebellions.ai/npu.family": "atom", "env": "canary"}, {"rebellions.ai/npu.family": "atom"})
	count(deny(inp)) == 0
}

test_ok_empty_default if {
	inp := default_in({"rebellions.ai/npu.family": "atom"}, {})
	count(deny(inp)) == 0
}

test_ok_no_default_deployed if {
	inp := [fixtures.review(canary({"env": "canary"})), fixtures.cluster([fixtures.driver("rbln-driver-rebel", {"nodeSelector": {"env": "canary"}})], [])]
	count(deny(inp)) == 0
}

package driverguard.lib.drain_empty_dir_test

import data.driverguard.lib.drain_empty_dir
import data.driverguard.lib.fixtures

policy(delete) := fixtures.review(fixtures.cluster_policy({"drain": {"enable": true, "deleteEmptyDirData": delete}}))

test_warn_delete_empty_dir_data if {
	some msg in drain_empty_dir.warn with input as policy(true)
	contains(msg, "RBLNClusterPolicy/rbln-cluster-policy")
	contains(msg, "data is lost")
}

test_ok_keep_empty_dir_data if {
	count(drain_empty_dir.warn) == 0 with input as policy(false)
}

test_ok_no_upgrade_policy if {
	obj := json.remove(fixtures.cluster_policy({}), ["spec/driver"])
	count(drain_empty_dir.warn) == 0 with input as fixtures.review(obj)
}

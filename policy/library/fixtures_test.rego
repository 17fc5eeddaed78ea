# Test fixtures shared by the library's tests (loaded only by `driverguard policy test` and
# `go test`, never by the engine). User tests may import them too.
package driverguard.lib.fixtures

base_spec := {
	"registry": "repo.rebellions.ai",
	"image": "rebellions/rbln-driver",
	"version": "3.2.2",
	"imagePullPolicy": "IfNotPresent",
	"manager": {
		"registry": "docker.io",
		"image": "rebellions/rbln-k8s-driver-manager",
		"version": "v0.2.2",
		"imagePullPolicy": "IfNotPresent",
	},
	"smd": {"registry": "repo.rebellions.ai", "image": "rebellions/rbln-smd"},
}

# driver is an RBLNDriver named name whose spec is the chart default patched with spec.
driver(name, spec) := {
	"apiVersion": "rebellions.ai/v1alpha1",
	"kind": "RBLNDriver",
	"metadata": {"name": name},
	"spec": object.union(base_spec, spec),
}

base_upgrade_policy := {
	"autoUpgrade": false,
	"maxParallelUpgrades": 1,
	"waitForCompletion": {"timeoutSeconds": 0, "podSelector": ""},
	"npuPodDeletion": {"force": false, "timeoutSeconds": 300},
	"drain": {"enable": false, "force": false, "deleteEmptyDirData": false, "podSelector": "", "timeoutSeconds": 300},
	"reboot": {
		"enable": false,
		"rebootTimeoutSeconds": 0,
		"image": {"registry": "docker.io", "image": "rebellions/rbln-node-reboot", "version": "v1.0.1"},
	},
}

# cluster_policy is the RBLNClusterPolicy with the chart's default upgradePolicy patched with up.
cluster_policy(up) := {
	"apiVersion": "rebellions.ai/v1alpha1",
	"kind": "RBLNClusterPolicy",
	"metadata": {"name": "rbln-cluster-policy"},
	"spec": {"driver": {"upgradePolicy": object.union(base_upgrade_policy, up)}},
}

# review is the input document for obj at render time, created, with no routing verdict.
review(obj) := {"object": obj, "operation": "CREATE", "source": "render"}

# review_routed is review(obj) with input.routing: the driver would run the given pools.
review_routed(obj, pools) := object.union(review(obj), {"routing": {
	"selected": count([n | some p in pools; some n in p.nodes]),
	"nodes": count([n | some p in pools; some n in p.nodes]),
	"pools": pools,
	"unpooled": [],
	"ties": [],
	"potentialTies": [],
}})

# cluster is a cluster view (data.driverguard_cluster) of the given drivers and nodes:
# use it as `with data.driverguard_cluster as fixtures.cluster(drivers, nodes)`.
cluster(drivers, nodes) := {
	"drivers": {d.metadata.name: d | some d in drivers},
	"nodes": {n.name: n | some n in nodes},
	"families": {f: count([n | some n in nodes; n.labels["rebellions.ai/npu.family"] == f]) |
		some n in nodes
		f := n.labels["rebellions.ai/npu.family"]
	},
}

# node is a candidate node as data.driverguard_cluster.nodes holds it.
node(name, labels, owner) := {
	"name": name,
	"labels": object.union({"rebellions.ai/npu.deploy.driver": "true"}, labels),
	"owner": owner,
	"pool": "",
}

# pool is a pool of ATOM nodes on Ubuntu 22.04 with the given kernel, as input.routing.pools
# lists it for a driver of version 3.2.2.
pool(kernel, nodes) := {
	"name": sprintf("atom-ubuntu22.04-%s", [kernel]),
	"daemonSet": sprintf("rbln-driver-atom-ubuntu22.04-%s", [kernel]),
	"family": "atom",
	"os": "ubuntu",
	"osVersion": "22.04",
	"kernel": kernel,
	"tag": sprintf("3.2.2-%s-ubuntu22.04", [kernel]),
	"image": "",
	"reason": "",
	"nodes": nodes,
}

# pool_labels are the labels of an ATOM node on Ubuntu 22.04 with the given kernel.
pool_labels(kernel) := {
	"rebellions.ai/npu.family": "atom",
	"feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
	"feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
	"feature.node.kubernetes.io/kernel-version.full": kernel,
}

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

# review is the input document for obj at render time, with no other drivers and no nodes.
review(obj) := {"object": obj, "operation": "CREATE", "source": "render", "cluster": {"drivers": []}}

# review_with is review(obj) with cluster context (drivers, nodes, clusterPolicy) patched in.
review_with(obj, cluster) := object.union(review(obj), {"cluster": cluster})

# node is a candidate node as input.cluster.nodes lists it.
node(name, labels, owner) := {
	"name": name,
	"labels": object.union({"rebellions.ai/npu.deploy.driver": "true"}, labels),
	"owner": owner,
	"pool": "",
}

# pool_labels are the labels of an ATOM node on Ubuntu 22.04 with the given kernel.
pool_labels(kernel) := {
	"rebellions.ai/npu.family": "atom",
	"feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
	"feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
	"feature.node.kubernetes.io/kernel-version.full": kernel,
}

package v1alpha1

// Node and workload labels that driverguard reads or writes. Each is defined once here and
// used by the renderer, the routing engine, the webhook and the CLI alike.
const (
	// LabelOwner holds the name of the RBLNDriver that owns a node.
	LabelOwner = "rebellions.ai/npu.driver.owner"
	// LabelDeployDriver marks a node as a candidate for a driver ("true").
	LabelDeployDriver = "rebellions.ai/npu.deploy.driver"
	// LabelFamily is the NPU product family of a node (e.g. "atom").
	LabelFamily = "rebellions.ai/npu.family"
	// LabelOSID is the OS identifier published by Node Feature Discovery (e.g. "ubuntu").
	LabelOSID = "feature.node.kubernetes.io/system-os_release.ID"
	// LabelOSVersion is the OS version published by Node Feature Discovery (e.g. "22.04").
	LabelOSVersion = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
	// LabelKernel is the full kernel version published by Node Feature Discovery.
	LabelKernel = "feature.node.kubernetes.io/kernel-version.full"

	// LabelDriverInstance names the RBLNDriver a driver DaemonSet belongs to.
	LabelDriverInstance = "rebellions.ai/npu.driver.instance"
	// LabelDriverComponent is "driver" or "smd" on a driver DaemonSet.
	LabelDriverComponent = "rebellions.ai/npu.driver.component"

	// LabelRelease marks the RBLNDrivers and the RBLNClusterPolicy a Helm release of the chart
	// renders (value: the release name): which release an object came from. It exempts nothing:
	// the webhook judges a labelled object as any other.
	LabelRelease = "driverguard.rebellions.ai/release"
)

// ReservedSelectorKeys are label keys that no RBLNDriver nodeSelector may set: the routing
// engine writes them itself.
var ReservedSelectorKeys = []string{LabelOwner, LabelDeployDriver}

// IsReservedSelectorKey reports whether key is one of ReservedSelectorKeys.
func IsReservedSelectorKey(key string) bool {
	for _, k := range ReservedSelectorKeys {
		if k == key {
			return true
		}
	}
	return false
}

const (
	// DefaultDriverName is the name of the default (fallback) RBLNDriver; it alone may have an
	// empty nodeSelector.
	DefaultDriverName = "rbln-driver"
	// InstanceNamePrefix prefixes every instance key to form its RBLNDriver name.
	InstanceNamePrefix = DefaultDriverName + "-"
	// ClusterPolicyName is the name of the singleton RBLNClusterPolicy.
	ClusterPolicyName = "rbln-cluster-policy"
)

// WithTypeMeta returns d itself when it carries its apiVersion and kind, or a shallow copy
// with them set: objects from typed clients and caches often carry none, and documents
// policies read always do.
func (d *RBLNDriver) WithTypeMeta() *RBLNDriver {
	if d.Kind != "" && d.APIVersion != "" {
		return d
	}
	c := *d
	c.APIVersion, c.Kind = GroupVersion.String(), "RBLNDriver"
	return &c
}

// WithTypeMeta is RBLNDriver.WithTypeMeta for the cluster policy.
func (cp *RBLNClusterPolicy) WithTypeMeta() *RBLNClusterPolicy {
	if cp.Kind != "" && cp.APIVersion != "" {
		return cp
	}
	c := *cp
	c.APIVersion, c.Kind = GroupVersion.String(), "RBLNClusterPolicy"
	return &c
}

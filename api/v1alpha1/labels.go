package v1alpha1

// Labels driverguard itself writes. The operator's labels (owner, deploy gate, family, NFD,
// its DaemonSets') are package operator's.
const (
	// LabelRelease marks the RBLNDrivers and the RBLNClusterPolicy a Helm release of the chart
	// renders (value: the release name): which release an object came from. It exempts nothing:
	// the webhook judges a labelled object as any other.
	LabelRelease = "driverguard.rebellions.ai/release"
	// LabelInstance is the driver.instances key of an RBLNDriver, on the ClusterReport the
	// audit writes for it (read from the same label on the RBLNDriver when it carries one).
	LabelInstance = "driverguard.rebellions.ai/instance"
)

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

package operator

// Node labels the operator reads or writes.
const (
	// LabelOwner holds the name of the RBLNDriver that owns a node; the operator's owner
	// resolver writes it (and removes it from nodes that leave the scope).
	LabelOwner = "rebellions.ai/npu.driver.owner"
	// LabelDeployDriver is the scope: only nodes where it is DeployDriverTrue are routed.
	LabelDeployDriver = "rebellions.ai/npu.deploy.driver"
	// DeployDriverTrue is the value of LabelDeployDriver (and of the other gates) that counts.
	DeployDriverTrue = "true"
	// LabelFamily is the NPU product family (e.g. "atom"), set by the operator's
	// NodeFeatureRule from the NPU's PCI device.
	LabelFamily = "rebellions.ai/npu.family"
	// LabelOSID, LabelOSVersion and LabelKernel are published by Node Feature Discovery.
	LabelOSID      = "feature.node.kubernetes.io/system-os_release.ID"
	LabelOSVersion = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
	LabelKernel    = "feature.node.kubernetes.io/kernel-version.full"
	// LabelRDSPresent marks a node with RDS; with the cluster policy's spec.rds.enabled such
	// nodes get their own -rds pools.
	LabelRDSPresent = "rebellions.ai/rds.present"
	// LabelDeploySMD gates the RSMD pods on a node (the driver manager sets it once the driver
	// runs there).
	LabelDeploySMD = "rebellions.ai/npu.deploy.rbln-smd"
	// LabelUpgradeSkip ("true") holds a node back from driver rollouts: it keeps its current
	// driver.
	LabelUpgradeSkip = "rebellions.ai/npu-driver-upgrade.skip"
)

// NodeLabels are every node label the operator reads (and the owner label it writes): what
// a model of its routing, pools, RSMD gate and upgrades needs of a node besides its name.
var NodeLabels = []string{LabelOwner, LabelDeployDriver, LabelFamily, LabelOSID, LabelOSVersion, LabelKernel,
	LabelRDSPresent, LabelDeploySMD, LabelUpgradeSkip}

// NFDLabels are the Node Feature Discovery labels a node needs to join a pool, in the order
// the operator reads them.
var NFDLabels = []string{LabelOSID, LabelOSVersion, LabelKernel}

// ReservedSelectorKeys are the label keys no RBLNDriver nodeSelector may hold, in the order the
// operator checks them: the owner label is the operator's routing state and the deploy label
// its scope.
var ReservedSelectorKeys = []string{LabelOwner, LabelDeployDriver}

// IsReservedSelectorKey reports whether key is one of ReservedSelectorKeys.
func IsReservedSelectorKey(key string) bool {
	return key == LabelOwner || key == LabelDeployDriver
}

// Labels, annotations and names of the DaemonSets the operator creates.
const (
	// LabelAppName is AppName on every DaemonSet the operator creates.
	LabelAppName = "app.kubernetes.io/name"
	AppName      = "rbln-npu-operator"
	// LabelComponent is ComponentDriver on driver DaemonSets and ComponentSMD on RSMD ones.
	LabelComponent  = "app.kubernetes.io/component"
	ComponentDriver = "rbln-driver"
	ComponentSMD    = "rbln-smd"
	// LabelPool names a driver DaemonSet's pool.
	LabelPool = "rebellions.ai/driver-node-pool"
	// LabelInstance names the RBLNDriver a DaemonSet belongs to.
	LabelInstance = "rebellions.ai/driver-instance"
	// AnnotationLastAppliedHash is the hash of the driver containers the operator last applied.
	AnnotationLastAppliedHash = "rebellions.ai/last-applied-hash"

	// ContainerDriver runs the driver image; InitContainerManager the driver manager.
	ContainerDriver      = "rbln-driver-container"
	InitContainerManager = "k8s-driver-manager"
	// ContainerSMD runs the RSMD image; InitContainerValidation waits for the driver.
	ContainerSMD            = "rbln-smd"
	InitContainerValidation = "driver-validation"

	// SMDSuffix ends an RSMD DaemonSet's name (<CR>-smd); RDSPoolSuffix an RDS pool's name.
	SMDSuffix     = "-smd"
	RDSPoolSuffix = "-rds"
)

// Condition reasons the operator sets on an RBLNDriver.
const (
	ReasonInvalidSpec              = "InvalidSpec"
	ReasonDriverFamilyLabelMissing = "DriverFamilyLabelMissing"
	ReasonDriverImageNotFound      = "DriverImageNotFound"
	ReasonConflictingNodeSelector  = "ConflictingNodeSelector"
	ReasonMissingClusterPolicy     = "MissingClusterPolicy"
)

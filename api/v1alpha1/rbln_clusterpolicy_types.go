package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RBLNClusterPolicySpec is the cluster-wide configuration shared by every RBLNDriver.
type RBLNClusterPolicySpec struct {
	// +optional
	Driver ClusterDriverSpec `json:"driver,omitempty"`
	// RDS is rbln-npu-operator's RDS binding: with it enabled, nodes labelled
	// rebellions.ai/rds.present=true run a driver pool of their own (<pool>-rds).
	// +optional
	RDS *RDSSpec `json:"rds,omitempty"`
}

// RDSSpec is the RDS binding of rbln-npu-operator's RBLNClusterPolicy.
type RDSSpec struct {
	// Enabled splits every driver pool: nodes labelled rebellions.ai/rds.present=true form
	// their own <pool>-rds pool, and the other pools keep off them.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled"`
	// DeviceSelection names, per node, the PCI devices the RDS binding takes.
	// +listType=map
	// +listMapKey=nodeName
	// +optional
	DeviceSelection []RDSDeviceSelection `json:"deviceSelection,omitempty"`
}

// RDSDeviceSelection is the PCI devices of one node the RDS binding takes.
type RDSDeviceSelection struct {
	// NodeName is the node's name.
	// +kubebuilder:validation:MinLength=1
	NodeName string `json:"nodeName"`
	// TargetBDFs are the devices' PCI addresses (domain:bus:device.function).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:Pattern=`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`
	TargetBDFs []string `json:"targetBDFs"`
}

// ClusterDriverSpec holds the cluster-wide driver settings.
type ClusterDriverSpec struct {
	// UpgradePolicy applies to every RBLNDriver alike.
	// +optional
	UpgradePolicy UpgradePolicy `json:"upgradePolicy,omitempty"`
}

// UpgradePolicy controls how driver upgrades roll out; see the "Upgrade Policy Reference".
type UpgradePolicy struct {
	// AutoUpgrade lets the operator orchestrate the rollout; false means OnDelete DaemonSets
	// and manual upgrades.
	// +kubebuilder:default=false
	// +optional
	AutoUpgrade bool `json:"autoUpgrade"`
	// MaxParallelUpgrades is how many nodes upgrade at once: 1 sequential, 0 unlimited.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxParallelUpgrades int32 `json:"maxParallelUpgrades"`
	// +optional
	WaitForCompletion WaitForCompletionSpec `json:"waitForCompletion,omitempty"`
	// +optional
	NPUPodDeletion NPUPodDeletionSpec `json:"npuPodDeletion,omitempty"`
	// +optional
	Drain DrainSpec `json:"drain,omitempty"`
	// +optional
	Reboot RebootSpec `json:"reboot,omitempty"`
}

// WaitForCompletionSpec waits for selected pods to complete before removal.
type WaitForCompletionSpec struct {
	// TimeoutSeconds: 0 waits indefinitely.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds"`
	// PodSelector of the pods to wait on; empty skips the wait.
	// +kubebuilder:default=""
	// +optional
	PodSelector string `json:"podSelector"`
}

// NPUPodDeletionSpec controls removal of NPU pods before the driver restarts.
type NPUPodDeletionSpec struct {
	// Force removes pods that lack a controller.
	// +kubebuilder:default=false
	// +optional
	Force bool `json:"force"`
	// TimeoutSeconds before remaining pods are force-deleted; 0 waits indefinitely.
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds"`
}

// DrainSpec controls draining a node before its driver pod restarts.
type DrainSpec struct {
	// +kubebuilder:default=false
	// +optional
	Enable bool `json:"enable"`
	// +kubebuilder:default=false
	// +optional
	Force bool `json:"force"`
	// DeleteEmptyDirData removes pods using emptyDir volumes (their data is lost).
	// +kubebuilder:default=false
	// +optional
	DeleteEmptyDirData bool `json:"deleteEmptyDirData"`
	// PodSelector restricts the drain; empty drains every pod.
	// +kubebuilder:default=""
	// +optional
	PodSelector string `json:"podSelector"`
	// TimeoutSeconds for the drain; 0 waits indefinitely.
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds"`
}

// RebootSpec controls an optional node reboot during the upgrade.
type RebootSpec struct {
	// +kubebuilder:default=false
	// +optional
	Enable bool `json:"enable"`
	// RebootTimeoutSeconds to wait for the node to return Ready; 0 means no timeout.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	RebootTimeoutSeconds int32 `json:"rebootTimeoutSeconds"`
	// Image of the reboot helper.
	// +optional
	Image *RebootImage `json:"image,omitempty"`
}

// RebootImage is the reboot helper image.
type RebootImage struct {
	// +optional
	Registry string `json:"registry,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
}

// RBLNClusterPolicyStatus is the observed state of the cluster policy.
type RBLNClusterPolicyStatus struct {
	// +optional
	State string `json:"state,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Audit totals the audit's last pass over the cluster (serve --audit, docs/audit.md).
	// +optional
	Audit *AuditStatus `json:"audit,omitempty"`
}

// AuditStatus totals one audit pass over every RBLNDriver, the cluster policy and the nodes'
// drift; the findings themselves are in the ClusterReports it names.
type AuditStatus struct {
	// LastRunTime is when the pass that wrote these totals ran: a pass whose totals changed,
	// or the full pass of every audit interval.
	LastRunTime metav1.Time `json:"lastRunTime"`
	// Reports is the number of ClusterReports the pass wrote or kept (one per RBLNDriver and
	// driverguard-cluster).
	Reports int32 `json:"reports"`
	// Totals by result, over every report.
	Pass  int32 `json:"pass"`
	Fail  int32 `json:"fail"`
	Warn  int32 `json:"warn"`
	Error int32 `json:"error"`
	// Enforced counts the failures of rules that deny (what makes driverguard audit exit 1).
	Enforced int32 `json:"enforced"`
}

// RBLNClusterPolicy is the cluster-scoped singleton (named rbln-cluster-policy) holding
// settings shared by every RBLNDriver.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rblncp
// +kubebuilder:printcolumn:name="AutoUpgrade",type=boolean,JSONPath=`.spec.driver.upgradePolicy.autoUpgrade`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RBLNClusterPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RBLNClusterPolicySpec `json:"spec,omitempty"`
	// +optional
	Status RBLNClusterPolicyStatus `json:"status,omitempty,omitzero"`
}

// RBLNClusterPolicyList is a list of RBLNClusterPolicy.
//
// +kubebuilder:object:root=true
type RBLNClusterPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RBLNClusterPolicy `json:"items"`
}

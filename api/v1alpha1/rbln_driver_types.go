package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RBLNDriverSpec is the desired driver for the nodes an RBLNDriver owns.
type RBLNDriverSpec struct {
	// Registry is the registry host of the driver image (e.g. repo.rebellions.ai).
	// +kubebuilder:validation:MinLength=1
	Registry string `json:"registry"`
	// Image is the repository of the driver image without the NPU family, e.g.
	// rebellions/rbln-driver; the family is inserted before its last segment per node pool.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
	// Version is the driver version; it starts every composed image tag.
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`
	// ImagePullPolicy of the driver container.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// ImagePullSecrets are names of Secrets used to pull the driver, manager and smd images.
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
	// Manager is the rbln-k8s-driver-manager image that reconciles the driver on each node.
	// +optional
	Manager *ManagerSpec `json:"manager,omitempty"`
	// SMD is the RSMD node daemon image; its tag is always Version.
	// +optional
	SMD *SMDSpec `json:"smd,omitempty"`
	// NodeSelector chooses the candidate nodes this driver may own. Only the default resource
	// (rbln-driver) may leave it empty.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the driver pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Annotations added to the driver pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// PriorityClassName of the driver pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Resources of the driver container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Env of the driver container.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
}

// ManagerSpec is the driver manager image.
type ManagerSpec struct {
	// +optional
	Registry string `json:"registry,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
}

// SMDSpec is the RSMD image. It has no version: its tag always follows RBLNDriverSpec.Version.
type SMDSpec struct {
	// +optional
	Registry string `json:"registry,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
}

// NodePoolStatus is the rollout state of one driver DaemonSet (pool).
type NodePoolStatus struct {
	Name string `json:"name"`
	// +optional
	Desired int32 `json:"desired"`
	// +optional
	Ready int32 `json:"ready"`
	// +optional
	State string `json:"state,omitempty"`
}

// SMDStatus is the rollout state of the RSMD DaemonSet.
type SMDStatus struct {
	// +optional
	Desired int32 `json:"desired"`
	// +optional
	Ready int32 `json:"ready"`
	// +optional
	State string `json:"state,omitempty"`
}

// RBLNDriverStatus is the observed state of an RBLNDriver.
type RBLNDriverStatus struct {
	// State is the overall state, e.g. ready or notReady.
	// +optional
	State string `json:"state,omitempty"`
	// Conditions, among them Ready with reasons such as ConflictingNodeSelector,
	// DriverImageNotFound, SmdNotReady and InvalidSpec.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// NodePools counts driver pods per pool.
	// +optional
	NodePools []NodePoolStatus `json:"nodePools,omitempty"`
	// SMD counts RSMD pods.
	// +optional
	SMD *SMDStatus `json:"smd,omitempty"`
}

// RBLNDriver is one NPU driver version and the nodes it may own.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rblnd;rbdrv
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RBLNDriver struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired driver for the nodes this RBLNDriver owns. It is required: the
	// operator has nothing to install without one.
	// +kubebuilder:validation:Required
	Spec RBLNDriverSpec `json:"spec"`
	// +optional
	Status RBLNDriverStatus `json:"status,omitempty,omitzero"`
}

// RBLNDriverList is a list of RBLNDriver.
//
// +kubebuilder:object:root=true
type RBLNDriverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RBLNDriver `json:"items"`
}

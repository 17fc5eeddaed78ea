// Package v1alpha1 holds the rebellions.ai/v1alpha1 API types that driverguard renders,
// routes and admits: RBLNDriver and RBLNClusterPolicy.
//
// +kubebuilder:object:generate=true
// +groupName=rebellions.ai
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "rebellions.ai", Version: "v1alpha1"}

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers the types of this package with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&RBLNDriver{}, &RBLNDriverList{},
		&RBLNClusterPolicy{}, &RBLNClusterPolicyList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

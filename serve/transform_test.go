package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeLabelsOnly: the node transform keeps the name, identity and labels and drops the
// rest, for the typed form and for the metadata form the cluster view watches (where it
// replaces the default transform that strips managed fields).
func TestNodeLabelsOnly(t *testing.T) {
	now := metav1.Now()
	meta := metav1.ObjectMeta{
		Name: "npu-1", UID: "u1", ResourceVersion: "7", Generation: 2, DeletionTimestamp: &now,
		Labels:        map[string]string{"rebellions.ai/npu.family": "atom"},
		Annotations:   map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)}},
		Finalizers:    []string{"x"},
	}
	want := metav1.ObjectMeta{Name: "npu-1", UID: "u1", ResourceVersion: "7", Generation: 2, DeletionTimestamp: &now,
		Labels: map[string]string{"rebellions.ai/npu.family": "atom"}}

	typed := &corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: meta,
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"big"}}}}}
	got, err := nodeLabelsOnly(typed)
	require.NoError(t, err)
	require.IsType(t, &corev1.Node{}, got)
	assert.Equal(t, want, got.(*corev1.Node).ObjectMeta)
	assert.Empty(t, got.(*corev1.Node).Status.Images)
	assert.Equal(t, "Node", got.(*corev1.Node).Kind)

	partial := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: meta}
	got, err = nodeLabelsOnly(partial)
	require.NoError(t, err)
	require.IsType(t, &metav1.PartialObjectMetadata{}, got)
	assert.Equal(t, want, got.(*metav1.PartialObjectMetadata).ObjectMeta)
	assert.Equal(t, "Node", got.(*metav1.PartialObjectMetadata).Kind)

	other := &corev1.Pod{ObjectMeta: meta}
	got, err = nodeLabelsOnly(other)
	require.NoError(t, err)
	assert.Same(t, other, got, "anything else passes through")
}

package audit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/audit"
)

// TestWriteStatusRecreatedClusterPolicy: a cluster policy deleted and created again (no
// status.audit) gets its totals at the next pass, though they did not change.
func TestWriteStatusRecreatedClusterPolicy(t *testing.T) {
	cp := &v1alpha1.RBLNClusterPolicy{ObjectMeta: metav1.ObjectMeta{Name: "rbln-cluster-policy", UID: "one"}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithStatusSubresource(&v1alpha1.RBLNClusterPolicy{}).WithObjects(cp.DeepCopy()).Build()
	w := &audit.Writer{Client: c}
	out := &audit.Outcome{Reports: []audit.Report{{}}, Summary: audit.Summary{Pass: 3}}
	wrote, err := w.WriteStatus(t.Context(), cp, out, time.Now(), true)
	require.NoError(t, err)
	require.True(t, wrote)

	require.NoError(t, c.Delete(t.Context(), cp.DeepCopy()))
	again := &v1alpha1.RBLNClusterPolicy{ObjectMeta: metav1.ObjectMeta{Name: "rbln-cluster-policy", UID: "two"}}
	require.NoError(t, c.Create(t.Context(), again.DeepCopy()))

	wrote, err = w.WriteStatus(t.Context(), again, out, time.Now(), false)
	require.NoError(t, err)
	assert.True(t, wrote, "the recreated cluster policy has no status.audit")
	stored := &v1alpha1.RBLNClusterPolicy{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: "rbln-cluster-policy"}, stored))
	assert.NotNil(t, stored.Status.Audit)
}

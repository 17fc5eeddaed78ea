package crd

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/cmd/driverguard/app"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/test/controlplane"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestAuditJudgesWhatTheWebhookMissed (docs/webhook.md "With the webhook away"): two RBLNDrivers that tie on a node, stored
// with the webhook away (this API server has none: the CRDs admit them, each valid alone), are
// a ConflictingNodeSelector failure of the audit's next pass.
func TestAuditJudgesWhatTheWebhookMissed(t *testing.T) {
	requireSetup(t)
	objs := []client.Object{
		wt.Node("away-n1", wt.CandidateLabels("example.com/pool", "x", "example.com/zone", "y")),
		wt.Driver("rbln-driver-away-pool", wt.Sel("example.com/pool", "x")),
		wt.Driver("rbln-driver-away-zone", wt.Sel("example.com/zone", "y")),
	}
	for _, o := range objs {
		require.NoError(t, suite.c.Create(t.Context(), o), "stored with the webhook away: %s", o.GetName())
		t.Cleanup(func() { _ = suite.c.Delete(context.Background(), o) })
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(suite.env, envtest.User{Name: "auditor", Groups: []string{"system:masters"}}, kubeconfig))
	var out, errOut bytes.Buffer
	code := app.Run(t.Context(), app.Streams{In: bytes.NewReader(nil), Out: &out, Err: &errOut}, []string{"audit", "--kubeconfig", kubeconfig, "-o", "json"})
	assert.Equal(t, app.ExitInvalid, code, errOut.String())
	assert.Contains(t, out.String(), routing.ReasonConflictingNodeSelector)
	assert.Contains(t, out.String(), "rbln-driver-away-pool")
	assert.Contains(t, out.String(), "rbln-driver-away-zone")
}

package crd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/test/controlplane"
)

// hasRules reports whether the stored RBLNDriver CRD carries the CEL rules.
func hasRules(t *testing.T) bool {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, suite.c.Get(t.Context(), client.ObjectKey{Name: "rblndrivers.rebellions.ai"}, &crd))
	return len(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["nodeSelector"].XValidations) > 0
}

// TestHelmLeavesTheCRDs (docs/webhook.md "With the webhook away"): where Helm upgrades the chart's CRDs and
// where it does not. On a cluster whose CRDs predate the rules (as Helm wrote them), Helm 4's
// `helm install` upgrades them (server-side apply), Helm 3's leaves them; `helm upgrade` leaves
// them under both; the command the docs give (`helm show crds ... | kubectl apply
// --server-side --force-conflicts -f -`) upgrades them in place, rules included.
func TestHelmLeavesTheCRDs(t *testing.T) {
	requireSetup(t)
	kubectl := filepath.Join(suite.root, "bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Skip("kubectl not built: make test-tools")
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(suite.env, envtest.User{Name: "helm-admin", Groups: []string{"system:masters"}}, kubeconfig))
	chart := filepath.Join(suite.root, "charts", "driverguard")
	var ruled apiextensionsv1.CustomResourceDefinition
	require.NoError(t, suite.c.Get(t.Context(), client.ObjectKey{Name: "rblndrivers.rebellions.ai"}, &ruled))
	rules := ruled.Spec.Versions[0].Schema.OpenAPIV3Schema.DeepCopy()
	probe := driver("rbln-driver-probe", map[string]string{"probe key!": "v"})
	t.Cleanup(func() { setSchema(t, func(s *apiextensionsv1.JSONSchemaProps) { *s = *rules }, probe, true) })

	run := func(t *testing.T, shell string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", shell)
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+filepath.Join(suite.root, "bin")+":"+os.Getenv("PATH"),
			"HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Run(), "%s\n%s", shell, out.String())
		return out.String()
	}
	for _, helm := range []string{"helm", "helm4"} {
		t.Run(helm, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(suite.root, "bin", helm)); err != nil {
				t.Skipf("%s not built: make test-tools", helm)
			}
			// The CRDs of an earlier chart, as Helm wrote them (its field manager: Helm 4
			// installs CRDs by server-side apply).
			applyWithoutRules(t, rules, probe)
			ns := "crd-" + helm
			run(t, helm+" install dg-"+helm+" "+chart+" -n "+ns+" --create-namespace --set webhook.enabled=false --wait=false")
			t.Cleanup(func() { run(t, helm+" uninstall dg-"+helm+" -n "+ns) })
			// Helm 4 installs the chart's CRDs by server-side apply: CRDs it wrote before are
			// upgraded in place. Helm 3 leaves existing CRDs as they are.
			assert.Equal(t, helm == "helm4", hasRules(t), "%s install: the CRDs upgraded", helm)
			applyWithoutRules(t, rules, probe)
			run(t, helm+" upgrade dg-"+helm+" "+chart+" -n "+ns+" --set webhook.enabled=false --wait=false")
			assert.False(t, hasRules(t), "%s upgrade left the CRDs as they were", helm)

			run(t, helm+" show crds "+chart+" | kubectl apply --server-side --force-conflicts -f -")
			assert.True(t, hasRules(t), "the documented command upgraded them")
			assert.Error(t, served(t, probe), "and the API server judges with the rules")
		})
	}
}

// applyWithoutRules writes the RBLNDriver CRD without its rules as Helm would have written
// it (server-side apply, field manager helm), and waits until the API server judges with it.
func applyWithoutRules(t *testing.T, rules *apiextensionsv1.JSONSchemaProps, probe *v1alpha1.RBLNDriver) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, suite.c.Get(ctx, client.ObjectKey{Name: "rblndrivers.rebellions.ai"}, &crd))
	apply := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: crd.Name},
		Spec:       *crd.Spec.DeepCopy(),
	}
	s := rules.DeepCopy()
	withoutRules(s, validation.DriverCRDValidation())
	apply.Spec.Versions[0].Schema.OpenAPIV3Schema = s
	require.NoError(t, suite.c.Patch(ctx, apply, client.Apply, client.FieldOwner("helm"), client.ForceOwnership)) //nolint:staticcheck // the typed Apply of this controller-runtime
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return served(t, probe) == nil, nil
	})
	require.NoError(t, err, "the API server did not take the schema without rules")
}

package audit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/serve"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestPrivateRegistryPullSecrets (README.md "Private registries"): serve's audit asks a registry that wants a token
// with the driver's spec.imagePullSecrets, read from the pull Secret namespace. The image left
// unpublished is DriverImageNotFound in the driver's ClusterReport, the published ones are
// found; the Secret rotated to a wrong password makes the next image pass warn (refused, the
// Secret named), never NotFound; rotated back, the missing image is found missing again. No
// password, token or Authorization shows in any report or Event.
func TestPrivateRegistryPullSecrets(t *testing.T) {
	const ns, secretName = "rbln-system", "drivercred"
	reg := registrytest.New(t, "robot", "s3cret-pa55", true)
	plane, _ := start(t, func(a *serve.AuditOptions) {
		a.CheckImages, a.ImageInterval, a.PullSecretNamespace = true, 500*time.Millisecond, ns
	})
	c := newClient(t, plane, nil)
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	secret := registrytest.PullSecret(ns, secretName, reg.Host, "robot", "s3cret-pa55", false)
	require.NoError(t, client.IgnoreNotFound(c.Delete(t.Context(), secret.DeepCopy())))
	create(t, c, secret)
	t.Cleanup(func() { _ = c.Delete(context.Background(), secret) })

	d := wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))
	d.Spec.Registry, d.Spec.SMD.Registry = reg.Host, reg.Host
	d.Spec.ImagePullSecrets = []string{secretName}
	create(t, c, wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver-atom")), d, wt.ClusterPolicy(false))

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var images []string
	require.NoError(t, plane.State.WaitFor(ctx, func(s *cluster.Snapshot) bool {
		images = audit.Images(s)
		return len(s.Drivers()) == 1 && len(images) > 1
	}))
	var pool string
	for _, img := range images {
		require.True(t, strings.HasPrefix(img, reg.Host+"/"), "every image is in the test registry: %s", img)
		if strings.Contains(img, "rbln-driver:") {
			pool = img
			continue
		}
		reg.Push(t, img)
	}
	require.NotEmpty(t, pool, "no pool image among %v", images)

	// The right credentials: the unpublished pool image is missing, the RSMD image found.
	cr := report(t, c, "rbln-driver-atom", hasRule(routing.ReasonDriverImageNotFound))
	var named bool
	for _, r := range cr.Results {
		assert.NotEqual(t, audit.RuleImageNotVerified, r.Rule, "every image was asked with the Secret: %s", r.Description)
		named = named || r.Rule == routing.ReasonDriverImageNotFound && r.Properties["image"] == pool
	}
	assert.True(t, named, "the finding names the missing image %s: %+v", pool, cr.Results)

	// Rotated to a password the registry refuses: from the next image pass, warnings that name
	// the Secret, and no image is called missing on that basis.
	rotated := registrytest.PullSecret(ns, secretName, reg.Host, "robot", "expired-pa55", false)
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(secret), secret))
	secret.Data = rotated.Data
	require.NoError(t, c.Update(t.Context(), secret))
	cr = report(t, c, "rbln-driver-atom", func(cr *openreports.ClusterReport) bool {
		if hasRule(routing.ReasonDriverImageNotFound)(cr) {
			return false
		}
		for _, r := range cr.Results {
			if r.Rule == audit.RuleImageNotVerified && r.Result == "warn" {
				return true
			}
		}
		return false
	})
	for _, r := range cr.Results {
		if r.Rule == audit.RuleImageNotVerified {
			assert.Equal(t, "unauthorized", r.Properties["reason"], r.Description)
			assert.Equal(t, "Secret "+ns+"/"+secretName, r.Properties["credentials"])
			assert.Contains(t, r.Description, "refused the credentials of Secret "+ns+"/"+secretName)
		}
	}
	clusterReport := report(t, c, audit.ClusterReportName, func(cr *openreports.ClusterReport) bool {
		for _, r := range cr.Results {
			if r.Rule == audit.RuleImageCheck && r.Properties["notVerified.unauthorized"] != "" {
				return true
			}
		}
		return false
	})

	// Rotated back: the missing image is missing again.
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(secret), secret))
	secret.Data = registrytest.PullSecret(ns, secretName, reg.Host, "robot", "s3cret-pa55", false).Data
	require.NoError(t, c.Update(t.Context(), secret))
	report(t, c, "rbln-driver-atom", hasRule(routing.ReasonDriverImageNotFound))

	// Nothing the cluster stores repeats a credential.
	var stored strings.Builder
	reports := &openreports.ClusterReportList{}
	require.NoError(t, c.List(t.Context(), reports))
	events := &eventsv1.EventList{}
	require.NoError(t, c.List(t.Context(), events))
	for _, v := range []any{reports, events, clusterReport} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		stored.Write(b)
	}
	for _, s := range append([]string{"s3cret-pa55", "expired-pa55", registrytest.BasicAuth("robot", "s3cret-pa55"), registrytest.BasicAuth("robot", "expired-pa55")}, reg.Issued()...) {
		assert.NotContains(t, stored.String(), s, "a credential in a report or Event")
	}
}

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/serve"
)

// variant is one way users run Helm.
type variant struct {
	name string
	bin  string   // bin/<bin>
	flag []string // added to install, upgrade and rollback
	wait bool     // helm waits for the release's resources (kstatus): an upgrade whose pods never become ready fails
}

var variants = []variant{
	{name: "helm3", bin: "helm"}, // Helm 3's defaults: client-side apply, no --wait
	{name: "helm4-server-side", bin: "helm4", flag: []string{"--wait"}, wait: true},                        // Helm 4's defaults, with --wait (watcher)
	{name: "helm4-client-side", bin: "helm4", flag: []string{"--wait", "--server-side=false"}, wait: true}, // Helm 4, client-side apply
}

// TestLifecycle installs the chart with RBLNDrivers (examples/multi-driver.yaml) under each
// Helm, with no webhook pod running yet, then runs the webhook pod, upgrades to a webhook image
// whose pods never become ready, rolls back and uninstalls:
//
//   - a fresh install succeeds whatever order Helm creates the objects in: the chart's webhook
//     configurations carry no webhooks until a webhook pod registers them (serve
//     --register-webhooks), so no write reaches a webhook that is not running;
//   - once the webhook pod runs, every write is judged, the release's own objects included;
//   - while no pod is reachable, every RBLNDriver write is refused (failurePolicy Fail), the
//     release's label exempting none: no label is a bypass;
//   - an upgrade to an image that never becomes ready leaves the running pod judging (a driver
//     change of that upgrade included) and the webhooks registered; with --wait it fails, and a
//     rollback succeeds;
//   - uninstall leaves no webhook configuration: RBLNDriver writes go through again.
func TestLifecycle(t *testing.T) {
	requireEnv(t)
	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			lifecycle(t, v, fmt.Sprintf("life%d", i))
		})
	}
}

func lifecycle(t *testing.T, v variant, release string) {
	c := newClient(t)
	h := newHelm(t, v.name, v.bin)
	ns := "lifecycle-" + release
	name := release + "-driverguard-webhook"
	chart := filepath.Join(suite.root, "charts", "driverguard")
	values := filepath.Join(suite.root, "examples", "multi-driver.yaml")
	kubelet(t, c, ns)
	installed := false
	t.Cleanup(func() {
		if installed {
			if out, err := h.run("uninstall", release, "--namespace", ns); err != nil {
				t.Logf("helm uninstall (cleanup): %v\n%s", err, out)
			}
		}
		_ = c.DeleteAllOf(context.Background(), &v1alpha1.RBLNDriver{})
		_ = c.DeleteAllOf(context.Background(), &v1alpha1.RBLNClusterPolicy{})
	})

	// A fresh install, no webhook pod yet.
	out, err := h.run(append([]string{"install", release, chart, "--namespace", ns, "--create-namespace", "-f", values, "--timeout", "60s"}, v.flag...)...)
	require.NoError(t, err, "helm install:\n%s", out)
	installed = true
	for _, d := range []string{"rbln-driver", "rbln-driver-atom-canary", "rbln-driver-rebel"} {
		var drv v1alpha1.RBLNDriver
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: d}, &drv), "the release's RBLNDriver")
		assert.Equal(t, release, drv.Labels[v1alpha1.LabelRelease])
	}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: v1alpha1.ClusterPolicyName}, &v1alpha1.RBLNClusterPolicy{}))

	// No webhook is registered before a pod serves: the configurations hold only the annotation.
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &vwc))
	assert.Empty(t, vwc.Webhooks, "webhooks before any pod serves")
	assert.NotEmpty(t, vwc.Annotations[serve.AnnotationWebhooks])

	// The webhook pod runs and registers the webhooks (it is ready only once they are): every
	// write is judged, the release's own objects included.
	pod := startWebhookPod(t, c, ns, name)
	requireRegistered(t, c, name)
	identical := map[string]string{operator.LabelFamily: "rebel"} // rbln-driver-rebel's selector
	eventuallyDenied(t, c, driver("rbln-driver-twin", "", identical), "is identical to the nodeSelector")
	eventuallyDenied(t, c, driver("rbln-driver-twin", release, identical), "is identical to the nodeSelector")
	other := driver("rbln-driver-other", "", map[string]string{"team": "other"})
	require.NoError(t, c.Create(t.Context(), other.DeepCopy(), client.DryRunAll), "a valid RBLNDriver is admitted")

	// No pod reachable: every write fails closed, whatever its labels.
	pod.unreachable(t, c, func() {
		for _, d := range []*v1alpha1.RBLNDriver{other, driver("rbln-driver-other", release, map[string]string{"team": "other"})} {
			eventuallyRefused(t, c, d)
		}
	})

	// An upgrade to a webhook image that never becomes ready, with a driver change: the running
	// pod judges the change; with --wait the upgrade fails and a rollback succeeds.
	out, err = h.run(append([]string{"upgrade", release, chart, "--namespace", ns, "-f", values, "--timeout", "15s",
		"--set", "webhook.image.tag=" + neverReady, "--set", "driver.instances.rebel.image.tag=3.2.4"}, v.flag...)...)
	if v.wait {
		require.Error(t, err, "helm upgrade --wait to pods that never become ready:\n%s", out)
	} else {
		require.NoError(t, err, "helm upgrade:\n%s", out)
	}
	var rebel v1alpha1.RBLNDriver
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: "rbln-driver-rebel"}, &rebel))
	assert.Equal(t, "3.2.4", rebel.Spec.Version, "the upgrade's driver change was applied (and judged)")
	eventuallyDenied(t, c, driver("rbln-driver-twin", release, identical), "is identical to the nodeSelector")
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &vwc))
	assert.Len(t, vwc.Webhooks, 2, "the upgrade left the registered webhooks in place")
	out, err = h.run(append([]string{"rollback", release, "1", "--namespace", ns, "--timeout", "60s"}, rollbackFlags(v)...)...)
	require.NoError(t, err, "helm rollback:\n%s", out)
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: "rbln-driver-rebel"}, &rebel))
	assert.Equal(t, "3.2.3", rebel.Spec.Version, "the rollback restores the driver")

	// Uninstall: nothing of the release is left to refuse writes.
	out, err = h.run("uninstall", release, "--namespace", ns, "--timeout", "60s")
	require.NoError(t, err, "helm uninstall:\n%s", out)
	installed = false
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: "rbln-driver-rebel"}},
	} {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
		assert.True(t, apierrors.IsNotFound(err), "%T %s remains after helm uninstall (%v)", obj, obj.GetName(), err)
	}
	require.NoError(t, c.Create(t.Context(), other.DeepCopy(), client.DryRunAll), "RBLNDriver writes after the uninstall")
}

// rollbackFlags are the variant's flags that `helm rollback` takes (Helm 4's rollback has
// --wait and --server-side too).
func rollbackFlags(v variant) []string {
	var out []string
	for _, f := range v.flag {
		if f == "--wait" || strings.HasPrefix(f, "--server-side") {
			out = append(out, f)
		}
	}
	return out
}

// driver is an RBLNDriver selecting sel, labelled as release's own when release is set.
func driver(name, release string, sel map[string]string) *v1alpha1.RBLNDriver {
	d := &v1alpha1.RBLNDriver{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RBLNDriverSpec{Registry: "repo.example", Image: "rebellions/rbln-driver", Version: "3.2.2",
			ImagePullPolicy: corev1.PullIfNotPresent, NodeSelector: sel},
	}
	if release != "" {
		d.Labels = map[string]string{v1alpha1.LabelRelease: release}
	}
	return d
}

// requireRegistered checks that the webhooks are registered (two validating, one mutating):
// a ready pod has registered them (serve's readiness waits for its registration).
func requireRegistered(t *testing.T, c client.Client, name string) {
	t.Helper()
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	var m admissionregistrationv1.MutatingWebhookConfiguration
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &v))
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &m))
	require.Len(t, v.Webhooks, 2, "validating webhooks registered once the pod is ready")
	require.Len(t, m.Webhooks, 1, "mutating webhooks registered once the pod is ready")
	for _, w := range v.Webhooks {
		assert.NotEmpty(t, w.ClientConfig.CABundle, "%s has the pod's CA", w.Name)
	}
}

// eventuallyRefused creates obj (dry run) until the API server refuses it for want of a
// reachable webhook.
func eventuallyRefused(t *testing.T, c client.Client, obj *v1alpha1.RBLNDriver) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		last = c.Create(t.Context(), obj.DeepCopy(), client.DryRunAll)
		if last != nil && strings.Contains(last.Error(), "failed calling webhook") {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s (labels %v) was not refused for want of a webhook within 30s; last answer: %v", obj.Name, obj.Labels, last)
}

// eventuallyDenied creates obj (dry run) until the webhook denies it with want: at first the
// API server may not reach the pod (its CA is being injected).
func eventuallyDenied(t *testing.T, c client.Client, obj *v1alpha1.RBLNDriver, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		last = c.Create(t.Context(), obj.DeepCopy(), client.DryRunAll)
		var status apierrors.APIStatus
		if last != nil && errors.As(last, &status) && strings.Contains(last.Error(), want) {
			return
		}
		if last == nil {
			t.Fatalf("%s (labels %v) was admitted; the webhook must deny it: %s", obj.Name, obj.Labels, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s (labels %v) was not denied with %q within 60s; last answer: %v", obj.Name, obj.Labels, want, last)
}

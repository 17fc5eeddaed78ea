package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/test/controlplane"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// helm runs the real bin/helm against the envtest API server as a system:masters user.
type helm struct {
	bin, kubeconfig string
}

func newHelm(t *testing.T) *helm {
	t.Helper()
	requireEnv(t)
	bin := filepath.Join(suite.root, "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		if p, err := exec.LookPath("helm"); err == nil {
			bin = p
		} else if testing.Short() {
			t.Skip("helm not found: run make tools")
		} else {
			t.Fatal("helm not found in bin/ or on PATH: run make tools")
		}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(suite.env, envtest.User{Name: "helm-admin", Groups: []string{"system:masters"}}, path); err != nil {
		t.Fatal(err)
	}
	return &helm{bin: bin, kubeconfig: path}
}

func (h *helm) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	// Not t.Context(): cleanups (uninstall) run after it is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestHelmInstall installs the chart with the real helm into the envtest API server, whose
// admission webhooks are served by this process: the chart's RBLNDrivers go through them, and
// every object of the webhook itself (Deployment, Service, RBAC, PDB, certificate Secret, the
// two webhook configurations) is accepted by a real API server. The release's own webhook
// configurations name a Service without endpoints here (envtest runs no pods): they are
// installed with failurePolicy Ignore, so that this process's webhook decides.
func TestHelmInstall(t *testing.T) {
	h := newHelm(t)
	c, _ := newClient(t)
	resetCluster(t, c)
	t.Cleanup(func() { resetCluster(t, c) })
	chart := filepath.Join(suite.root, "charts", "driverguard")
	ns := "helm-e2e"

	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`
driver:
  instances:
    atom:
      nodeSelector: {rebellions.ai/npu.family: atom}
    atom-canary:
      nodeSelector: {rebellions.ai/npu.family: atom, env: canary}
      image: {tag: "3.3.0"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ignore := []string{"--set", "webhook.failurePolicy=Ignore", "--set", "webhook.daemonSetFailurePolicy=Ignore"}
	out, err := h.run(t, append([]string{"install", "e2e", chart, "--namespace", ns, "--create-namespace", "-f", values, "--wait=false"}, ignore...)...)
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := h.run(t, "uninstall", "e2e", "--namespace", ns); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})

	for _, key := range []struct {
		obj  client.Object
		name string
	}{
		{&v1alpha1.RBLNDriver{}, "rbln-driver"},
		{&v1alpha1.RBLNDriver{}, "rbln-driver-atom"},
		{&v1alpha1.RBLNDriver{}, "rbln-driver-atom-canary"},
		{&v1alpha1.RBLNClusterPolicy{}, v1alpha1.ClusterPolicyName},
		{&appsv1.Deployment{}, "e2e-driverguard-webhook"},
		{&corev1.Service{}, "e2e-driverguard-webhook"},
		{&corev1.ServiceAccount{}, "e2e-driverguard-webhook"},
		{&corev1.Secret{}, "e2e-driverguard-webhook-cert"},
		{&policyv1.PodDisruptionBudget{}, "e2e-driverguard-webhook"},
		{&rbacv1.ClusterRole{}, "e2e-driverguard-webhook"},
		{&rbacv1.ClusterRoleBinding{}, "e2e-driverguard-webhook"},
		{&rbacv1.Role{}, "e2e-driverguard-webhook"},
		{&rbacv1.RoleBinding{}, "e2e-driverguard-webhook"},
		{&admissionregistrationv1.ValidatingWebhookConfiguration{}, "e2e-driverguard-webhook"},
		{&admissionregistrationv1.MutatingWebhookConfiguration{}, "e2e-driverguard-webhook"},
	} {
		k := client.ObjectKey{Name: key.name}
		switch key.obj.(type) {
		case *v1alpha1.RBLNDriver, *v1alpha1.RBLNClusterPolicy, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding,
			*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration:
		default:
			k.Namespace = ns
		}
		if err := c.Get(t.Context(), k, key.obj); err != nil {
			t.Errorf("%T %s: %v", key.obj, k, err)
		}
	}
	var dep appsv1.Deployment
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "e2e-driverguard-webhook"}, &dep); err == nil {
		pod := dep.Spec.Template.Spec
		sc := pod.Containers[0].SecurityContext
		if *dep.Spec.Replicas != 2 || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
			sc == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities.Drop[0] != "ALL" || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("the webhook Deployment is not hardened: %+v", pod)
		}
	}

	// No hooks: everything is an object of the release, which uninstall deletes.
	if hooks, err := h.run(t, "get", "hooks", "e2e", "--namespace", ns); err != nil || strings.TrimSpace(hooks) != "" {
		t.Errorf("helm get hooks: %v\n%s", err, hooks)
	}

	// An upgrade whose new instance ties with an existing one on a labelled node is refused by
	// the webhook, and Helm reports the webhook's message.
	create(t, c, func() *corev1.Node {
		n := &corev1.Node{}
		n.Name = "helm-e2e-n1"
		n.Labels = map[string]string{operator.LabelDeployDriver: "true", operator.LabelFamily: "atom", "zone": "a"}
		return n
	}())
	waitForView(t, 1, 3)
	if err := os.WriteFile(values, []byte(`
driver:
  instances:
    atom:
      nodeSelector: {rebellions.ai/npu.family: atom}
    zone-a:
      nodeSelector: {zone: a}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = h.run(t, append([]string{"upgrade", "e2e", chart, "--namespace", ns, "-f", values}, ignore...)...)
	if err == nil || !strings.Contains(out, `ties with RBLNDriver "rbln-driver-atom" on existing node(s) helm-e2e-n1`) {
		t.Errorf("helm upgrade with a tie: err=%v\n%s", err, out)
	}

	// The Deployment's serve, run as the release's ServiceAccount, has every permission the
	// audit needs. A canary node without its owner label yet is a failure in
	// rbln-driver-atom-canary's report.
	t.Run("serve as the chart's ServiceAccount", func(t *testing.T) {
		serveAsTheChart(t, c, &dep, func() string {
			n := &corev1.Node{}
			n.Name = "helm-e2e-n2"
			n.Labels = map[string]string{operator.LabelDeployDriver: "true", operator.LabelFamily: "atom", "env": "canary"}
			create(t, c, n)
			return "rbln-driver-atom-canary"
		})
	})
}

// TestHelmLifecycle: install (a release with RBLNDrivers) → upgrade → uninstall with the real
// helm and the chart's defaults, while the webhook's pods never run (envtest has no kubelet:
// the case of an image that cannot be pulled). The install succeeds because the chart's webhook
// configurations carry no webhooks until a pod registers them; once they are registered (here
// by the registrar, as a pod that ran once would), RBLNDriver writes are refused while no pod
// answers (fail-closed, nothing bypasses the checks); the upgrade succeeds; the uninstall
// leaves no webhook configuration, Secret, ClusterRole or binding of the release behind, and
// RBLNDriver writes work again. Updates that change no spec (finalizers, annotations, Helm's
// own) are never sent to the webhook, so they go through while it is down.
func TestHelmLifecycle(t *testing.T) {
	h := newHelm(t)
	c, _ := newClient(t)
	resetCluster(t, c)
	t.Cleanup(func() { resetCluster(t, c) })
	chart := filepath.Join(suite.root, "charts", "driverguard")
	const ns, release, name = "helm-lifecycle", "life", "life-driverguard-webhook"
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("driver:\n  instances:\n    atom:\n      nodeSelector: {rebellions.ai/npu.family: atom}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = h.run(t, "uninstall", release, "--namespace", ns)
		}
	})
	if out, err := h.run(t, "install", release, chart, "--namespace", ns, "--create-namespace", "-f", values); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	for _, n := range []string{"rbln-driver", "rbln-driver-atom"} {
		if err := c.Get(t.Context(), client.ObjectKey{Name: n}, &v1alpha1.RBLNDriver{}); err != nil {
			t.Errorf("the release's RBLNDriver %s: %v", n, err)
		}
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &vwc); err != nil {
		t.Fatalf("the release's ValidatingWebhookConfiguration: %v", err)
	}
	if len(vwc.Webhooks) != 0 {
		t.Errorf("webhooks registered before any pod served: %v", vwc.Webhooks)
	}
	// A pod that served once registered the webhooks; then every pod went away.
	cs, err := kubernetes.NewForConfig(suite.plane.Config)
	if err != nil {
		t.Fatal(err)
	}
	registrar := &serve.Registrar{Client: cs, Names: serve.WebhookConfigurationNames{Validating: name, Mutating: name},
		CAFile: filepath.Join(t.TempDir(), "ca.crt"), Log: logr.Discard()}
	if err := registrar.Sync(t.Context()); err != nil {
		t.Fatalf("registering the release's webhooks: %v", err)
	}
	extra := wt.Driver("rbln-driver-lifecycle", wt.Sel(operator.LabelFamily, "rebel"))
	err = c.Create(t.Context(), extra.DeepCopy())
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("with the webhook down, an RBLNDriver write must be refused (failurePolicy Fail), got %v", err)
	}

	// What changes no spec never reaches it: a finalizer added and removed, an annotation.
	var atom v1alpha1.RBLNDriver
	if err := c.Get(t.Context(), client.ObjectKey{Name: "rbln-driver-atom"}, &atom); err != nil {
		t.Fatal(err)
	}
	atom.Finalizers = []string{"e2e.invalid/hold"}
	atom.Annotations = map[string]string{"team": "npu"}
	if err := c.Update(t.Context(), &atom); err != nil {
		t.Errorf("a metadata-only update with the webhook down: %v", err)
	}
	atom.Finalizers = nil
	if err := c.Update(t.Context(), &atom); err != nil {
		t.Errorf("removing a finalizer with the webhook down: %v", err)
	}

	// An upgrade that changes the webhook (not the drivers) goes through while it is down.
	if out, err := h.run(t, "upgrade", release, chart, "--namespace", ns, "-f", values, "--set", "webhook.replicas=3"); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	var dep appsv1.Deployment
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &dep); err != nil || *dep.Spec.Replicas != 3 {
		t.Errorf("the upgraded Deployment: %v %+v", err, dep.Spec.Replicas)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &vwc); err != nil || len(vwc.Webhooks) != 2 {
		t.Errorf("the upgrade must leave the registered webhooks in place: %v, %d webhooks", err, len(vwc.Webhooks))
	}

	if out, err := h.run(t, "uninstall", release, "--namespace", ns); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	uninstalled = true
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-cert"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
	} {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s remains after helm uninstall (%v)", obj, obj.GetName(), err)
		}
	}
	// Nothing of the release intercepts RBLNDriver writes any more.
	create(t, c, extra)
}

// TestHelmInstallWithoutWebhook: webhook.enabled=false renders and installs no webhook object.
func TestHelmInstallWithoutWebhook(t *testing.T) {
	h := newHelm(t)
	c, _ := newClient(t)
	resetCluster(t, c)
	t.Cleanup(func() { resetCluster(t, c) })
	out, err := h.run(t, "install", "plain", filepath.Join(suite.root, "charts", "driverguard"), "--namespace", "helm-e2e-plain", "--create-namespace", "--set", "webhook.enabled=false")
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := h.run(t, "uninstall", "plain", "--namespace", "helm-e2e-plain"); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})
	var deps appsv1.DeploymentList
	if err := c.List(t.Context(), &deps, client.InNamespace("helm-e2e-plain")); err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 0 {
		t.Errorf("webhook.enabled=false installed %d Deployment(s)", len(deps.Items))
	}
	var d v1alpha1.RBLNDriver
	if err := c.Get(t.Context(), client.ObjectKey{Name: "rbln-driver"}, &d); err != nil {
		t.Errorf("the default RBLNDriver: %v", err)
	}
}

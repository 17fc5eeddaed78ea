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

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
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
	user, err := suite.env.AddUser(envtest.User{Name: "helm-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
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
// every object of the webhook itself (Deployment, Service, RBAC, PDB, certificate Secret) is
// accepted by a real API server. The webhook configurations are Helm hooks; they are applied
// with a server-side dry run here, because the Service they name has no endpoints in envtest.
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
	out, err := h.run(t, "install", "e2e", chart, "--namespace", ns, "--create-namespace", "-f", values, "--no-hooks", "--wait=false")
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := h.run(t, "uninstall", "e2e", "--namespace", ns, "--no-hooks"); err != nil {
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
	} {
		k := client.ObjectKey{Name: key.name}
		switch key.obj.(type) {
		case *v1alpha1.RBLNDriver, *v1alpha1.RBLNClusterPolicy, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
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

	// The hooks: the chart's webhook configurations, accepted by the API server (dry run).
	manifest, err := h.run(t, "get", "hooks", "e2e", "--namespace", ns)
	if err != nil {
		t.Fatalf("helm get hooks: %v\n%s", err, manifest)
	}
	docs, err := splitYAML([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, doc := range docs {
		var obj client.Object
		switch {
		case bytes.Contains(doc, []byte("kind: ValidatingWebhookConfiguration")):
			obj = &admissionregistrationv1.ValidatingWebhookConfiguration{}
		case bytes.Contains(doc, []byte("kind: MutatingWebhookConfiguration")):
			obj = &admissionregistrationv1.MutatingWebhookConfiguration{}
		default:
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(t.Context(), obj, client.DryRunAll); err != nil {
			t.Errorf("the API server rejects the chart's %T: %v", obj, err)
		}
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind)
	}
	if len(kinds) != 2 {
		t.Errorf("hooks: %v, want the two webhook configurations", kinds)
	}

	// An upgrade whose new instance ties with an existing one on a labelled node is refused by
	// the webhook, and Helm reports the webhook's message.
	create(t, c, func() *corev1.Node {
		n := &corev1.Node{}
		n.Name = "helm-e2e-n1"
		n.Labels = map[string]string{v1alpha1.LabelDeployDriver: "true", v1alpha1.LabelFamily: "atom", "zone": "a"}
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
	out, err = h.run(t, "upgrade", "e2e", chart, "--namespace", ns, "-f", values, "--no-hooks")
	if err == nil || !strings.Contains(out, `ties with RBLNDriver "rbln-driver-atom" on existing node(s) helm-e2e-n1`) {
		t.Errorf("helm upgrade with a tie: err=%v\n%s", err, out)
	}
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

package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/test/controlplane"
)

// TestChartPullSecretRBAC (README.md "Private registries"): the RBAC the chart renders with
// webhook.audit.checkImages lets serve's ServiceAccount get Secrets in the pull Secret
// namespace and nowhere else — not list them there, not get one elsewhere — and that is all
// the registry check needs: as that ServiceAccount, the drivers' pull Secret is read and the
// registry answers; pointed at another namespace, the warning says it may not read the Secret.
func TestChartPullSecretRBAC(t *testing.T) {
	h := newHelm(t)
	admin, _ := newClient(t)
	const release, releaseNS, pullNS, otherNS = "pull", "pull-rel", "pull-drivers", "pull-other"
	for _, ns := range []string{releaseNS, pullNS, otherNS} {
		if err := admin.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	reg := registrytest.New(t, "robot", "s3cret-pa55", true)
	for _, ns := range []string{pullNS, otherNS} {
		s := registrytest.PullSecret(ns, "drivercred", reg.Host, "robot", "s3cret-pa55", false)
		require.NoError(t, admin.Create(t.Context(), s))
		t.Cleanup(func() { _ = admin.Delete(t.Context(), s) })
	}

	out, err := h.run(t, "template", release, filepath.Join(suite.root, "charts", "driverguard"), "--namespace", releaseNS,
		"--set", "webhook.audit.checkImages=true", "--set", "webhook.audit.pullSecretNamespace="+pullNS)
	require.NoError(t, err, out)
	var sa string
	for _, obj := range rbacObjects(t, out) {
		if a, ok := obj.(*corev1.ServiceAccount); ok {
			sa = a.Name
		}
		require.NoError(t, admin.Create(t.Context(), obj), "%T %s", obj, obj.GetName())
		t.Cleanup(func() { _ = admin.Delete(t.Context(), obj) })
	}
	require.NotEmpty(t, sa)

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(suite.env, envtest.User{Name: "system:serviceaccount:" + releaseNS + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNS, "system:authenticated"}}, kubeconfig))
	asServe := clientFor(t, kubeconfig)

	// RBAC is cached by the API server's authorizer for a moment after it is created.
	eventually(t, 30*time.Second, func() error {
		return asServe.Get(t.Context(), client.ObjectKey{Namespace: pullNS, Name: "drivercred"}, &corev1.Secret{})
	})
	err = asServe.Get(t.Context(), client.ObjectKey{Namespace: otherNS, Name: "drivercred"}, &corev1.Secret{})
	assert.True(t, apierrors.IsForbidden(err), "a Secret outside the pull Secret namespace: %v", err)
	err = asServe.List(t.Context(), &corev1.SecretList{}, client.InNamespace(pullNS))
	assert.True(t, apierrors.IsForbidden(err), "get only, never list: %v", err)

	// What the check reads as that ServiceAccount.
	published := reg.Push(t, "rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04")
	missing := reg.Host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-94-generic-ubuntu22.04"
	res := &routing.Result{Pools: []routing.Pool{{Name: "a", Owner: "rbln-driver-atom", Image: published}, {Name: "b", Owner: "rbln-driver-atom", Image: missing}}}
	secrets := registry.DriverSecrets{"rbln-driver-atom": {"drivercred"}}
	checker := registry.NewChecker(registry.Options{Timeout: 10 * time.Second})
	got := checker.Check(t.Context(), []string{published, missing}, registry.PullSecrets(t.Context(), asServe, pullNS, secrets, res))
	assert.Equal(t, registry.Found, got[published].Status, got[published].Message)
	assert.Equal(t, registry.NotFound, got[missing].Status, got[missing].Message)
	assert.Equal(t, []string{"Secret " + pullNS + "/drivercred"}, got[published].Credentials)

	got = checker.Check(t.Context(), []string{published}, registry.PullSecrets(t.Context(), asServe, otherNS, secrets, res))
	assert.Equal(t, registry.Warning, got[published].Status)
	assert.Contains(t, got[published].Message, "Secret "+otherNS+"/drivercred: driverguard may not read it: grant get on Secrets in namespace "+otherNS)
}

// rbacObjects are the ServiceAccount, Roles, RoleBindings, ClusterRoles and
// ClusterRoleBindings of a rendered chart.
func rbacObjects(t *testing.T, manifest string) []client.Object {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var out []client.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(doc, &meta))
		var obj client.Object
		switch meta.Kind {
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "Role":
			obj = &rbacv1.Role{}
		case "RoleBinding":
			obj = &rbacv1.RoleBinding{}
		case "ClusterRole":
			obj = &rbacv1.ClusterRole{}
		case "ClusterRoleBinding":
			obj = &rbacv1.ClusterRoleBinding{}
		default:
			continue
		}
		require.NoError(t, yaml.UnmarshalStrict(bytes.TrimSpace(doc), obj))
		out = append(out, obj)
	}
	return out
}

// clientFor is a client of the kubeconfig's user.
func clientFor(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

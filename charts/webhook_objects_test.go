package charts_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/serve"
)

// manifest renders the chart (helm's install action, client-only) and returns its documents
// by kind, and the number of hooks.
func manifest(t *testing.T, vals map[string]any) (map[string][][]byte, int) {
	t.Helper()
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	inst := action.NewInstall(&action.Configuration{})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = "dg", "default"
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}
	rel, err := inst.Run(ch, vals)
	require.NoError(t, err)
	out := map[string][][]byte{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(rel.Manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var meta struct{ Kind string }
		require.NoError(t, yaml.Unmarshal(doc, &meta))
		if meta.Kind != "" {
			out[meta.Kind] = append(out[meta.Kind], bytes.Clone(doc))
		}
	}
	return out, len(rel.Hooks)
}

func one[T any](t *testing.T, docs map[string][][]byte, kind string) *T {
	t.Helper()
	require.Len(t, docs[kind], 1, kind)
	var obj T
	require.NoError(t, yaml.UnmarshalStrict(docs[kind][0], &obj))
	return &obj
}

func webhookArgs(t *testing.T, docs map[string][][]byte) []string {
	t.Helper()
	d := one[appsv1.Deployment](t, docs, "Deployment")
	return d.Spec.Template.Spec.Containers[0].Args
}

// TestWebhookConfigurationsAreReleaseObjects: no Helm hooks (uninstall deletes everything);
// Helm writes no webhooks, only the annotation serve registers them from (so a fresh install
// never calls a webhook that is not running, whatever order Helm creates the objects in);
// every registered webhook fails closed and no label exempts an object; updates that change no
// spec, and objects being deleted, never reach the webhook; the DaemonSet mutation is
// re-invoked after later mutating webhooks.
func TestWebhookConfigurationsAreReleaseObjects(t *testing.T) {
	docs, hooks := manifest(t, nil)
	assert.Zero(t, hooks)
	v := one[admissionregistrationv1.ValidatingWebhookConfiguration](t, docs, "ValidatingWebhookConfiguration")
	assert.Empty(t, v.Annotations["helm.sh/hook"])
	assert.Empty(t, v.Webhooks, "Helm writes no webhooks: serve registers them once it serves")
	webhooks, err := serve.ValidatingWebhooksOf(v, []byte("CA"))
	require.NoError(t, err)
	require.Len(t, webhooks, 2)
	for _, w := range webhooks {
		require.Len(t, w.MatchConditions, 1, w.Name)
		assert.Contains(t, w.MatchConditions[0].Expression, "object.spec != oldObject.spec")
		assert.Contains(t, w.MatchConditions[0].Expression, "has(object.metadata.deletionTimestamp)")
		assert.Nil(t, w.ObjectSelector, "%s: no label exempts an object", w.Name)
		assert.Equal(t, admissionregistrationv1.Fail, *w.FailurePolicy, w.Name)
		assert.Equal(t, []byte("CA"), w.ClientConfig.CABundle, w.Name)
		require.NotNil(t, w.ClientConfig.Service, w.Name)
		assert.Equal(t, "dg-driverguard-webhook", w.ClientConfig.Service.Name)
	}
	assert.Equal(t, "/validate-rbln-driver", *webhooks[0].ClientConfig.Service.Path)
	assert.Equal(t, "/validate-rbln-cluster-policy", *webhooks[1].ClientConfig.Service.Path)
	for _, kind := range []string{"RBLNDriver", "RBLNClusterPolicy"} {
		for _, doc := range docs[kind] {
			var obj metav1.PartialObjectMetadata
			require.NoError(t, yaml.Unmarshal(doc, &obj))
			assert.Equal(t, "dg", obj.Labels[v1alpha1.LabelRelease], "%s %s carries the release label", kind, obj.Name)
		}
	}
	m := one[admissionregistrationv1.MutatingWebhookConfiguration](t, docs, "MutatingWebhookConfiguration")
	assert.Empty(t, m.Webhooks)
	mutating, err := serve.MutatingWebhooksOf(m, nil)
	require.NoError(t, err)
	require.Len(t, mutating, 1)
	assert.Equal(t, admissionregistrationv1.IfNeededReinvocationPolicy, *mutating[0].ReinvocationPolicy)
	require.Len(t, mutating[0].MatchConditions, 1)
	assert.Nil(t, mutating[0].NamespaceSelector)

	docs, _ = manifest(t, map[string]any{"webhook": map[string]any{
		"failurePolicy": "Ignore", "daemonSetNamespaceSelector": map[string]any{"matchLabels": map[string]any{"npu": "yes"}}}})
	v = one[admissionregistrationv1.ValidatingWebhookConfiguration](t, docs, "ValidatingWebhookConfiguration")
	webhooks, err = serve.ValidatingWebhooksOf(v, nil)
	require.NoError(t, err)
	assert.Equal(t, admissionregistrationv1.Ignore, *webhooks[0].FailurePolicy)
	m = one[admissionregistrationv1.MutatingWebhookConfiguration](t, docs, "MutatingWebhookConfiguration")
	mutating, err = serve.MutatingWebhooksOf(m, nil)
	require.NoError(t, err)
	require.NotNil(t, mutating[0].NamespaceSelector)
	assert.Equal(t, map[string]string{"npu": "yes"}, mutating[0].NamespaceSelector.MatchLabels)
}

// TestWebhookPDB: a PodDisruptionBudget only when there is more than one replica.
func TestWebhookPDB(t *testing.T) {
	docs, _ := manifest(t, nil)
	assert.Len(t, docs["PodDisruptionBudget"], 1, "two replicas by default")
	docs, _ = manifest(t, map[string]any{"webhook": map[string]any{"replicas": 1}})
	assert.Empty(t, docs["PodDisruptionBudget"], "minAvailable 1 of one pod would block node drains")
}

// TestWebhookRBACByCertificateMode: the webhook may update its own two webhook
// configurations (by name) to register the webhooks, and in selfSigned mode to inject the CA;
// it never creates or deletes them. Only selfSigned mode rotates certificates.
func TestWebhookRBACByCertificateMode(t *testing.T) {
	rules := func(docs map[string][][]byte) []rbacv1.PolicyRule {
		for _, doc := range docs["ClusterRole"] {
			var r rbacv1.ClusterRole
			require.NoError(t, yaml.UnmarshalStrict(doc, &r))
			if r.Name == "dg-driverguard-webhook" {
				return r.Rules
			}
		}
		t.Fatal("no webhook ClusterRole")
		return nil
	}
	touches := func(rs []rbacv1.PolicyRule) (verbs []string) {
		for _, r := range rs {
			if slices.Contains(r.APIGroups, "admissionregistration.k8s.io") {
				verbs = append(verbs, r.Verbs...)
				if slices.Contains(r.Verbs, "update") {
					assert.Equal(t, []string{"dg-driverguard-webhook"}, r.ResourceNames, "updates by name only")
				}
			}
		}
		return verbs
	}
	docs, _ := manifest(t, nil)
	verbs := touches(rules(docs))
	assert.Contains(t, verbs, "patch")
	assert.NotContains(t, verbs, "create")
	assert.NotContains(t, verbs, "delete")
	assert.Contains(t, webhookArgs(t, docs), "--cert-rotation")
	assert.Contains(t, webhookArgs(t, docs), "--register-webhooks")

	docs, _ = manifest(t, map[string]any{"webhook": map[string]any{"certificates": map[string]any{"mode": "certManager"}}})
	verbs = touches(rules(docs))
	assert.Contains(t, verbs, "update", "serve registers the webhooks")
	assert.NotContains(t, verbs, "create")
	assert.NotContains(t, verbs, "delete")
	// The Role is the audit's (its Lease); no certificate Secret to read or write.
	require.Len(t, docs["Role"], 1)
	var role rbacv1.Role
	require.NoError(t, yaml.UnmarshalStrict(docs["Role"][0], &role))
	for _, r := range role.Rules {
		assert.NotContains(t, r.Resources, "secrets", "no certificate Secret to write")
	}
	docs, _ = manifest(t, map[string]any{"webhook": map[string]any{"certificates": map[string]any{"mode": "certManager"},
		"audit": map[string]any{"enabled": false}}})
	// No certificate Secret to write, no Lease: the Role holds only the Events serve records
	// on its own pod when its webhooks are not registered.
	require.Len(t, docs["Role"], 1)
	role = rbacv1.Role{}
	require.NoError(t, yaml.UnmarshalStrict(docs["Role"][0], &role))
	require.Len(t, role.Rules, 1, "no certificate Secret to write, no Lease")
	assert.Equal(t, []string{"events"}, role.Rules[0].Resources)
	assert.ElementsMatch(t, []string{"", "events.k8s.io"}, role.Rules[0].APIGroups)
	args := webhookArgs(t, docs)
	assert.Contains(t, args, "--register-webhooks")
	assert.NotContains(t, args, "--cert-rotation")
}

// TestWebhookMetricsAndClientCA: metrics are served securely by default, with a reader role
// to bind; a client CA ConfigMap is mounted and required.
func TestWebhookMetricsAndClientCA(t *testing.T) {
	docs, _ := manifest(t, nil)
	args := webhookArgs(t, docs)
	assert.Contains(t, args, "--metrics-secure")
	assert.NotContains(t, strings.Join(args, " "), "--client-ca-file")
	var names []string
	for _, doc := range docs["ClusterRole"] {
		var r rbacv1.ClusterRole
		require.NoError(t, yaml.UnmarshalStrict(doc, &r))
		names = append(names, r.Name)
		if strings.HasSuffix(r.Name, "-metrics-reader") {
			assert.Equal(t, []string{"/metrics", "/policyz"}, r.Rules[0].NonResourceURLs)
		}
	}
	assert.Contains(t, names, "dg-driverguard-webhook-metrics-reader")

	docs, _ = manifest(t, map[string]any{"webhook": map[string]any{"metrics": map[string]any{"secure": false}, "clientCAConfigMap": "apiserver-client-ca"}})
	args = webhookArgs(t, docs)
	assert.NotContains(t, args, "--metrics-secure")
	assert.Contains(t, args, "--client-ca-file=/client-ca/ca.crt")
	d := one[appsv1.Deployment](t, docs, "Deployment")
	var found bool
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == "apiserver-client-ca" {
			found = true
		}
	}
	assert.True(t, found, "the client CA ConfigMap is mounted")
}

// TestWebhookNetworkPolicy: when enabled, the webhook, health and (with peers) metrics ports
// are open and nothing else.
func TestWebhookNetworkPolicy(t *testing.T) {
	docs, _ := manifest(t, nil)
	assert.Empty(t, docs["NetworkPolicy"])
	docs, _ = manifest(t, map[string]any{"webhook": map[string]any{"networkPolicy": map[string]any{
		"enabled": true, "webhookFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/24"}}},
		"metricsFrom": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"name": "monitoring"}}}},
	}}})
	np := one[networkingv1.NetworkPolicy](t, docs, "NetworkPolicy")
	var ports []int32
	for _, r := range np.Spec.Ingress {
		ports = append(ports, r.Ports[0].Port.IntVal)
	}
	assert.Equal(t, []int32{9443, 8080, 8081}, ports)
	assert.Equal(t, "10.0.0.0/24", np.Spec.Ingress[0].From[0].IPBlock.CIDR)
	assert.Empty(t, np.Spec.Ingress[2].From, "the kubelet's probes come from the node")
}

// TestPullSecretRole (README.md "Private registries"): with webhook.audit.checkImages, a Role in the pull Secret
// namespace (default: the release namespace) grants get on Secrets — never list or watch,
// never cluster-wide — and serve is told where to read them; without it, no such Role.
func TestPullSecretRole(t *testing.T) {
	pullRole := func(docs map[string][][]byte) (roles []rbacv1.Role) {
		for _, doc := range docs["Role"] {
			var r rbacv1.Role
			require.NoError(t, yaml.UnmarshalStrict(doc, &r))
			if strings.HasSuffix(r.Name, "-pull-secrets") {
				roles = append(roles, r)
			}
		}
		return roles
	}
	docs, _ := manifest(t, nil)
	assert.Empty(t, pullRole(docs), "no registry check, no Secret to read")
	assert.NotContains(t, strings.Join(webhookArgs(t, docs), " "), "--pull-secret-namespace")

	for _, tc := range []struct{ ns, want string }{{"", "default"}, {"rbln-system", "rbln-system"}} {
		docs, _ = manifest(t, map[string]any{"webhook": map[string]any{"audit": map[string]any{"checkImages": true, "pullSecretNamespace": tc.ns,
			"insecureRegistries": []any{"10.0.0.5:5000"}}}})
		roles := pullRole(docs)
		require.Len(t, roles, 1)
		assert.Equal(t, tc.want, roles[0].Namespace)
		assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}, roles[0].Rules)
		args := webhookArgs(t, docs)
		assert.Contains(t, args, "--pull-secret-namespace="+tc.want)
		assert.Contains(t, args, "--insecure-registry=10.0.0.5:5000")
		for _, doc := range docs["ClusterRole"] {
			var r rbacv1.ClusterRole
			require.NoError(t, yaml.UnmarshalStrict(doc, &r))
			for _, rule := range r.Rules {
				assert.NotContains(t, rule.Resources, "secrets", "never cluster-wide: %s", r.Name)
			}
		}
	}
}

package crd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/operator"
)

// TestRefusalsSayFieldRuleAndFix (docs/webhook.md "With the webhook away"): with the webhook away, `kubectl apply` of an
// object that breaks a rule is refused by the API server with a message that names the
// field, the rule and the fix, as the webhook's does.
func TestRefusalsSayFieldRuleAndFix(t *testing.T) {
	requireSetup(t)
	sel := map[string]string{"x": "y"}
	for _, tc := range []struct {
		name string
		obj  client.Object
		says []string
	}{
		{"name", driver("rbln-driver-a.b", sel),
			[]string{"metadata.name", "rbln-driver-a.b is not a DNS-1123 label", "written onto nodes as the rebellions.ai/npu.driver.owner label value", "rename the driver"}},
		{"empty selector", driver("rbln-driver-a", nil),
			[]string{"spec.nodeSelector: Required value", "only the default resource rbln-driver may have an empty selector", "select the nodes this driver owns, e.g. {rebellions.ai/npu.family: atom}"}},
		{"reserved key", driver("rbln-driver-a", map[string]string{operator.LabelOwner: "x"}),
			[]string{"spec.nodeSelector: Forbidden", "rebellions.ai/npu.driver.owner is reserved", "remove it from the selector and select nodes by your own labels"}},
		{"label key", driver("rbln-driver-a", map[string]string{"bad key!": "x"}),
			[]string{"spec.nodeSelector", "key bad key! is not a valid label key", "e.g. rebellions.ai/npu.family"}},
		{"label value", driver("rbln-driver-a", map[string]string{"k": "two words"}),
			[]string{"spec.nodeSelector", "the value of k is not a valid label value", "at most 63 characters"}},
		{"label value length", driver("rbln-driver-a", map[string]string{"k": strings.Repeat("v", 64)}),
			[]string{"spec.nodeSelector.k", "63"}},
		{"selector keys", driver("rbln-driver-a", func() map[string]string {
			m := map[string]string{}
			for i := range validation.MaxSelectorKeys + 1 {
				m[fmt.Sprintf("k%d", i)] = "v"
			}
			return m
		}()), []string{"spec.nodeSelector", "must have at most 64 items"}},
		{"version", driver("rbln-driver-a", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "3.2.2+build1" }),
			[]string{"spec.version", "3.2.2+build1 cannot start an OCI image tag", "use letters, digits, '_', '.' and '-' only"}},
		{"digest image", driver("rbln-driver-a", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Image = "rebellions/rbln-driver@sha256:" + strings.Repeat("a", 64) }),
			[]string{"spec.image", "rbln-npu-operator cannot build a driver image from a digest", "set the repository (e.g. rebellions/rbln-driver)"}},
		{"digest version", driver("rbln-driver-a", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "sha256:" + strings.Repeat("a", 64) }),
			[]string{"spec.version", "rbln-npu-operator cannot build a driver image from a digest", "a version (e.g. 3.2.2)"}},
		{"pull policy", driver("rbln-driver-a", sel, func(s *v1alpha1.RBLNDriverSpec) { s.ImagePullPolicy = "Sometimes" }),
			[]string{"spec.imagePullPolicy", "unsupported value 'Sometimes'", "use one of Always, IfNotPresent, Never, or leave it unset"}},
		{"manager pull policy", driver("rbln-driver-a", sel, func(s *v1alpha1.RBLNDriverSpec) {
			s.Manager = &v1alpha1.ManagerSpec{ImagePullPolicy: "always"}
		}), []string{"spec.manager.imagePullPolicy", "use one of Always, IfNotPresent, Never"}},
		{"annotation key", driver("rbln-driver-a", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Annotations = map[string]string{"a b": "v"} }),
			[]string{"spec.annotations", "key a b is not a valid annotation key"}},
		{"annotation size", driver("rbln-driver-a", sel, func(s *v1alpha1.RBLNDriverSpec) {
			s.Annotations = map[string]string{"k": strings.Repeat("v", validation.MaxAnnotationBytes)}
		}), []string{"spec.annotations", "may hold at most 262144 bytes of keys and values together"}},
		{"pull secrets", driver("rbln-driver-a", sel, func(s *v1alpha1.RBLNDriverSpec) {
			s.ImagePullSecrets = make([]string, validation.MaxPullSecrets+1)
		}), []string{"spec.imagePullSecrets", "must have at most 64 items"}},
		{"tolerations", driver("rbln-driver-a", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Tolerations = make([]corev1.Toleration, 257) }),
			[]string{"spec.tolerations", "must have at most 256 items"}},
		{"upgrade policy", clusterPolicy(func(up *v1alpha1.UpgradePolicy) { up.Drain.TimeoutSeconds = -5 }),
			[]string{"spec.driver.upgradePolicy.drain.timeoutSeconds", "must be 0 or greater", "use 0 for unlimited or no timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := served(t, tc.obj)
			require.Error(t, err)
			for _, s := range tc.says {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func clusterPolicy(change func(*v1alpha1.UpgradePolicy)) *v1alpha1.RBLNClusterPolicy {
	p := &v1alpha1.RBLNClusterPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RBLNClusterPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterPolicyName},
	}
	change(&p.Spec.Driver.UpgradePolicy)
	return p
}

// TestClusterPolicyCRDAgreesWithTheWebhook: every count and timeout of the upgrade policy at
// -1, 0, 1 and the largest int32, through Go and through the CRD.
func TestClusterPolicyCRDAgreesWithTheWebhook(t *testing.T) {
	requireSetup(t)
	fields := map[string]func(*v1alpha1.UpgradePolicy, int32){
		"maxParallelUpgrades":  func(u *v1alpha1.UpgradePolicy, v int32) { u.MaxParallelUpgrades = v },
		"waitForCompletion":    func(u *v1alpha1.UpgradePolicy, v int32) { u.WaitForCompletion.TimeoutSeconds = v },
		"npuPodDeletion":       func(u *v1alpha1.UpgradePolicy, v int32) { u.NPUPodDeletion.TimeoutSeconds = v },
		"drain":                func(u *v1alpha1.UpgradePolicy, v int32) { u.Drain.TimeoutSeconds = v },
		"rebootTimeoutSeconds": func(u *v1alpha1.UpgradePolicy, v int32) { u.Reboot.RebootTimeoutSeconds = v },
	}
	cases := 0
	for name, set := range fields {
		for _, v := range []int32{-1, 0, 1, 1<<31 - 1, -1 << 31} {
			p := clusterPolicy(func(u *v1alpha1.UpgradePolicy) { set(u, v) })
			errs, _ := validation.ValidateUpgradePolicy(&p.Spec.Driver.UpgradePolicy, nil)
			err := served(t, p)
			assert.Equal(t, len(errs) == 0, err == nil, "%s=%d: Go %v, the API server %v", name, v, errs, err)
			cases++
		}
	}
	t.Logf("%d RBLNClusterPolicies, 0 disagreements unless listed above", cases)
}

package webhook_test

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

func TestClusterPolicyRules(t *testing.T) {
	t.Parallel()
	hooks := webhook.New(state(nil, nil, nil), webhook.Options{})
	tests := []struct {
		name   string
		mutate func(*v1alpha1.UpgradePolicy)
		rename string
		deny   []string
		warn   []string
	}{
		{name: "chart defaults", mutate: func(*v1alpha1.UpgradePolicy) {}},
		{name: "negative maxParallelUpgrades", mutate: func(u *v1alpha1.UpgradePolicy) { u.MaxParallelUpgrades = -1 },
			deny: []string{"spec.driver.upgradePolicy.maxParallelUpgrades: Invalid value: -1: must be 0 or greater", "use 0 for unlimited"}},
		{name: "every negative timeout", mutate: func(u *v1alpha1.UpgradePolicy) {
			u.WaitForCompletion.TimeoutSeconds, u.NPUPodDeletion.TimeoutSeconds, u.Drain.TimeoutSeconds, u.Reboot.RebootTimeoutSeconds = -1, -2, -3, -4
		}, deny: []string{
			"spec.driver.upgradePolicy.waitForCompletion.timeoutSeconds: Invalid value: -1",
			"spec.driver.upgradePolicy.npuPodDeletion.timeoutSeconds: Invalid value: -2",
			"spec.driver.upgradePolicy.drain.timeoutSeconds: Invalid value: -3",
			"spec.driver.upgradePolicy.reboot.rebootTimeoutSeconds: Invalid value: -4",
		}},
		{name: "reboot without drain is a warning", mutate: func(u *v1alpha1.UpgradePolicy) { u.Reboot.Enable = true },
			warn: []string{"spec.driver.upgradePolicy.reboot.enable is true but spec.driver.upgradePolicy.drain.enable is false", "enable them together"}},
		{name: "reboot with drain", mutate: func(u *v1alpha1.UpgradePolicy) { u.Reboot.Enable, u.Drain.Enable = true, true }},
		{name: "another name is a warning", mutate: func(*v1alpha1.UpgradePolicy) {}, rename: "other",
			warn: []string{`rbln-npu-operator reads only one, the oldest that is not ignored`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cp := wt.ClusterPolicy(false)
			tt.mutate(&cp.Spec.Driver.UpgradePolicy)
			if tt.rename != "" {
				cp.Name = tt.rename
			}
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
				req := wt.Request(op, cp, nil)
				if op == admissionv1.Update { // an update that changes the spec (one that does not is allowed as it is)
					old := wt.ClusterPolicy(false)
					old.Name = cp.Name
					old.Spec.Driver.UpgradePolicy.NPUPodDeletion.TimeoutSeconds++
					req = wt.Request(op, cp, old)
				}
				expect(t, handle(t, hooks, webhook.PathValidateClusterPolicy, req), len(tt.deny) == 0, tt.deny, tt.warn)
			}
		})
	}
}

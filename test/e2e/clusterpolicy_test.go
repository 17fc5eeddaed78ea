package e2e

import (
	"strings"
	"testing"

	"github.com/driverguard/driverguard/api/v1alpha1"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestClusterPolicyRules: upgradePolicy sanity through the API server.
func TestClusterPolicyRules(t *testing.T) {
	c, w := newClient(t)

	cp := wt.ClusterPolicy(false)
	cp.Spec.Driver.UpgradePolicy.Reboot.Enable = true
	if err := dryRun(c, cp); err != nil {
		t.Fatal(err)
	}
	mustWarn(t, w.Take(), "spec.driver.upgradePolicy.reboot.enable is true but spec.driver.upgradePolicy.drain.enable is false", "enable them together")

	cp.Spec.Driver.UpgradePolicy.Drain.Enable = true
	if err := dryRun(c, cp); err != nil {
		t.Fatal(err)
	}
	if got := w.Take(); len(got) > 0 {
		t.Errorf("unexpected warnings %q", got)
	}

	other := wt.ClusterPolicy(false)
	other.Name = "another-policy"
	if err := dryRun(c, other); err != nil {
		t.Fatal(err)
	}
	mustWarn(t, w.Take(), `rbln-npu-operator reads only one, the oldest that is not ignored`)

	// Negative counts and timeouts: the CRD schema (minimum 0) rejects them before the
	// validating webhook runs; the webhook's own denial of the same rule is asserted by
	// `driverguard review` (test/testdata/review/requests/clusterpolicy-negative.json).
	neg := wt.ClusterPolicy(false)
	neg.Spec.Driver.UpgradePolicy.MaxParallelUpgrades = -1
	neg.Spec.Driver.UpgradePolicy.Drain.TimeoutSeconds = -5
	err := dryRun(c, neg)
	if err == nil || !strings.Contains(err.Error(), "spec.driver.upgradePolicy.maxParallelUpgrades") || !strings.Contains(err.Error(), "should be greater than or equal to 0") {
		t.Errorf("negative values: %v", err)
	}
	_ = v1alpha1.ClusterPolicyName
}

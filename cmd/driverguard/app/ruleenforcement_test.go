package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/action"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// teamPolicy trials its deny rule (rule-level METADATA) while its warn rule warns.
const teamPolicy = `package driverguard.team

# METADATA
# title: Drivers carry the owning team
# custom:
#   enforcement: audit
deny contains "drivers need the team annotation" if {
	input.object.kind == "RBLNDriver"
	not input.object.metadata.annotations["team.example/owner"]
}

warn contains "drivers should name a contact" if {
	input.object.kind == "RBLNDriver"
	not input.object.metadata.annotations["team.example/contact"]
}
`

// TestRuleLevelEnforcement: METADATA custom.enforcement above one deny rule trials that rule
// in check, review (the webhook's verdict) and audit alike, while the package's warn rule
// warns; --enforcement on the package sets both rules; policy list shows each rule's.
func TestRuleLevelEnforcement(t *testing.T) {
	dir := t.TempDir()
	policies := filepath.Join(dir, "policies")
	require.NoError(t, os.MkdirAll(policies, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(policies, "team.rego"), []byte(teamPolicy), 0o600))
	const denial = "driverguard.team: drivers need the team annotation"

	t.Run("check", func(t *testing.T) {
		r := run(t, "", "check", "-f", exampleValues, "--policy", policies)
		assert.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver\n")
		assert.Contains(t, r.stdout, "  AUDIT  "+denial+"\n")
		assert.Contains(t, r.stdout, "  WARN  driverguard.team: drivers should name a contact\n")
		assert.NotContains(t, r.stdout, "FAIL  "+denial)

		r = run(t, "", "check", "-f", exampleValues, "--policy", policies, "--enforcement", "team=deny")
		assert.Equal(t, ExitInvalid, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "  FAIL  "+denial+"\n")
	})

	t.Run("review", func(t *testing.T) {
		req := writeTemp(t, "req.json", string(wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver", nil), nil)))))
		answer := func(args ...string) (int, *admissionv1.AdmissionResponse) {
			r := run(t, "", append([]string{"review", "-f", req, "--policy", policies}, args...)...)
			var review admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &review), r.stdout+r.stderr)
			require.NotNil(t, review.Response)
			return r.code, review.Response
		}
		code, resp := answer()
		assert.Equal(t, ExitOK, code)
		assert.True(t, resp.Allowed)
		assert.Equal(t, []string{"policy driverguard.team: drivers should name a contact"}, resp.Warnings, "the rule on trial neither denies nor warns")

		code, resp = answer("--enforcement", "team=deny")
		assert.Equal(t, ExitInvalid, code)
		assert.False(t, resp.Allowed)
		assert.Contains(t, resp.Result.Message, "policy "+denial)
	})

	t.Run("audit", func(t *testing.T) {
		nodes := writeTemp(t, "nodes.yaml", `apiVersion: v1
kind: Node
metadata:
  name: n1
  labels:
    rebellions.ai/npu.deploy.driver: "true"
    rebellions.ai/npu.driver.owner: rbln-driver
    rebellions.ai/npu.family: atom
    feature.node.kubernetes.io/system-os_release.ID: ubuntu
    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
    feature.node.kubernetes.io/kernel-version.full: 6.8.0-90-generic
`)
		rendered := run(t, "", "render")
		require.Equal(t, ExitOK, rendered.code, rendered.stderr)
		drivers := writeTemp(t, "drivers.yaml", rendered.stdout)
		args := []string{"audit", "--nodes", nodes, "--drivers", drivers, "--policy", policies}
		r := run(t, "", args...)
		assert.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver\n  WARN   driverguard.team: drivers should name a contact\n  AUDIT  "+denial+"\n")
		assert.Contains(t, r.stdout, "2 reports: 1 fail (0 enforced), 1 warn")

		r = run(t, "", append(args, "--enforcement", "team=deny")...)
		assert.Equal(t, ExitInvalid, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "  FAIL   "+denial+"\n")
	})

	t.Run("policy list", func(t *testing.T) {
		r := run(t, "", "policy", "list", "--policy", policies)
		require.Equal(t, ExitOK, r.code, r.stderr)
		assert.Regexp(t, `(?m)^driverguard\.team\.deny\s+deny\s+audit\s+enabled\s+policy\s+\S+team\.rego:7\s+Drivers carry the owning team$`, r.stdout)
		assert.Regexp(t, `(?m)^driverguard\.team\.warn\s+warn\s+warn\s+enabled\s+policy\s+`, r.stdout)
		assert.Regexp(t, `(?m)^driverguard\.lib\.pinned_version\.deny\s+deny\s+deny\s+enabled\s+library\s+`, r.stdout)

		r = run(t, "", "policy", "list", "--policy", policies, "-o", "json")
		require.Equal(t, ExitOK, r.code, r.stderr)
		var listed []action.ListedRule
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed))
		enforcement := map[string]string{} // each body's mode and enforcement
		for _, l := range listed {
			if l.Policy == "team" {
				enforcement[l.ID] = string(l.Mode) + " " + string(l.Enforcement)
			}
		}
		assert.Equal(t, map[string]string{"driverguard.team.deny": "audit audit", "driverguard.team.warn": "deny warn"}, enforcement)
		r = run(t, "", "policy", "rules", "--policy", policies, "-o", "json")
		require.Equal(t, ExitOK, r.code, r.stderr)
		var res struct{ Rules []action.Rule }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
		require.NotEmpty(t, res.Rules)
		for _, rule := range res.Rules {
			if rule.ID == "driverguard.team.deny" {
				assert.Equal(t, "audit", string(rule.Enforcement))
			}
		}
	})
}

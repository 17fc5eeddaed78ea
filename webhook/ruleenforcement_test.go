package webhook_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestRuleEnforcementAtAdmission: METADATA custom.enforcement above one rule — not the
// package — decides what that rule does at admission: a deny rule on trial neither denies nor
// warns, one in warn warns; the package's other rule keeps its own.
func TestRuleEnforcementAtAdmission(t *testing.T) {
	t.Parallel()
	const body = `
deny contains "drivers need the team annotation" if {
	input.object.kind == "RBLNDriver"
	not input.object.metadata.annotations["team.example/owner"]
}

warn contains "drivers should name a contact" if {
	input.object.kind == "RBLNDriver"
	not input.object.metadata.annotations["team.example/contact"]
}
`
	const contact = "policy driverguard.team: drivers should name a contact"
	req := wt.Request(admissionv1.Create, wt.Driver("rbln-driver-rebel", wt.Sel(operator.LabelFamily, "rebel")), nil)
	for _, tt := range []struct {
		name, meta string
		allowed    bool
		deny, warn []string
	}{
		{"no METADATA: the deny rule denies", "", false, []string{"policy driverguard.team: drivers need the team annotation"}, []string{contact}},
		{"the deny rule on trial", "# METADATA\n# custom:\n#   enforcement: audit\n", true, nil, []string{contact}},
		{"the deny rule warns", "# METADATA\n# custom:\n#   enforcement: warn\n", true, nil, []string{"policy driverguard.team: drivers need the team annotation", contact}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writePolicy(t, dir, "team.rego", "package driverguard.team\n"+tt.meta+body)
			engine, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nil, nil), webhook.Options{Policy: engine})
			expect(t, handle(t, hooks, webhook.PathValidateDriver, req), tt.allowed, tt.deny, tt.warn)
		})
	}
}

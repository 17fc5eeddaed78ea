package policy_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/policy"
)

// trial is a policy a team trials: METADATA custom.enforcement says what its messages do.
func trial(mode string) string {
	meta := ""
	if mode != "" {
		meta = "# METADATA\n# title: no x\n# custom:\n#   enforcement: " + mode + "\n"
	}
	return meta + "package driverguard.trial\n\ndeny contains \"trial deny\"\n\nwarn contains \"trial warn\"\n"
}

const enforced = "package driverguard.enforced\n\ndeny contains \"enforced deny\"\n"

// TestEnforcement: a deny policy's deny messages deny; a warn policy's warn; an audit
// policy's messages (deny and warn) are audit findings only; the caller's override wins over
// the package's METADATA; the other packages keep theirs.
func TestEnforcement(t *testing.T) {
	in := &policy.Input{Object: map[string]any{"kind": "RBLNDriver"}, Operation: "CREATE", Source: policy.SourceRender}
	tests := []struct {
		name, declared string
		override       map[string]policy.Enforcement
		deny, warn     []policy.Message
		audit          []policy.Message
		listed         policy.Enforcement
	}{
		{name: "default is deny", declared: "",
			deny:   []policy.Message{{Package: "driverguard.enforced", Rule: "deny", Msg: "enforced deny"}, {Package: "driverguard.trial", Rule: "deny", Msg: "trial deny"}},
			warn:   []policy.Message{{Package: "driverguard.trial", Rule: "warn", Msg: "trial warn"}},
			listed: policy.EnforceDeny},
		{name: "warn: its denies warn", declared: "warn",
			deny:   []policy.Message{{Package: "driverguard.enforced", Rule: "deny", Msg: "enforced deny"}},
			warn:   []policy.Message{{Package: "driverguard.trial", Rule: "deny", Msg: "trial deny", Enforcement: policy.EnforceWarn}, {Package: "driverguard.trial", Rule: "warn", Msg: "trial warn"}},
			listed: policy.EnforceWarn},
		{name: "audit: reported only", declared: "audit",
			deny:   []policy.Message{{Package: "driverguard.enforced", Rule: "deny", Msg: "enforced deny"}},
			audit:  []policy.Message{{Package: "driverguard.trial", Rule: "deny", Msg: "trial deny", Enforcement: policy.EnforceAudit}, {Package: "driverguard.trial", Rule: "warn", Msg: "trial warn", Enforcement: policy.EnforceAudit}},
			listed: policy.EnforceAudit},
		{name: "the caller's override wins", declared: "audit", override: map[string]policy.Enforcement{"trial": policy.EnforceDeny},
			deny:   []policy.Message{{Package: "driverguard.enforced", Rule: "deny", Msg: "enforced deny"}, {Package: "driverguard.trial", Rule: "deny", Msg: "trial deny"}},
			warn:   []policy.Message{{Package: "driverguard.trial", Rule: "warn", Msg: "trial warn"}},
			listed: policy.EnforceDeny},
		{name: "an override by full package name", declared: "", override: map[string]policy.Enforcement{"driverguard.trial": policy.EnforceAudit},
			deny:   []policy.Message{{Package: "driverguard.enforced", Rule: "deny", Msg: "enforced deny"}},
			audit:  []policy.Message{{Package: "driverguard.trial", Rule: "deny", Msg: "trial deny", Enforcement: policy.EnforceAudit}, {Package: "driverguard.trial", Rule: "warn", Msg: "trial warn", Enforcement: policy.EnforceAudit}},
			listed: policy.EnforceAudit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "trial.rego", trial(tt.declared))
			writeFile(t, dir, "enforced.rego", enforced)
			e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Enforcement: tt.override})
			d, err := e.Evaluate(t.Context(), in)
			require.NoError(t, err)
			assert.Equal(t, tt.deny, d.Deny)
			assert.Equal(t, nonNil(tt.warn), d.Warn)
			assert.Equal(t, tt.audit, d.Audit)
			for _, info := range e.Policies() {
				if info.Package == "driverguard.trial" {
					assert.Equal(t, tt.listed, info.Enforcement)
				} else {
					assert.Equal(t, policy.EnforceDeny, info.Enforcement)
				}
			}
		})
	}
}

func nonNil(ms []policy.Message) []policy.Message {
	if ms == nil {
		return []policy.Message{}
	}
	return ms
}

// TestEnforcementErrors: a mode that is not one, two files of a package that disagree, and an
// override of a policy that does not exist are load errors naming where.
func TestEnforcementErrors(t *testing.T) {
	t.Run("not a mode", func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, "trial.rego", trial("enforce"))
		_, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
		var le *policy.LoadError
		require.ErrorAs(t, err, &le)
		assert.Contains(t, err.Error(), path+`:1:1: package driverguard.trial: METADATA custom.enforcement: enforcement "enforce" is not one of deny, warn, audit`)
	})
	t.Run("two files disagree", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "a.rego", trial("audit"))
		writeFile(t, dir, "b.rego", "# METADATA\n# custom:\n#   enforcement: deny\npackage driverguard.trial\n\ndeny contains \"more\"\n")
		_, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "METADATA custom.enforcement is deny here and audit in another file of the package; declare it once")
	})
	t.Run("an unknown policy", func(t *testing.T) {
		_, err := policy.New(t.Context(), policy.Options{Enforcement: map[string]policy.Enforcement{"lib.pinned_versions": policy.EnforceAudit}, Metrics: prometheus.NewRegistry()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `--enforcement: cannot set the enforcement of "lib.pinned_versions": no policy has that name; the policies are lib.allowed_registries,`)
	})
	t.Run("an unknown mode", func(t *testing.T) {
		_, err := policy.New(t.Context(), policy.Options{Enforcement: map[string]policy.Enforcement{"lib.pinned_version": "off"}, Metrics: prometheus.NewRegistry()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `--enforcement: enforcement of "lib.pinned_version": "off" is not one of deny, warn, audit`)
	})
}

package redaction

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/test/controlplane"
)

// imageWarnings are the DriverImageNotVerified results of the ClusterReports, by the hostile
// registry whose image they are about.
func imageWarnings(f *fixture, reports *openreports.ClusterReportList) map[registrytest.Misbehaviour][]openreports.ReportResult {
	out := map[registrytest.Misbehaviour][]openreports.ReportResult{}
	for _, cr := range reports.Items {
		for _, r := range cr.Results {
			if r.Rule != audit.RuleImageNotVerified {
				continue
			}
			for _, h := range f.regs {
				if strings.HasPrefix(r.Properties["image"], h.Host+"/") {
					out[h.How] = append(out[h.How], r)
				}
			}
		}
	}
	return out
}

// TestServeAuditReportsHoldNoCredentials (docs/audit.md "serve --audit"): `driverguard serve --audit
// --audit-check-images`, a process of its own reading the drivers' pull Secrets, asks the
// hostile registries twice (two processes one after the other: two image passes, the second
// meeting the realm that carries the first's Authorization) and writes ClusterReports that,
// read back from the API server with every Event and serve's log (debug level), hold no form
// of any credential, no Authorization a registry was sent and nothing a registry wrote — and
// still say, for each registry's images, why they were not verified.
func TestServeAuditReportsHoldNoCredentials(t *testing.T) {
	controlplane.RequireSetup(t, suite.setupErr)
	f := newFixture(t)
	c, err := suite.plane.Client(nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.DeleteAllOf(context.Background(), &openreports.ClusterReport{})
	})
	f.apply(t, c)

	args := []string{"--audit", "--audit-check-images", "--pull-secret-namespace", driverNamespace, "--namespace", metav1.NamespaceDefault,
		"--leader-elect=false", "--audit-interval", "10s", "--audit-image-interval", "1m", "--log-level", "debug"}
	var (
		logs   [2]controlplane.LogBuffer
		stored strings.Builder
	)
	for pass := range 2 {
		replica, err := suite.plane.StartReplica(suite.bin, args, &logs[pass])
		require.NoError(t, err)
		// The pass's reports: every registry's images warned about, MalformedRealm's for the
		// reason the pass meets (refused first, the malformed challenge after).
		var (
			reports  *openreports.ClusterReportList
			warnings map[registrytest.Misbehaviour][]openreports.ReportResult
		)
		deadline := time.Now().Add(60 * time.Second)
		for {
			reports = &openreports.ClusterReportList{}
			require.NoError(t, c.List(t.Context(), reports))
			warnings = imageWarnings(f, reports)
			done := len(warnings) == len(f.regs)
			for _, w := range warnings[registrytest.MalformedRealm] {
				done = done && (pass == 0 || w.Properties["reason"] == expected[registrytest.MalformedRealm].reason)
			}
			if done {
				break
			}
			require.True(t, time.Now().Before(deadline), "pass %d: the reports did not warn about every registry within 60s (%d of %d); serve's log:\n%s",
				pass+1, len(warnings), len(f.regs), logs[pass].Tail(40))
			time.Sleep(200 * time.Millisecond)
		}
		replica.Stop()
		for _, h := range f.regs {
			want := expected[h.How]
			for _, w := range warnings[h.How] {
				if pass == 0 && h.How == registrytest.MalformedRealm {
					// the registry refuses its first request and answers the malformed challenge
					// after: which one an image's check meets depends on the order of the checks
					assert.Contains(t, []string{"unauthorized", want.reason}, w.Properties["reason"], w.Description)
					continue
				}
				assert.Equal(t, want.reason, w.Properties["reason"], "pass %d: %s: %s", pass+1, h.How, w.Description)
				assert.Contains(t, w.Description, want.says, "pass %d: %s says why", pass+1, h.How)
				assert.Equal(t, "Secret "+driverNamespace+"/cred-"+string(h.How), w.Properties["credentials"], "names the Secret, never its content")
			}
		}
		events := &eventsv1.EventList{}
		require.NoError(t, c.List(t.Context(), events))
		coreEvents := &corev1.EventList{}
		require.NoError(t, c.List(t.Context(), coreEvents))
		for _, v := range []any{reports, events, coreEvents} {
			b, err := json.Marshal(v)
			require.NoError(t, err)
			stored.Write(b)
		}
	}
	for _, h := range f.regs {
		if h.How != registrytest.CredentialRealmHost {
			assert.NotEmpty(t, h.Seen(), "%s was sent the credentials it tries to get back", h.How)
		}
	}
	never := f.forbidden()
	holdsNone(t, "the ClusterReports and Events read back from the API server", stored.String(), never)
	for i := range logs {
		require.NotEmpty(t, logs[i].String())
		holdsNone(t, fmt.Sprintf("serve's log (pass %d)", i+1), logs[i].String(), never)
	}
}

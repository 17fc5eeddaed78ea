package audit

import (
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/operator"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// content is what a ClusterReport says, without what the API server sets and without the
// results' timestamps (the time of the pass that wrote them).
type content struct {
	Labels  map[string]string
	Scope   any
	Summary openreports.ReportSummary
	Results []openreports.ReportResult
}

func contentOf(cr *openreports.ClusterReport) content {
	c := content{Labels: cr.Labels, Scope: cr.Scope, Summary: cr.Summary}
	for _, r := range cr.Results {
		r.Timestamp = metav1.Timestamp{}
		c.Results = append(c.Results, r)
	}
	return c
}

// quiet waits until n passes have run since the call, and returns the report writes (applies
// and deletes) they made and the reports they read whole.
func quiet(t *testing.T, p *passes, n int) (writes, reads int) {
	t.Helper()
	from := p.count()
	deadline := time.Now().Add(30 * time.Second)
	for p.count() < from+n {
		require.True(t, time.Now().Before(deadline), "fewer than %d passes in 30s", n)
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range p.since(from) {
		require.NoError(t, s.Err)
		writes += s.Written.Applied + s.Written.Deleted
		reads += s.Written.Read
	}
	return writes, reads
}

func writes(t *testing.T, p *passes, n int) int {
	t.Helper()
	w, _ := quiet(t, p, n)
	return w
}

// TestHandEditedReportIsRestored: whatever is edited in a ClusterReport by hand — its
// results, its summary, its scope, the labels the audit owns — and whatever annotations the
// edit keeps, the next pass writes what the audit finds again; a pass that finds the report
// as it would write it writes nothing (its resourceVersion stays).
func TestHandEditedReportIsRestored(t *testing.T) {
	plane, p := start(t)
	c := newClient(t, plane, nil)
	atom := wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))
	atom.Labels = map[string]string{v1alpha1.LabelInstance: "atom"}
	create(t, c,
		wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver-atom")),
		wt.Node("n2", withOwner(wt.CandidateLabels(), "rbln-driver-gone")),
		atom,
		wt.ClusterPolicy(false),
	)
	const name = "rbln-driver-atom"
	report(t, c, name, hasRule("StaleOwnerLabel"))
	// The objects reach the view over a few passes: wait for five passes in a row that write
	// nothing.
	deadline := time.Now().Add(20 * time.Second)
	for writes(t, p, 5) > 0 {
		require.True(t, time.Now().Before(deadline), "the audit still writes reports 20s after the cluster was created")
	}
	want := report(t, c, name, hasRule("StaleOwnerLabel"))

	get := func() *openreports.ClusterReport {
		cr := &openreports.ClusterReport{}
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, cr))
		return cr
	}
	// restored waits until the report says again what it said before the edit, and the pass
	// that wrote it is recorded (passes are recorded after they wrote); then counts the writes
	// of five more passes.
	restored := func(t *testing.T, from int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got := get()
			wrote := false
			for _, s := range p.since(from) {
				wrote = wrote || s.Written.Applied > 0
			}
			if wrote && assert.ObjectsAreEqual(contentOf(want), contentOf(got)) {
				break
			}
			require.True(t, time.Now().Before(deadline), "the edited report was not restored within 20s: labels %v, scope %v, summary %+v, %d results",
				got.Labels, got.Scope, got.Summary, len(got.Results))
			time.Sleep(50 * time.Millisecond)
		}
		assert.Zero(t, writes(t, p, 5), "report writes after the report was restored")
	}
	for _, tt := range []struct {
		name string
		edit func(cr *openreports.ClusterReport)
	}{
		{"a failure turned into a pass, the summary with it", func(cr *openreports.ClusterReport) {
			for i := range cr.Results {
				if cr.Results[i].Result == "fail" {
					cr.Results[i].Result, cr.Results[i].Severity = "pass", "info"
				}
			}
			cr.Summary.Pass += cr.Summary.Fail
			cr.Summary.Fail = 0
		}},
		{"the failures removed", func(cr *openreports.ClusterReport) {
			var keep []openreports.ReportResult
			for _, r := range cr.Results {
				if r.Result != "fail" {
					keep = append(keep, r)
				}
			}
			cr.Results = keep
		}},
		{"a result added", func(cr *openreports.ClusterReport) {
			cr.Results = append(cr.Results, openreports.ReportResult{Source: audit.ReportSource, Policy: "driverguard", Rule: "admission", Result: "pass", Description: "all good"})
			cr.Summary.Pass++
		}},
		{"a message reworded", func(cr *openreports.ClusterReport) {
			cr.Results[0].Description = "nothing to see here"
		}},
		{"the scope moved to another driver", func(cr *openreports.ClusterReport) {
			cr.Scope.Name = "rbln-driver-other"
		}},
		{"the instance label removed", func(cr *openreports.ClusterReport) {
			delete(cr.Labels, v1alpha1.LabelInstance)
		}},
		{"the managed-by label removed: the report is the audit's by its name", func(cr *openreports.ClusterReport) {
			delete(cr.Labels, audit.LabelManagedBy)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cr := get()
			before := cr.Annotations
			tt.edit(cr)
			from := p.count()
			require.NoError(t, c.Update(t.Context(), cr))
			assert.Equal(t, before, get().Annotations, "the edit keeps the annotations")
			restored(t, from)
		})
	}
	t.Run("a report an earlier version wrote, with the content hash it trusted, is rewritten once without it", func(t *testing.T) {
		const legacy = "driverguard.rebellions.ai/content-hash"
		cr := get()
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cr)
		require.NoError(t, err)
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion(openreports.GroupVersion.String())
		u.SetKind("ClusterReport")
		u.SetManagedFields(nil)
		u.SetResourceVersion("")
		u.SetAnnotations(map[string]string{legacy: "0123456789abcdef"})
		from := p.count()
		require.NoError(t, c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("driverguard-audit"), client.ForceOwnership))
		require.Contains(t, get().Annotations, legacy)
		restored(t, from)
		assert.NotContains(t, get().Annotations, legacy)
	})
	t.Run("a new auditor (another replica, a restart) reads the reports once and writes none", func(t *testing.T) {
		var last *audit.Outcome
		for _, s := range p.since(0) {
			if s.Outcome != nil {
				last = s.Outcome
			}
		}
		require.NotNil(t, last)
		w := &audit.Writer{Client: c}
		st, err := w.Write(t.Context(), last, time.Now())
		require.NoError(t, err)
		assert.Zero(t, st.Applied)
		assert.Equal(t, len(last.Reports), st.Read)
		assert.Equal(t, len(last.Reports), st.Unchanged)
		st, err = w.Write(t.Context(), last, time.Now())
		require.NoError(t, err)
		assert.Equal(t, audit.WriteStats{Unchanged: len(last.Reports)}, st, "its second pass reads the metadata only")
	})
	t.Run("a label of someone else's is left alone and causes no write", func(t *testing.T) {
		cr := get()
		cr.Labels["team.example/owner"] = "platform"
		require.NoError(t, c.Update(t.Context(), cr))
		rv := get().ResourceVersion
		assert.Zero(t, writes(t, p, 5), "report writes after a label the audit does not own was added")
		assert.Equal(t, rv, get().ResourceVersion)
		assert.Equal(t, "platform", get().Labels["team.example/owner"])
	})
	t.Run("an unchanged standing writes nothing", func(t *testing.T) {
		rv := get().ResourceVersion
		w, r := quiet(t, p, 10)
		assert.Zero(t, w, "report writes")
		assert.Zero(t, r, "reports read whole though their metadata showed them as last written")
		assert.Equal(t, rv, get().ResourceVersion, "the report's resourceVersion moved over ten passes of an unchanged standing")
	})
}

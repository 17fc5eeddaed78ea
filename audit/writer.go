package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// AnnotationContentHash holds the hash of a report's content without its timestamps: a
// writer compares it with what it would write and writes only when they differ.
const AnnotationContentHash = "driverguard.rebellions.ai/content-hash"

// fieldOwner is the field manager of the reports (server-side apply).
const fieldOwner = "driverguard-audit"

// Writer writes an outcome's ClusterReports: a report whose content changed (or that is
// missing, e.g. deleted by hand) is applied, an unchanged one is not touched, and the reports
// it wrote for drivers that are gone are deleted. It reads the reports' metadata only.
type Writer struct {
	// Client writes; Reader lists the reports' metadata (serve: the API reader, not the
	// cache, so that a report deleted by hand is seen at the next pass). Nil: Client.
	Client client.Client
	Reader client.Reader
	// Recorder, when set, gets an Event on an RBLNDriver when a failure of a rule that
	// denies appears in its report, and when its last one clears.
	Recorder events.EventRecorder

	failing map[string]bool // the drivers with an enforced failure at the previous write
}

// WriteStats say what one write did.
type WriteStats struct {
	Applied, Deleted, Unchanged int
}

// Write brings the ClusterReports in line with out, stamping changed results with at.
func (w *Writer) Write(ctx context.Context, out *Outcome, at time.Time) (WriteStats, error) {
	var st WriteStats
	existing := &metav1.PartialObjectMetadataList{}
	existing.SetGroupVersionKind(schema.GroupVersionKind{Group: openreports.GroupName, Version: openreports.GroupVersion.Version, Kind: "ClusterReportList"})
	reader := w.Reader
	if reader == nil {
		reader = w.Client
	}
	if err := reader.List(ctx, existing, client.MatchingLabels{LabelManagedBy: managedBy}); err != nil {
		return st, fmt.Errorf("listing the ClusterReports: %w", err)
	}
	stored := make(map[string]string, len(existing.Items))
	for _, m := range existing.Items {
		stored[m.Name] = m.Annotations[AnnotationContentHash]
	}
	wanted := make(map[string]bool, len(out.Reports))
	var errs []error
	for i := range out.Reports {
		r := &out.Reports[i]
		cr := ClusterReport(r, time.Time{})
		hash, err := contentHash(&cr)
		if err != nil {
			return st, err
		}
		wanted[cr.Name] = true
		if h, ok := stored[cr.Name]; ok && h == hash {
			st.Unchanged++
			continue
		}
		cr = ClusterReport(r, at)
		cr.Annotations = map[string]string{AnnotationContentHash: hash}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cr)
		if err != nil {
			return st, err
		}
		apply := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
		if err := w.Client.Apply(ctx, apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			errs = append(errs, fmt.Errorf("writing ClusterReport %s: %w", cr.Name, err))
			continue
		}
		st.Applied++
	}
	for name := range stored {
		if wanted[name] {
			continue
		}
		gone := &openreports.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := w.Client.Delete(ctx, gone); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting ClusterReport %s: %w", name, err))
			continue
		}
		st.Deleted++
	}
	w.events(out)
	return st, errors.Join(errs...)
}

// events records an Event on each RBLNDriver whose enforced failures appeared or cleared.
func (w *Writer) events(out *Outcome) {
	now := map[string]bool{}
	for i := range out.Reports {
		r := &out.Reports[i]
		if r.Driver != "" && r.enforced > 0 {
			now[r.Driver] = true
		}
	}
	if w.Recorder != nil && w.failing != nil {
		for i := range out.Reports {
			r := &out.Reports[i]
			if r.Driver == "" {
				continue
			}
			d := &v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: r.Driver, UID: types.UID(r.UID)}}
			switch {
			case now[r.Driver] && !w.failing[r.Driver]:
				w.Recorder.Eventf(d, nil, corev1.EventTypeWarning, "AuditFailed", "Audit", "the audit finds %d failure(s) of rules that deny: see ClusterReport %s", r.enforced, reportName(r))
			case !now[r.Driver] && w.failing[r.Driver]:
				w.Recorder.Eventf(d, nil, corev1.EventTypeNormal, "AuditPassed", "Audit", "the audit finds no failure of a rule that denies any more")
			}
		}
	}
	w.failing = now
}

// contentHash is the hash of a report's JSON (results stamped with the zero time).
func contentHash(cr *openreports.ClusterReport) (string, error) {
	data, err := json.Marshal(cr)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), nil
}

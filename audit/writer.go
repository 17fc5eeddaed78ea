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

	failing map[string]bool       // the drivers with an enforced failure at the previous write
	status  *v1alpha1.AuditStatus // the status.audit this writer wrote last
	// statusUID is the UID of the RBLNClusterPolicy status was written to: one deleted and
	// created again holds no status.audit, whatever this writer wrote to the old one.
	statusUID types.UID
}

// WriteStats say what one write did.
type WriteStats struct {
	Applied, Deleted, Unchanged int
	// Status: the RBLNClusterPolicy's status.audit was written.
	Status bool
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

// Totals are the status.audit totals of out, stamped at.
func Totals(out *Outcome, at time.Time) *v1alpha1.AuditStatus {
	return &v1alpha1.AuditStatus{LastRunTime: metav1.NewTime(at.UTC().Truncate(time.Second)), Reports: int32(len(out.Reports)),
		Pass: int32(out.Summary.Pass), Fail: int32(out.Summary.Fail), Warn: int32(out.Summary.Warn), Error: int32(out.Summary.Error),
		Enforced: int32(out.Enforced)}
}

// WriteStatus writes out's totals into the status.audit of cp (the RBLNClusterPolicy as the
// cluster view holds it; nil: there is none, nothing is written) when they differ from the
// stored ones, or when refresh is set (the full pass of every interval, which keeps
// lastRunTime current). The stored totals are those this writer wrote last, else cp's (the
// view does not follow status-only updates). It reports whether it wrote.
func (w *Writer) WriteStatus(ctx context.Context, cp *v1alpha1.RBLNClusterPolicy, out *Outcome, at time.Time, refresh bool) (bool, error) {
	if cp == nil {
		return false, nil
	}
	want := Totals(out, at)
	old := w.status
	if old == nil || w.statusUID != cp.UID {
		old = cp.Status.Audit
	}
	if old != nil && !refresh {
		same := *old
		same.LastRunTime = want.LastRunTime
		if same == *want {
			return false, nil
		}
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"audit": want}})
	if err != nil {
		return false, err
	}
	target := &v1alpha1.RBLNClusterPolicy{ObjectMeta: metav1.ObjectMeta{Name: cp.Name}}
	if err := w.Client.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil // deleted since the snapshot
		}
		return false, fmt.Errorf("writing the status.audit of RBLNClusterPolicy %s: %w", cp.Name, err)
	}
	w.status, w.statusUID = want, cp.UID
	return true, nil
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

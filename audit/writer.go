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

// annotationContentHash is the annotation earlier versions kept the hash of a report's
// content in, and trusted instead of the content: a report that still carries it is
// rewritten once, without it.
const annotationContentHash = "driverguard.rebellions.ai/content-hash"

// fieldOwner is the field manager of the reports (server-side apply).
const fieldOwner = "driverguard-audit"

// Writer writes an outcome's ClusterReports: a report whose content differs from what the
// audit would write — edited by hand whatever its annotations say, missing (deleted by hand),
// or holding an older standing — is applied, one that holds it is not touched, and the
// reports labelled as the audit's that no driver has any more are deleted.
//
// It compares content, never a label on it: the results (without their timestamps, the time
// of the pass that wrote them), the summary, the scope, the source and the labels and
// annotations the audit sets; not what the API server sets (resourceVersion, managedFields,
// creationTimestamp) nor the labels and annotations of others. To stay cheap it lists the
// reports' metadata at every pass and reads them whole only when one's resourceVersion is not
// the one it last wrote or read: after a write by someone else, and at its first pass.
type Writer struct {
	// Client writes; Reader lists the reports (serve: the API reader, not the cache, so that
	// a report deleted or edited by hand is seen at the next pass). Nil: Client.
	Client client.Client
	Reader client.Reader
	// Recorder, when set, gets an Event on an RBLNDriver when a failure of a rule that
	// denies appears in its report, and when its last one clears.
	Recorder events.EventRecorder

	// known holds, by report name, the resourceVersion of the report as this writer last
	// wrote or read it and the content it then held (see contentKey): the API server changes
	// the resourceVersion at every write, so a report listed with that resourceVersion still
	// holds that content.
	known   map[string]knownReport
	failing map[string]bool       // the drivers with an enforced failure at the previous write
	status  *v1alpha1.AuditStatus // the status.audit this writer wrote last
	// statusUID is the UID of the RBLNClusterPolicy status was written to: one deleted and
	// created again holds no status.audit, whatever this writer wrote to the old one.
	statusUID types.UID
}

type knownReport struct{ resourceVersion, content string }

// WriteStats say what one write did.
type WriteStats struct {
	Applied, Deleted, Unchanged int
	// Read counts the reports read whole to compare their content (the others' metadata
	// showed them unchanged since this writer wrote or read them).
	Read int
	// Status: the RBLNClusterPolicy's status.audit was written.
	Status bool
}

// Write brings the ClusterReports in line with out, stamping the results of the reports it
// writes with at.
func (w *Writer) Write(ctx context.Context, out *Outcome, at time.Time) (WriteStats, error) {
	var st WriteStats
	reader := w.Reader
	if reader == nil {
		reader = w.Client
	}
	if w.known == nil {
		w.known = map[string]knownReport{}
	}
	listed, err := listReportVersions(ctx, reader)
	if err != nil {
		return st, err
	}
	wanted := make(map[string]string, len(out.Reports)) // name → content key
	reread := false
	for i := range out.Reports {
		cr := ClusterReport(&out.Reports[i], time.Time{})
		key, err := contentKey(&cr)
		if err != nil {
			return st, err
		}
		wanted[cr.Name] = key
		if rv, ok := listed[cr.Name]; ok && w.known[cr.Name].resourceVersion != rv {
			reread = true
		}
	}
	if reread {
		// Someone else wrote a report since this writer last saw it (or this is its first
		// pass): read them whole, once for all.
		n, err := w.readReports(ctx, reader, listed)
		if err != nil {
			return st, err
		}
		st.Read = n
	}
	var errs []error
	for i := range out.Reports {
		r := &out.Reports[i]
		name := reportName(r)
		key := wanted[name]
		if k, ok := w.known[name]; ok && listed[name] == k.resourceVersion && k.content == key {
			st.Unchanged++
			continue
		}
		cr := ClusterReport(r, at)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cr)
		if err != nil {
			return st, fmt.Errorf("encoding ClusterReport %s: %w", name, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if err := w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			delete(w.known, name)
			errs = append(errs, fmt.Errorf("writing ClusterReport %s: %w", name, err))
			continue
		}
		// What it holds now is what was applied (the results' timestamps aside): the labels
		// and annotations of others, which an apply leaves, are no part of its content.
		w.known[name] = knownReport{resourceVersion: u.GetResourceVersion(), content: key}
		st.Applied++
	}
	for name := range listed {
		if _, ok := wanted[name]; ok {
			continue
		}
		delete(w.known, name)
		gone := &openreports.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := w.Client.Delete(ctx, gone); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting ClusterReport %s: %w", name, err))
			continue
		}
		st.Deleted++
	}
	for name := range w.known {
		if _, ok := wanted[name]; !ok {
			delete(w.known, name)
		}
	}
	w.events(out)
	return st, errors.Join(errs...)
}

// listReportVersions lists the resourceVersion of every ClusterReport labelled as the audit's,
// by name (their metadata only).
func listReportVersions(ctx context.Context, reader client.Reader) (map[string]string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: openreports.GroupName, Version: openreports.GroupVersion.Version, Kind: "ClusterReportList"})
	if err := reader.List(ctx, list, client.MatchingLabels{LabelManagedBy: managedBy}); err != nil {
		return nil, fmt.Errorf("listing the ClusterReports: %w", err)
	}
	out := make(map[string]string, len(list.Items))
	for _, m := range list.Items {
		out[m.Name] = m.ResourceVersion
	}
	return out, nil
}

// readReports reads every ClusterReport labelled as the audit's whole, records the content
// each holds, and brings listed up to date with what it read. It returns how many it read.
func (w *Writer) readReports(ctx context.Context, reader client.Reader, listed map[string]string) (int, error) {
	list := &openreports.ClusterReportList{}
	if err := reader.List(ctx, list, client.MatchingLabels{LabelManagedBy: managedBy}); err != nil {
		return 0, fmt.Errorf("reading the ClusterReports: %w", err)
	}
	seen := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		cr := &list.Items[i]
		key, err := contentKey(cr)
		if err != nil {
			return 0, err
		}
		seen[cr.Name] = true
		listed[cr.Name] = cr.ResourceVersion
		w.known[cr.Name] = knownReport{resourceVersion: cr.ResourceVersion, content: key}
	}
	for name := range listed {
		if !seen[name] {
			delete(listed, name) // deleted, or no longer labelled, since the metadata was listed
		}
	}
	return len(list.Items), nil
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

// contentKey is what a ClusterReport says, as a hash: its source, scope, summary and results
// (their timestamps left out: the time of the pass that wrote them), and the labels and
// annotations the audit sets — without what the API server adds, or other writers' labels.
func contentKey(cr *openreports.ClusterReport) (string, error) {
	c := openreports.ClusterReport{
		ObjectMeta: metav1.ObjectMeta{Name: cr.Name, Labels: only(cr.Labels, ownedLabels), Annotations: only(cr.Annotations, ownedAnnotations)},
		Source:     cr.Source, Scope: cr.Scope, ScopeSelector: cr.ScopeSelector, Configuration: cr.Configuration, Summary: cr.Summary,
		Results: make([]openreports.ReportResult, len(cr.Results)),
	}
	for i, r := range cr.Results {
		r.Timestamp = metav1.Timestamp{}
		c.Results[i] = r
	}
	data, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("encoding ClusterReport %s: %w", cr.Name, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// The labels and annotations of a report that are the audit's: those it sets, and the one
// earlier versions set.
var (
	ownedLabels      = []string{LabelManagedBy, v1alpha1.LabelInstance}
	ownedAnnotations = []string{AnnotationOmittedResults, annotationContentHash}
)

// only is the entries of m under keys, nil when there are none.
func only(m map[string]string, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

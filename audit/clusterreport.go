package audit

import (
	"maps"
	"strconv"
	"strings"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

const (
	// ReportSource is the source of every result driverguard reports.
	ReportSource = "driverguard"
	// LabelManagedBy marks the ClusterReports the audit writes (and may delete).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// AnnotationOmittedResults says how many results a report does not list (beyond
	// --audit-max-results, or 1 MiB); its summary counts them with the others. Absent when it
	// lists every one.
	AnnotationOmittedResults = "driverguard.rebellions.ai/omitted-results"
	managedBy                = "driverguard"
	propertyEnforcement      = "enforcement"
)

// ClusterReports are the openreports.io ClusterReports of an outcome: one per RBLNDriver,
// named after it and scoped to it, and the cluster report. Every result is stamped with at;
// nothing else changes from pass to pass unless a finding does (the Writer compares content
// without the stamps, so an unchanged standing is not rewritten).
func ClusterReports(out *Outcome, at time.Time) []openreports.ClusterReport {
	reports := make([]openreports.ClusterReport, 0, len(out.Reports))
	for i := range out.Reports {
		reports = append(reports, ClusterReport(&out.Reports[i], at))
	}
	return reports
}

// ClusterReport is the openreports.io ClusterReport of one report, its results stamped with at.
func ClusterReport(r *Report, at time.Time) openreports.ClusterReport {
	stamp := metav1.Timestamp{Seconds: at.Unix()}
	cr := openreports.ClusterReport{
		TypeMeta: metav1.TypeMeta{APIVersion: openreports.GroupVersion.String(), Kind: "ClusterReport"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   reportName(r),
			Labels: map[string]string{LabelManagedBy: managedBy},
		},
		Source: ReportSource,
		Summary: openreports.ReportSummary{
			Pass: r.Summary.Pass, Fail: r.Summary.Fail, Warn: r.Summary.Warn, Error: r.Summary.Error,
		},
		Results: make([]openreports.ReportResult, 0, len(r.Results)),
	}
	if r.Driver != "" {
		cr.Scope = &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RBLNDriver", Name: r.Driver, UID: types.UID(r.UID)}
		if r.Instance != "" {
			cr.Labels[v1alpha1.LabelInstance] = r.Instance
		}
	}
	if r.Omitted > 0 {
		cr.Annotations = map[string]string{AnnotationOmittedResults: strconv.Itoa(r.Omitted)}
	}
	for _, f := range r.Results {
		res := openreports.ReportResult{
			Source:      ReportSource,
			Policy:      f.ReportPolicy(),
			Rule:        f.ReportRule(),
			Result:      openreports.Result(f.Status),
			Severity:    openreports.ResultSeverity(f.severity()),
			Description: f.Description(),
			Timestamp:   stamp,
			Properties:  map[string]string{propertyEnforcement: string(f.Enforcement)},
		}
		maps.Copy(res.Properties, f.Properties)
		for _, s := range f.Subjects() {
			ref := corev1.ObjectReference{Kind: s.Kind, Name: s.Name, APIVersion: "v1"}
			if s.Kind != "Node" {
				ref.APIVersion = v1alpha1.GroupVersion.String()
			}
			res.Subjects = append(res.Subjects, ref)
		}
		cr.Results = append(cr.Results, res)
	}
	return cr
}

// driverReportPrefix names the report of a driver that is named ClusterReportName or
// whose name already starts with it.
const driverReportPrefix = "rblndriver."

// reportName is the ClusterReport's name: the RBLNDriver's (RBLNDriver names are DNS
// subdomains, as ClusterReport names are), or ClusterReportName. A driver that is itself
// named ClusterReportName, or whose name starts with "rblndriver.", gets "rblndriver.<name>":
// no two drivers, and no driver and the cluster, share a report.
func reportName(r *Report) string { return reportNameOf(r.Driver) }

func reportNameOf(driver string) string {
	switch {
	case driver == "":
		return ClusterReportName
	case driver == ClusterReportName || strings.HasPrefix(driver, driverReportPrefix):
		return driverReportPrefix + driver
	}
	return driver
}

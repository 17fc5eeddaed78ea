package audit

import (
	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"

	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/finding"
)

// RunResult is one audit run (`driverguard audit`): its outcome, the ClusterReports and what
// the cluster was read from.
type RunResult struct {
	Outcome *Outcome
	// Reports are the ClusterReports serve's audit would write.
	Reports []openreports.ClusterReport
	// Inputs say what the cluster was read from; InputWarnings the inputs that look like a
	// failed read (a node inventory without nodes, ...).
	Inputs        cluster.Sources
	InputWarnings []string
}

// Findings are the results of every report that are not passes: the findings they are.
func (r *RunResult) Findings() []finding.Finding {
	out := []finding.Finding{}
	for _, rep := range r.Outcome.Reports {
		for _, res := range rep.Results {
			if res.Status != Pass {
				out = append(out, res.Finding)
			}
		}
	}
	return out
}

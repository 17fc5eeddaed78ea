package action

import (
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
)

// locate sets the location of every finding of rep that came from values: an object's (or
// its field's) values key, a driver loss at the selector of the driver the node loses, a
// render warning at its values path.
func locate(rep *release.Report, r *render.Result) {
	if r == nil {
		return
	}
	from := make(map[string]string, len(rep.DriverLoss))
	for _, l := range rep.DriverLoss {
		from[l.Node] = l.From
	}
	warning := 0
	for i := range rep.Findings {
		f := &rep.Findings[i]
		switch {
		case f.Rule == finding.RuleDriverLoss && f.Object.Kind == finding.KindNode:
			f.Location = locationOf(r.LocateValues("RBLNDriver", from[f.Object.Name], "spec.nodeSelector"))
		case f.Rule == finding.RuleRenderWarning && f.Count == 0 && warning < len(rep.RenderWarnings):
			f.Location = locationOf(r.LocateWarning(rep.RenderWarnings[warning]))
			warning++
		case f.Object.Kind == "RBLNDriver" || f.Object.Kind == "RBLNClusterPolicy":
			if f.Rule != finding.RuleOmittedFindings {
				f.Location = locationOf(r.LocateValues(f.Object.Kind, f.Object.Name, f.Field))
			}
		}
	}
}

// locationOf is where the user wrote a value, as findings say it.
func locationOf(loc render.ValuesLocation) *finding.Location {
	l := &finding.Location{ValuesPath: loc.Path}
	switch {
	case !loc.Found && loc.Path == "":
		return nil
	case !loc.Found:
		l.Unwritten = true
	case loc.Kind != render.FromFile:
		l.Flag = loc.String()
	default:
		l.File, l.Line, l.Column = loc.Source, loc.KeyLine, loc.KeyColumn
		if loc.KeyLine == 0 { // a list item: the value's line
			l.Line, l.Column = loc.Line, loc.Column
		}
		if l.File == "-" {
			l.File = "<stdin>"
		}
	}
	return l
}

// Findings are values that do not render as findings: one InvalidValues denial per problem,
// located at its values key; Omitted counts those the error does not list.
func (e *InvalidError) Findings() (fs []finding.Finding, omitted int) {
	problems, omitted := e.Problems()
	for _, p := range problems {
		f := finding.Finding{Rule: finding.RuleInvalidValues, Level: finding.Deny,
			Object: finding.Object{Kind: finding.KindValues, Name: "values"}, Message: p.Message}
		if p.Path != "" {
			f.Message = p.Path + ": " + p.Message
			f.Location = locationOf(p.Location)
		}
		fs = append(fs, f)
	}
	return fs, omitted
}

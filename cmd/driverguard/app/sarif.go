package app

import (
	"cmp"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/driverguard/driverguard/action"
)

// formatSARIF is SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format), what code
// scanning reads: each result located at the values key that produced it.
const formatSARIF = "sarif"

// The SARIF 2.1.0 log, as much of it as driverguard writes.
type (
	sarifLog struct {
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool    sarifTool     `json:"tool"`
		Results []sarifResult `json:"results"`
		// Properties: omittedResults, the findings beyond what a report lists.
		Properties map[string]any `json:"properties,omitempty"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name    string      `json:"name"`
		Version string      `json:"version,omitempty"`
		Rules   []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID               string    `json:"id"`
		ShortDescription sarifText `json:"shortDescription"`
	}
	sarifText struct {
		Text string `json:"text"`
	}
	sarifResult struct {
		RuleID     string            `json:"ruleId"`
		RuleIndex  int               `json:"ruleIndex"`
		Level      string            `json:"level"`
		Message    sarifText         `json:"message"`
		Locations  []sarifLocation   `json:"locations"`
		Properties map[string]string `json:"properties,omitempty"`
	}
	sarifLocation struct {
		PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
		LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
	}
	sarifPhysical struct {
		ArtifactLocation sarifArtifact `json:"artifactLocation"`
		Region           sarifRegion   `json:"region"`
	}
	sarifArtifact struct {
		URI string `json:"uri"`
	}
	sarifRegion struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn,omitempty"`
	}
	sarifLogical struct {
		FullyQualifiedName string `json:"fullyQualifiedName"`
		Kind               string `json:"kind"`
	}
)

// SARIF levels: a denial is an error, a warning a warning, an audit finding a note.
const (
	sarifError   = "error"
	sarifWarning = "warning"
	sarifNote    = "note"
)

// sarifBuilder collects the results of one run and the rules they cite.
type sarifBuilder struct {
	run   sarifRun
	index map[string]int
	// titles, when set, give the rules' descriptions (else ruleDescription).
	titles *action.RuleRegistry
}

func newSARIF(rules []string) *sarifBuilder {
	b := &sarifBuilder{index: map[string]int{}}
	b.run.Tool.Driver = sarifDriver{Name: "driverguard", Version: readBuildInfo().Version, Rules: []sarifRule{}}
	b.run.Results = []sarifResult{}
	for _, r := range rules {
		b.rule(r)
	}
	return b
}

// rule is the index of a rule, added on first use.
func (b *sarifBuilder) rule(id string) int {
	if i, ok := b.index[id]; ok {
		return i
	}
	b.index[id] = len(b.run.Tool.Driver.Rules)
	text := ruleDescription(id)
	if b.titles != nil {
		text = b.titles.Title(id)
	}
	b.run.Tool.Driver.Rules = append(b.run.Tool.Driver.Rules, sarifRule{ID: id, ShortDescription: sarifText{Text: text}})
	return b.index[id]
}

// add adds a result about object (Kind/name, "" for none) located at the values key loc (a
// zero loc for a result no values produced).
func (b *sarifBuilder) add(rule, level, message, object string, loc action.ValuesLocation) {
	var l sarifLocation
	props := map[string]string{}
	if object != "" {
		l.LogicalLocations = append(l.LogicalLocations, sarifLogical{FullyQualifiedName: object, Kind: "resource"})
	}
	if loc.Path != "" {
		l.LogicalLocations = append(l.LogicalLocations, sarifLogical{FullyQualifiedName: loc.Path, Kind: "property"})
		props["valuesPath"] = loc.Path
	}
	switch {
	case !loc.Found && loc.Path != "":
		message += fmt.Sprintf(" [%s: not written in the values given (a chart default): no line to point at]", loc.Path)
	case !loc.Found:
	case loc.Kind != action.ValuesFromFile:
		message += fmt.Sprintf(" [%s: written on the command line (%s): no file line]", loc.Path, loc.String())
		props["valuesSource"] = loc.String()
	case loc.Source == "<stdin>" || loc.Source == "-":
		message += fmt.Sprintf(" [%s: standard input line %d, no file to point at]", loc.Path, sarifLine(loc))
		props["valuesSource"] = "<stdin>"
	default:
		line, col := sarifLine(loc), loc.KeyColumn
		if loc.KeyLine == 0 {
			col = loc.Column
		}
		l.PhysicalLocation = &sarifPhysical{ArtifactLocation: sarifArtifact{URI: fileURI(loc.Source)}, Region: sarifRegion{StartLine: line, StartColumn: col}}
	}
	b.push(rule, level, message, l, props)
}

// push adds a result at l (nowhere when l is empty).
func (b *sarifBuilder) push(rule, level, message string, l sarifLocation, props map[string]string) {
	res := sarifResult{RuleID: rule, RuleIndex: b.rule(rule), Level: level, Message: sarifText{Text: message}, Locations: []sarifLocation{}}
	if l.PhysicalLocation != nil || len(l.LogicalLocations) > 0 {
		res.Locations = append(res.Locations, l)
	}
	if len(props) > 0 {
		res.Properties = props
	}
	b.run.Results = append(b.run.Results, res)
}

// sarifLine is the line of the values key (of the value for a list item).
func sarifLine(loc action.ValuesLocation) int {
	if loc.KeyLine > 0 {
		return loc.KeyLine
	}
	return loc.Line
}

// fileURI is a values file as a SARIF artifact URI: a relative path stays relative (to the
// directory the command ran in, which code scanning takes as the repository root), an
// absolute one becomes a file URI.
func fileURI(name string) string {
	if filepath.IsAbs(name) {
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(name)}).String()
	}
	return (&url.URL{Path: filepath.ToSlash(filepath.Clean(name))}).String()
}

// property sets a property of the run.
func (b *sarifBuilder) property(name string, v any) {
	if b.run.Properties == nil {
		b.run.Properties = map[string]any{}
	}
	b.run.Properties[name] = v
}

func (b *sarifBuilder) write(w io.Writer, omitted int) error {
	if omitted > 0 {
		b.property("omittedResults", omitted)
	}
	return writeJSON(w, sarifLog{Version: "2.1.0", Runs: []sarifRun{b.run}})
}

// ruleDescription is a rule's one-line description.
func ruleDescription(rule string) string { return action.RuleDescription(rule) }

// writeCheckSARIF writes a check as SARIF: every denial, warning and audit finding, each
// driver loss and render warning, located at the values key the object or field came from;
// the input warnings, and the drift now as notes located at its node.
func writeCheckSARIF(w io.Writer, rep *action.CheckReport, job *action.Check) error {
	b := newSARIF(append(slices.Clone(rep.Policies), action.BuiltInRules...))
	omitted := rep.DriverLossOmitted + rep.RenderWarningsOmitted
	for _, res := range rep.Resources {
		object := res.Kind + "/" + res.Name
		for _, g := range []struct {
			level    string
			findings []action.Finding
		}{{sarifError, res.Deny}, {sarifWarning, res.Warn}, {sarifNote, res.Audit}} {
			for _, f := range g.findings {
				b.add(findingRule(f), g.level, sarifMessage(f, object), object, job.Locate(res.Kind, res.Name, f.Field))
			}
		}
		omitted += res.OmittedDeny + res.OmittedWarn + res.OmittedAudit
	}
	level := sarifError
	if rep.DriverLossAllowed {
		level = sarifWarning
	}
	for _, l := range rep.DriverLoss {
		b.add(action.RuleDriverLoss, level, "Node/"+lossLine(l), "Node/"+l.Node, job.Locate("RBLNDriver", l.From, "spec.nodeSelector"))
	}
	for _, wn := range rep.RenderWarnings {
		b.add(action.RuleRenderWarning, sarifWarning, wn.String(), "RBLNDriver/"+wn.Resource, job.LocateWarning(wn))
	}
	for _, wn := range rep.InputWarnings {
		b.push(action.RuleInputWarning, sarifWarning, wn, sarifLocation{}, nil)
	}
	// The drift now: notes at the node, never failures (the values did not cause it).
	for _, d := range rep.Drift {
		b.push(d.Kind, sarifNote, "Node/"+d.Node+": drift now, not caused by these values: "+d.Detail,
			sarifLocation{LogicalLocations: []sarifLogical{{FullyQualifiedName: "Node/" + d.Node, Kind: "resource"}}},
			map[string]string{"drift": "true", "node": d.Node})
	}
	omitted += rep.DriftOmitted
	b.property("inputs", rep.Inputs)
	b.property("judgedAgainst", inputLines(rep.Inputs, rep.Basis))
	return b.write(w, omitted)
}

// writeInvalidSARIF writes values that do not render as SARIF: one InvalidValues error per
// problem, located at its values key.
func writeInvalidSARIF(w io.Writer, invalid *action.InvalidError) error {
	b := newSARIF(nil)
	problems, omitted := invalid.Problems()
	for _, p := range problems {
		msg := p.Message
		if p.Path != "" {
			msg = p.Path + ": " + msg
		}
		b.add(action.RuleInvalidValues, sarifError, msg, "", p.Location)
	}
	return b.write(w, omitted)
}

// sarifMessage is a finding's message for SARIF, which names its rule apart: the object, the
// field, then what is wrong.
func sarifMessage(f action.Finding, object string) string {
	msg := strings.TrimPrefix(f.Message, object+": ")
	if f.Field != "" {
		msg = f.Field + ": " + msg
	}
	return object + ": " + msg
}

// writeAuditSARIF writes an audit as SARIF: every finding that is not a pass (error for what
// denies or failed to evaluate, warning for a warning, note for a policy on trial), located
// at the objects it is about; an audit reads the cluster, not values files.
func writeAuditSARIF(w io.Writer, out *action.AuditResult) error {
	b := newSARIF(nil)
	omitted := 0
	for _, rep := range out.Outcome.Reports {
		omitted += rep.Omitted
		for _, f := range rep.Results {
			if f.Result == action.AuditPass {
				continue
			}
			level := sarifError
			switch {
			case f.Enforcement == action.EnforceAudit:
				level = sarifNote
			case f.Result == action.AuditWarn:
				level = sarifWarning
			}
			var l sarifLocation
			for _, sub := range f.Subjects {
				l.LogicalLocations = append(l.LogicalLocations, sarifLogical{FullyQualifiedName: sub.Kind + "/" + sub.Name, Kind: "resource"})
			}
			props := map[string]string{"report": rep.Name}
			if rep.Instance != "" {
				props["valuesPath"] = "driver.instances." + rep.Instance
			}
			b.push(auditRule(f), level, f.Message, l, props)
		}
	}
	b.property("inputs", out.Inputs) // input warnings are results of driverguard-cluster
	b.property("judgedAgainst", inputLines(out.Inputs, ""))
	if out.Outcome.ImageCheck.Checked { // what the check covered: a pass is no result
		b.property("imageCheck", out.Outcome.ImageCheck)
	}
	return b.write(w, omitted)
}

// auditRule is the rule of an audit finding: its policy's package, else the built-in rule.
func auditRule(f action.AuditFinding) string {
	if f.Policy != action.AuditBuiltinPolicy {
		return f.Policy
	}
	return f.Rule
}

// Rules of a test run's SARIF results.
const (
	ruleCaseFailed = action.RuleTestCaseFailed
	ruleCaseError  = action.RuleTestCaseError
	ruleUncovered  = action.RuleNeverFired
)

// writeTestSARIF writes a test run as SARIF: an error per expectation a case missed, at its
// line in the suite file; an error per case that could not be judged, at the case's line; a
// note per rule coverage counts (--coverage-of, coverageOf) that no case made fire, at the
// rule body's line for a rule of the suites' policies. The rules' descriptions are the
// registry's titles.
func writeTestSARIF(w io.Writer, res *action.TestRunResult) error {
	b := newSARIF(nil)
	b.titles = action.NewRuleRegistry()
	at := func(suite string, line int) sarifLocation {
		return sarifLocation{PhysicalLocation: &sarifPhysical{ArtifactLocation: sarifArtifact{URI: fileURI(suite)}, Region: sarifRegion{StartLine: max(line, 1)}}}
	}
	for _, c := range res.Cases {
		if c.Error != "" {
			b.push(ruleCaseError, sarifError, c.Name+": "+c.Error, at(c.Suite, c.Line), map[string]string{"case": c.Name})
		}
		for _, m := range c.Mismatch {
			b.push(ruleCaseFailed, sarifError, c.Name+": expected "+m.Expected+", got "+m.Got, at(c.Suite, cmp.Or(m.Line, c.Line)), map[string]string{"case": c.Name})
		}
	}
	for _, r := range res.Coverage {
		if r.Covered() {
			continue
		}
		l := sarifLocation{LogicalLocations: []sarifLogical{{FullyQualifiedName: r.Rule, Kind: "module"}}}
		if file, line, ok := ruleHome(r); ok {
			l.PhysicalLocation = at(file, line).PhysicalLocation
		}
		msg := "no case makes " + r.Rule + " fire"
		if r.Title != "" && !strings.HasPrefix(r.Title, "Rego policy ") { // a title of its own
			msg += " (" + r.Title + ")"
		}
		b.push(ruleUncovered, sarifNote, msg, l, nil)
	}
	return b.write(w, 0)
}

// ruleHome is the file and line of a rule of the suites' policies (not the library's, whose
// files are driverguard's, nor a built-in rule's Go package).
func ruleHome(r action.RuleCoverage) (string, int, bool) {
	if r.Source != action.RuleSourcePolicy {
		return "", 0, false
	}
	i := strings.LastIndexByte(r.Home, ':')
	if i <= 0 {
		return "", 0, false
	}
	line, err := strconv.Atoi(r.Home[i+1:])
	if err != nil || line < 1 {
		return "", 0, false
	}
	return r.Home[:i], line, true
}

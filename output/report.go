package output

import (
	"io"
	"time"

	"github.com/driverguard/driverguard/finding"
)

// Report is what a command hands the writers: its findings, what it judged, the rules it
// knows, and its own document (the JSON and YAML forms) and human views.
type Report struct {
	// Tool names the run, e.g. "driverguard check" (the JUnit and SARIF tool name).
	Tool string
	// Findings are every finding of the run, in the command's order.
	Findings []finding.Finding
	// Judged are what was judged: a JUnit case each (per rule it was judged by), passing
	// when no finding of it fails.
	Judged []Subject
	// Rules knows the rules findings name: titles and SARIF rule metadata.
	Rules *finding.Registry
	// OnlyJudged: JUnit lists the judged subjects' cases only, not a case for each other
	// finding (a test run's uncovered rules are coverage, not cases).
	OnlyJudged bool
	// Omitted counts findings the run counted without listing them.
	Omitted int
	// Properties are facts about the run (what the cluster was read from, ...): SARIF run
	// properties.
	Properties map[string]any
	// Document is the command's JSON and YAML form: it carries the findings under
	// "findings".
	Document any
	// Table and Markdown are the command's human views, written from the same report; nil
	// for the generic list of findings.
	Table    func(io.Writer) error
	Markdown func(io.Writer) error
	// HTML is the command's page (-o html): there is no generic one, so a command offers
	// -o html only when it sets this.
	HTML func(io.Writer) error
	// YAML, when set, is the YAML form instead of the Document's (audit: the ClusterReports).
	YAML func(io.Writer) error
}

// Subject is one thing a run judged: an object by some rules, or a test case.
type Subject struct {
	Object finding.Object
	// Name, when set, makes the subject one JUnit case of that name holding the findings of
	// its Rules (of any object when AnyObject), e.g. "nodes keep their driver DriverLoss".
	Name      string
	AnyObject bool
	// Class is the case's JUnit classname (default: the Group, else the object).
	Class string
	// Output are lines the case prints besides its findings.
	Output []string
	// Group is the JUnit suite it belongs to ("" for the run's own).
	Group string
	// Rules are the rules it was judged by: a JUnit case each; none: one case for it.
	Rules []string
	// Location is where it is written (a test case's line in its suite).
	Location *finding.Location
	// Duration is how long judging it took (a test case's).
	Duration time.Duration
	// Error says why it could not be judged (a JUnit error).
	Error string
}

// Levels of SARIF and of GitHub's workflow commands for each finding level.
func sarifLevel(l finding.Level) string {
	switch l {
	case finding.Deny:
		return "error"
	case finding.Warn:
		return "warning"
	}
	return "note"
}

// Label is the word a human view prints for a level: FAIL, WARN, AUDIT.
func Label(l finding.Level) string {
	switch l {
	case finding.Deny:
		return "FAIL"
	case finding.Warn:
		return "WARN"
	}
	return "AUDIT"
}

// line is a finding on one line under its object: the rule, the field, the message.
func line(f finding.Finding) string {
	if pkg := f.Policy(); pkg != "" {
		return pkg + ": " + f.Message
	}
	s := f.Message
	if f.Field != "" {
		s = f.Field + ": " + s
	}
	return f.Rule + ": " + s
}

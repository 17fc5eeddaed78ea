package finding

import (
	"strconv"
	"strings"
)

// Level is what a finding does: deny fails (an admission is refused, a check fails), warn
// is admitted with a warning, audit is reported and changes nothing (a policy on trial).
type Level string

const (
	Deny  Level = "deny"
	Warn  Level = "warn"
	Audit Level = "audit"
)

// Levels are the levels in their order of weight, heaviest first.
var Levels = []Level{Deny, Warn, Audit}

// Object is what a finding is about: an RBLNDriver, the RBLNClusterPolicy, a Node, the
// values (kind Values) or a test case (kind TestCase).
type Object struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// String is Kind/name, or "" for no object.
func (o Object) String() string {
	if o.Kind == "" && o.Name == "" {
		return ""
	}
	return o.Kind + "/" + o.Name
}

// The kinds of objects findings name beyond the API's.
const (
	KindValues   = "Values"
	KindNode     = "Node"
	KindTestCase = "TestCase"
	KindCluster  = "Cluster"
)

// Location is where a finding came from in what the user wrote: a values key (its file,
// line and column), a --set flag, or a line of a test suite.
type Location struct {
	// ValuesPath is the values path, e.g. driver.instances.canary.nodeSelector.
	ValuesPath string `json:"valuesPath,omitempty"`
	// File is the file as given ("<stdin>" for standard input); Line and Column locate the
	// key in it, from 1 (0: not known).
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Flag is the command-line flag the value was given with, e.g. "--set driver.image.tag=3".
	Flag string `json:"flag,omitempty"`
	// Unwritten: no values the user gave wrote the path (a chart default): there is no line
	// to point at.
	Unwritten bool `json:"unwritten,omitempty"`
}

// String is file:line:column, the flag, or the values path.
func (l *Location) String() string {
	switch {
	case l == nil:
		return ""
	case l.File != "" && l.Line > 0:
		s := l.File + ":" + strconv.Itoa(l.Line)
		if l.Column > 0 {
			s += ":" + strconv.Itoa(l.Column)
		}
		return s
	case l.Flag != "":
		return l.Flag
	}
	return l.ValuesPath
}

// Finding is one rule that fired on one object.
type Finding struct {
	// Rule is the ID of a rule of the Registry: a built-in rule, a field error type of the
	// object syntax (FieldValueInvalid, ...), or a Rego rule body (<package>.deny,
	// <package>.warn).
	Rule string `json:"rule"`
	// Level is what the finding does here: deny, warn or audit. A Rego deny body whose
	// policy warns gives warn findings; a policy on trial, audit.
	Level  Level  `json:"level"`
	Object Object `json:"object"`
	// Field is the object's field concerned, e.g. spec.nodeSelector ("" when the rule is
	// about the object as a whole, or a policy's message).
	Field string `json:"field,omitempty"`
	// Message says what is wrong and how to fix it, without the object and the field.
	Message string `json:"message"`
	// Location is where the object or field came from in the values (or a test suite); nil
	// when nothing the user wrote produced it (an object read from the cluster).
	Location *Location `json:"location,omitempty"`
	// Nodes are the nodes concerned (drift, driver loss): a sample when the finding counts
	// more (Count).
	Nodes []string `json:"nodes,omitempty"`
	// Count is how many nodes or findings this one stands for when it is more than it
	// lists (a drift of 10,000 nodes, findings beyond a verdict's bound); 0 otherwise.
	Count int `json:"count,omitempty"`
	// Enforcement is the enforcement of the policy rule that gave a Rego finding (deny,
	// warn, audit; rule-level custom.enforcement included), which a ClusterReport result
	// states; "" for a built-in rule. Not part of the findings JSON: the registry says it.
	Enforcement Level `json:"-"`
}

// Policy is the Rego package of a finding of a Rego rule body, "" for a built-in rule.
func (f Finding) Policy() string { return PolicyOf(f.Rule) }

// Text is the finding on one line without its object, as an admission response words it:
// "policy <package>: <message>", "<field>: <message>", or the message.
func (f Finding) Text() string {
	if pkg := f.Policy(); pkg != "" {
		return "policy " + pkg + ": " + f.Message
	}
	if f.Field != "" {
		return f.Field + ": " + f.Message
	}
	return f.Message
}

// String is the finding on one line: its object, then its Text (a message that starts with
// the object, as policies' often do, does not repeat it).
func (f Finding) String() string {
	o := f.Object.String()
	if o == "" {
		return f.Text()
	}
	f.Message = strings.TrimPrefix(f.Message, o+": ")
	return o + ": " + f.Text()
}

// The bodies of a Rego policy, each a rule of the registry.
const (
	BodyDeny = "deny"
	BodyWarn = "warn"
)

// RegoRule is the rule ID of a Rego policy's rule body: <package>.deny or <package>.warn.
func RegoRule(pkg, body string) string { return pkg + "." + body }

// PolicyOf is the package of a Rego rule ID, "" for a built-in rule (whose IDs have no dot).
func PolicyOf(rule string) string {
	pkg, _ := splitRego(rule)
	return pkg
}

// BodyOf is the body (deny or warn) of a Rego rule ID, "" for a built-in rule.
func BodyOf(rule string) string {
	_, body := splitRego(rule)
	return body
}

func splitRego(rule string) (pkg, body string) {
	i := strings.LastIndexByte(rule, '.')
	if i <= 0 {
		return "", ""
	}
	switch rule[i+1:] {
	case BodyDeny, BodyWarn:
		return rule[:i], rule[i+1:]
	}
	return "", ""
}

// Matches reports whether a rule named by a user (a suite's expectation, --coverage-of)
// names the rule ID: the ID itself, or a Rego package naming both its bodies.
func Matches(named, rule string) bool {
	return named == rule || (named != "" && named == PolicyOf(rule))
}

// Counts are findings counted by level.
type Counts struct {
	Deny  int `json:"deny"`
	Warn  int `json:"warn"`
	Audit int `json:"audit"`
}

// Count counts fs by level.
func Count(fs []Finding) Counts {
	var c Counts
	for _, f := range fs {
		switch f.Level {
		case Deny:
			c.Deny++
		case Warn:
			c.Warn++
		case Audit:
			c.Audit++
		}
	}
	return c
}

package output

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/driverguard/driverguard/finding"
)

type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		File      string        `xml:"file,attr,omitempty"`
		Line      int           `xml:"line,attr,omitempty"`
		Time      string        `xml:"time,attr,omitempty"`
		Failure   *junitProblem `xml:"failure,omitempty"`
		Error     *junitProblem `xml:"error,omitempty"`
		Output    string        `xml:"system-out,omitempty"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

// writeJUnit writes JUnit XML for CI: a test case per judged subject and rule it was judged
// by (one for a subject judged by no named rule), failed by its deny findings (every message
// in the failure's text), an error when it could not be judged; its warn and audit findings
// are the case's output. Findings of no case (a node's, the inputs', a syntax rule's) are a
// case per object and rule. Suites group the subjects (per report, per suite file).
func writeJUnit(w io.Writer, r *Report) error {
	out := junitSuites{Name: r.Tool}
	suites := map[string]int{}
	suite := func(name string) *junitSuite {
		if name == "" {
			name = r.Tool
		}
		i, ok := suites[name]
		if !ok {
			i = len(out.Suites)
			suites[name] = i
			out.Suites = append(out.Suites, junitSuite{Name: name})
		}
		return &out.Suites[i]
	}
	byCase := map[key][]finding.Finding{}
	byObject := map[finding.Object][]int{} // a subject's case reads its object's findings only
	all := make([]int, len(r.Findings))
	for i, f := range r.Findings {
		k := key{f.Object, f.Rule}
		byCase[k] = append(byCase[k], f)
		byObject[f.Object] = append(byObject[f.Object], i)
		all[i] = i
	}
	used := map[key]bool{}
	add := func(s *junitSuite, c junitCase, fs []finding.Finding, output []string, withObject bool) {
		var fails, other []string
		for _, f := range fs {
			text := line(f)
			if withObject && f.Object.String() != "" {
				text = f.Object.String() + ": " + text
			}
			if f.Level == finding.Deny {
				fails = append(fails, text)
			} else {
				other = append(other, Label(f.Level)+"  "+text)
			}
		}
		if len(fails) > 0 && c.Error == nil {
			c.Failure = &junitProblem{Message: fails[0], Type: "deny", Text: strings.Join(fails, "\n")}
			s.Failures++
		}
		if c.Error != nil {
			s.Errors++
		}
		c.Output = strings.Join(append(slices.Clone(output), other...), "\n")
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	for _, sub := range r.Judged {
		s := suite(sub.Group)
		base := junitCase{Classname: sub.Object.String()}
		switch {
		case sub.Class != "":
			base.Classname = sub.Class
		case sub.Group != "":
			base.Classname = sub.Group
		}
		if l := sub.Location; l != nil {
			base.File, base.Line = l.File, l.Line
		}
		if sub.Duration > 0 {
			base.Time = fmt.Sprintf("%.3f", sub.Duration.Seconds())
		}
		if sub.Error != "" {
			base.Error = &junitProblem{Message: sub.Error, Type: "error", Text: sub.Error}
		}
		candidates := byObject[sub.Object]
		if sub.AnyObject {
			candidates = all
		}
		ofRules := func(k key) bool {
			return len(sub.Rules) == 0 || slices.ContainsFunc(sub.Rules, func(rule string) bool { return finding.Matches(rule, k.rule) })
		}
		switch {
		case sub.Name != "" || len(sub.Rules) == 0:
			c := base
			c.Name = cmp.Or(sub.Name, sub.Object.Name)
			add(s, c, take(r.Findings, candidates, used, ofRules), sub.Output, sub.AnyObject)
		default:
			for _, rule := range sub.Rules {
				c := base
				c.Name = sub.Object.String() + " " + rule
				add(s, c, take(r.Findings, candidates, used, func(k key) bool { return finding.Matches(rule, k.rule) }), sub.Output, sub.AnyObject)
			}
		}
	}
	// The findings no judged subject's case holds: a case per object and rule, in order.
	for _, f := range r.Findings {
		k := key{f.Object, f.Rule}
		if used[k] || r.OnlyJudged {
			continue
		}
		used[k] = true
		name := f.Object.String()
		if name == "" {
			name = "run"
		}
		add(suite(""), junitCase{Name: name + " " + f.Rule, Classname: name}, byCase[k], nil, false)
	}
	if r.Omitted > 0 {
		s := suite("")
		s.Tests++
		s.Cases = append(s.Cases, junitCase{Name: fmt.Sprintf("%d more findings", r.Omitted), Classname: "omitted",
			Output: fmt.Sprintf("%d findings are counted but not listed", r.Omitted)})
	}
	for _, s := range out.Suites {
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// key is a finding's object and rule: the case of a finding no judged subject holds.
type key struct {
	object finding.Object
	rule   string
}

// take are the findings of all at the indices candidates whose key match accepts and no case
// took before, in order, marking their keys used.
func take(all []finding.Finding, candidates []int, used map[key]bool, match func(key) bool) []finding.Finding {
	var out []finding.Finding
	taken := map[key]bool{}
	for _, i := range candidates {
		f := all[i]
		if k := (key{f.Object, f.Rule}); !used[k] && match(k) {
			out = append(out, f)
			taken[k] = true
		}
	}
	for k := range taken {
		used[k] = true
	}
	return out
}

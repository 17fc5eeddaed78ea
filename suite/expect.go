package suite

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/driverguard/driverguard/finding"
)

// Outcome is what the decision core made of a case, in the suite's terms.
type Outcome struct {
	// Allowed: every object admitted (values and objects: the check passed).
	Allowed bool
	// Objects are the objects judged, as Kind/name.
	Objects []string
	// Results are the findings: fail, warn and audit results, each of one rule on one object.
	Results []Result
	// Rules are the IDs of the rules every object was judged by: a judged object passes each
	// of them that produced no result on it.
	Rules []string
	// Plan are the plan's actions per node (nil: no plan was made).
	Plan map[string]string
	// Images are the images the mutation set, by DaemonSet name ("" for none).
	Images map[string]string
}

// Result is one finding.
type Result struct {
	Object string `json:"object"`
	// Rule is the rule's ID: a built-in rule, or a Rego rule body (<package>.deny,
	// <package>.warn), which an expectation may name by its package (finding.Matches).
	Rule    string `json:"rule"`
	Result  string `json:"result"`
	Message string `json:"message"`
}

func (r Result) String() string {
	return fmt.Sprintf("%s %s %s: %s", r.Result, r.Object, r.Rule, r.Message)
}

// ResultOf is the result of a finding of a level: fail, warn or audit.
func ResultOf(l finding.Level) string {
	switch l {
	case finding.Warn:
		return ResultWarn
	case finding.Audit:
		return ResultAudit
	}
	return ResultFail
}

// Mismatch is one expectation a case missed: what was expected and what came instead.
type Mismatch struct {
	// Line is the expectation's line in the suite (0: the case's).
	Line     int    `json:"line,omitempty"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
}

func (m Mismatch) String() string { return "expected " + m.Expected + ", got " + m.Got }

// Match compares what a case expects with its outcome.
func Match(c *Case, out *Outcome) []Mismatch {
	var miss []Mismatch
	e := &c.Expect
	if e.Verdict != "" {
		got := VerdictDenied
		if out.Allowed {
			got = VerdictAllowed
		}
		if got != e.Verdict {
			miss = append(miss, Mismatch{Line: c.Line, Expected: "verdict " + e.Verdict, Got: got + " (" + summary(out.Results) + ")"})
		}
	}
	matched := make([]bool, len(out.Results))
	for _, want := range e.Results {
		if want.Result == ResultPass {
			if m, ok := matchPass(want, out); !ok {
				miss = append(miss, m)
			}
			continue
		}
		re := regexp.MustCompile(want.Message) // checked by Load
		found := false
		for i, got := range out.Results {
			if got.Object == want.Object && finding.Matches(want.Rule, got.Rule) && got.Result == want.Result && re.MatchString(got.Message) {
				matched[i], found = true, true
			}
		}
		if !found {
			miss = append(miss, Mismatch{Line: want.Line, Expected: describe(want), Got: closest(want, out.Results)})
		}
	}
	if e.Exhaustive {
		for i, got := range out.Results {
			if !matched[i] {
				miss = append(miss, Mismatch{Line: c.Line, Expected: "nothing else (exhaustive)", Got: got.String()})
			}
		}
	}
	if e.Plan != nil {
		miss = append(miss, matchPlan(c, out)...)
	}
	for _, ds := range slices.Sorted(maps.Keys(e.Images)) {
		got, ok := out.Images[ds]
		switch {
		case !ok:
			miss = append(miss, Mismatch{Line: c.Line, Expected: "DaemonSet " + ds + " gets image " + e.Images[ds], Got: "no DaemonSet " + ds + " among the objects"})
		case got != e.Images[ds]:
			if got == "" {
				got = "no image set"
			}
			miss = append(miss, Mismatch{Line: c.Line, Expected: "DaemonSet " + ds + " gets image " + e.Images[ds], Got: got})
		}
	}
	return miss
}

func matchPass(want ResultExpect, out *Outcome) (Mismatch, bool) {
	judged := false
	for _, o := range out.Objects {
		judged = judged || o == want.Object
	}
	if !judged {
		return Mismatch{Line: want.Line, Expected: describe(want), Got: want.Object + " was not judged (judged: " + list(out.Objects) + ")"}, false
	}
	known := false
	for _, r := range out.Rules {
		known = known || finding.Matches(want.Rule, r)
	}
	if !known {
		return Mismatch{Line: want.Line, Expected: describe(want), Got: "no rule " + want.Rule + " was loaded"}, false
	}
	for _, got := range out.Results {
		if got.Object == want.Object && finding.Matches(want.Rule, got.Rule) {
			return Mismatch{Line: want.Line, Expected: describe(want), Got: got.String()}, false
		}
	}
	return Mismatch{}, true
}

func matchPlan(c *Case, out *Outcome) []Mismatch {
	if out.Plan == nil {
		return []Mismatch{{Line: c.Line, Expected: "a plan", Got: "no plan (plans are made for values and objects cases)"}}
	}
	var miss []Mismatch
	nodes := make([]string, 0, len(c.Expect.Plan.Nodes))
	for n := range c.Expect.Plan.Nodes {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		want := c.Expect.Plan.Nodes[n]
		got, ok := out.Plan[n]
		if !ok {
			got = "no such node in the plan"
		}
		if got != want {
			miss = append(miss, Mismatch{Line: c.Line, Expected: "plan node " + n + ": " + want, Got: got})
		}
	}
	return miss
}

func describe(r ResultExpect) string {
	s := r.Result + " " + r.Object + " " + r.Rule
	if r.Message != "" {
		s += " matching /" + r.Message + "/"
	}
	return s
}

// closest names what came nearest to an expected result: the same object and rule, else the
// results on the object, else every result.
func closest(want ResultExpect, got []Result) string {
	var same, object []string
	for _, g := range got {
		switch {
		case g.Object == want.Object && finding.Matches(want.Rule, g.Rule):
			same = append(same, g.String())
		case g.Object == want.Object:
			object = append(object, g.String())
		}
	}
	switch {
	case len(same) > 0:
		return strings.Join(same, "; ")
	case len(object) > 0:
		return "on " + want.Object + ": " + strings.Join(object, "; ")
	}
	return summary(got)
}

func summary(results []Result) string {
	if len(results) == 0 {
		return "no results"
	}
	parts := make([]string, 0, len(results))
	for _, r := range results {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "; ")
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

package output_test

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/output"
)

// junitDoc is JUnit XML read back.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			File      string `xml:"file,attr"`
			Line      int    `xml:"line,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Output string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// junitCase is a case as the tests compare it: suite, name, failure text, error, output.
type junitCase struct {
	Suite, Name, Class string
	Failure, Error     string
	Output             string
}

func readJUnit(t *testing.T, r *output.Report) (junitDoc, []junitCase) {
	t.Helper()
	out := write(t, output.JUnit, r)
	require.True(t, strings.HasPrefix(out, xml.Header), "an XML declaration first")
	var doc junitDoc
	require.NoError(t, xml.Unmarshal([]byte(out), &doc), out)
	var cases []junitCase
	tests, failures, errs := 0, 0, 0
	for _, s := range doc.Suites {
		n, f, e := 0, 0, 0
		for _, c := range s.Cases {
			jc := junitCase{Suite: s.Name, Name: c.Name, Class: c.Classname, Output: c.Output}
			if c.Failure != nil {
				jc.Failure = c.Failure.Text
				assert.Equal(t, "deny", c.Failure.Type)
				assert.Equal(t, strings.SplitN(c.Failure.Text, "\n", 2)[0], c.Failure.Message, "the failure's message is its first denial")
				f++
			}
			if c.Error != nil {
				jc.Error = c.Error.Message
				e++
			}
			n++
			cases = append(cases, jc)
		}
		assert.Equal(t, n, s.Tests, "suite %s: tests", s.Name)
		assert.Equal(t, f, s.Failures, "suite %s: failures", s.Name)
		assert.Equal(t, e, s.Errors, "suite %s: errors", s.Name)
		tests, failures, errs = tests+n, failures+f, errs+e
	}
	assert.Equal(t, tests, doc.Tests, "testsuites: tests")
	assert.Equal(t, failures, doc.Failures, "testsuites: failures")
	assert.Equal(t, errs, doc.Errors, "testsuites: errors")
	return doc, cases
}

func TestJUnit(t *testing.T) {
	driverB := finding.Object{Kind: "RBLNDriver", Name: "b"}
	fs := []finding.Finding{
		{Rule: "FieldValueInvalid", Level: finding.Deny, Object: driverA, Field: "spec.version", Message: "bad"},
		{Rule: "team.deny", Level: finding.Deny, Object: driverA, Message: "RBLNDriver/a: first"},
		{Rule: "team.deny", Level: finding.Deny, Object: driverA, Message: "second"},
		{Rule: "team.warn", Level: finding.Warn, Object: driverA, Message: "careful"},
		{Rule: "PotentialConflict", Level: finding.Warn, Object: driverB, Field: "spec.nodeSelector", Message: "could tie"},
		{Rule: "DriverLoss", Level: finding.Deny, Object: nodeN1, Message: "loses rbln-driver"},
		{Rule: "StaleOwnerLabel", Level: finding.Audit, Object: nodeN1, Message: "drift"},
		{Rule: "InputWarning", Level: finding.Warn, Message: "no nodes"},
	}
	judged := []output.Subject{
		{Object: driverA, Rules: []string{"team", "FieldValueInvalid", "PotentialConflict"}},
		{Object: driverB, Rules: []string{"team", "FieldValueInvalid", "PotentialConflict"}},
		{Name: "nodes keep their driver DriverLoss", Class: "Nodes", AnyObject: true, Rules: []string{"DriverLoss"}},
	}

	t.Run("a case per judged subject and rule; the rest a case per object and rule", func(t *testing.T) {
		doc, cases := readJUnit(t, &output.Report{Tool: "driverguard check", Findings: fs, Judged: judged})
		assert.Equal(t, "driverguard check", doc.Name)
		want := []junitCase{
			{Suite: "driverguard check", Name: "RBLNDriver/a team", Class: "RBLNDriver/a",
				Failure: "team: RBLNDriver/a: first\nteam: second", Output: "WARN  team: careful"},
			{Suite: "driverguard check", Name: "RBLNDriver/a FieldValueInvalid", Class: "RBLNDriver/a", Failure: "FieldValueInvalid: spec.version: bad"},
			{Suite: "driverguard check", Name: "RBLNDriver/a PotentialConflict", Class: "RBLNDriver/a"},
			{Suite: "driverguard check", Name: "RBLNDriver/b team", Class: "RBLNDriver/b"},
			{Suite: "driverguard check", Name: "RBLNDriver/b FieldValueInvalid", Class: "RBLNDriver/b"},
			{Suite: "driverguard check", Name: "RBLNDriver/b PotentialConflict", Class: "RBLNDriver/b",
				Output: "WARN  PotentialConflict: spec.nodeSelector: could tie"},
			{Suite: "driverguard check", Name: "nodes keep their driver DriverLoss", Class: "Nodes",
				Failure: "Node/n1: DriverLoss: loses rbln-driver"},
			{Suite: "driverguard check", Name: "Node/n1 StaleOwnerLabel", Class: "Node/n1", Output: "AUDIT  StaleOwnerLabel: drift"},
			{Suite: "driverguard check", Name: "run InputWarning", Class: "run", Output: "WARN  InputWarning: no nodes"},
		}
		assert.Equal(t, want, cases)
		assert.Equal(t, 3, doc.Failures)
		assert.Equal(t, 9, doc.Tests)
	})

	t.Run("OnlyJudged: no case for the other findings", func(t *testing.T) {
		doc, cases := readJUnit(t, &output.Report{Tool: "t", Findings: fs, Judged: judged, OnlyJudged: true})
		assert.Equal(t, 7, doc.Tests)
		for _, c := range cases {
			assert.NotContains(t, c.Name, "StaleOwnerLabel")
			assert.NotContains(t, c.Name, "InputWarning")
		}
	})

	t.Run("a subject without rules is one case of every finding of its object", func(t *testing.T) {
		_, cases := readJUnit(t, &output.Report{Tool: "t", Findings: fs[:4], Judged: []output.Subject{{Object: driverA}}})
		require.Len(t, cases, 1)
		assert.Equal(t, "a", cases[0].Name, "named after the object")
		assert.Equal(t, "FieldValueInvalid: spec.version: bad\nteam: RBLNDriver/a: first\nteam: second", cases[0].Failure)
		assert.Equal(t, "WARN  team: careful", cases[0].Output)
	})

	t.Run("AnyObject holds the findings of its rules on every object, named", func(t *testing.T) {
		r := &output.Report{Tool: "t", Findings: []finding.Finding{
			{Rule: "DriverLoss", Level: finding.Deny, Object: nodeN1, Message: "loses a"},
			{Rule: "DriverLoss", Level: finding.Deny, Object: finding.Object{Kind: finding.KindNode, Name: "n2"}, Message: "loses b"},
			{Rule: "DriverLoss", Level: finding.Warn, Object: finding.Object{Kind: finding.KindNode, Name: "n3"}, Message: "allowed loss"},
		}, Judged: []output.Subject{{Name: "nodes keep their driver", AnyObject: true, Rules: []string{"DriverLoss"}}}}
		doc, cases := readJUnit(t, r)
		require.Len(t, cases, 1)
		assert.Equal(t, "Node/n1: DriverLoss: loses a\nNode/n2: DriverLoss: loses b", cases[0].Failure)
		assert.Equal(t, "WARN  Node/n3: DriverLoss: allowed loss", cases[0].Output)
		assert.Equal(t, 1, doc.Failures, "one failed case, however many denials")
	})

	t.Run("an error is not a failure; suites group subjects; location and time", func(t *testing.T) {
		tc := func(name string) finding.Object { return finding.Object{Kind: finding.KindTestCase, Name: name} }
		r := &output.Report{Tool: "driverguard test", OnlyJudged: true, Findings: []finding.Finding{
			{Rule: "TestCaseFailed", Level: finding.Deny, Object: tc("misses"), Message: "expected verdict denied, got allowed"},
			{Rule: "TestCaseError", Level: finding.Deny, Object: tc("broken"), Message: "no such file"},
			{Rule: "RuleNeverFired", Level: finding.Audit, Object: finding.Object{Kind: "Rule", Name: "team.warn"}, Message: "never fired"},
		}, Judged: []output.Subject{
			{Object: tc("passes"), Name: "passes", Group: "a.dgtest.yaml", Location: &finding.Location{File: "a.dgtest.yaml", Line: 4}, Duration: 1500 * time.Millisecond},
			{Object: tc("misses"), Name: "misses", Group: "a.dgtest.yaml", Location: &finding.Location{File: "a.dgtest.yaml", Line: 9}, Duration: time.Millisecond},
			{Object: tc("broken"), Name: "broken", Group: "b.dgtest.yaml", Error: "no such file", Duration: time.Millisecond},
		}, Omitted: 4}
		doc, cases := readJUnit(t, r)
		require.Len(t, doc.Suites, 3)
		assert.Equal(t, "a.dgtest.yaml", doc.Suites[0].Name)
		assert.Equal(t, "b.dgtest.yaml", doc.Suites[1].Name)
		assert.Equal(t, "driverguard test", doc.Suites[2].Name, "the omitted findings' case is the run's")
		c := doc.Suites[0].Cases
		assert.Equal(t, "a.dgtest.yaml", c[0].File)
		assert.Equal(t, 4, c[0].Line)
		assert.Equal(t, "1.500", c[0].Time)
		assert.Equal(t, "a.dgtest.yaml", c[0].Classname, "the group is the classname")
		assert.Nil(t, c[0].Failure)
		require.NotNil(t, c[1].Failure)
		assert.Equal(t, "TestCaseFailed: expected verdict denied, got allowed", c[1].Failure.Text)
		broken := doc.Suites[1].Cases[0]
		require.NotNil(t, broken.Error)
		assert.Equal(t, "no such file", broken.Error.Message)
		assert.Nil(t, broken.Failure, "a case that could not be judged is an error, not a failure")
		assert.Equal(t, 1, doc.Failures)
		assert.Equal(t, 1, doc.Errors)
		assert.Equal(t, "4 more findings", cases[len(cases)-1].Name)
		assert.Equal(t, 4, doc.Tests)
	})

	t.Run("nothing judged, no findings: an empty run", func(t *testing.T) {
		doc, cases := readJUnit(t, &output.Report{Tool: "t"})
		assert.Empty(t, cases)
		assert.Zero(t, doc.Tests)
	})
}

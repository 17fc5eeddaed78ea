package output

import (
	"encoding/xml"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/finding"
)

// scaleReport is a check of objects RBLNDrivers, each judged by rules rules, with perObject
// findings each (spread over the rules), and a drift case of any object.
func scaleReport(objects, rules, perObject int) *Report {
	r := &Report{Tool: "driverguard check"}
	var ids []string
	for i := range rules {
		ids = append(ids, fmt.Sprintf("driverguard.team.p%d.deny", i))
	}
	for o := range objects {
		obj := finding.Object{Kind: "RBLNDriver", Name: fmt.Sprintf("rbln-driver-i%d", o)}
		r.Judged = append(r.Judged, Subject{Object: obj, Rules: ids})
		for k := range perObject {
			r.Findings = append(r.Findings, finding.Finding{Rule: ids[k%rules], Level: finding.Deny, Object: obj, Message: fmt.Sprintf("node n%d says no", k)})
		}
	}
	for n := range objects {
		r.Findings = append(r.Findings, finding.Finding{Rule: "StaleOwnerLabel", Level: finding.Audit, Object: finding.Object{Kind: finding.KindNode, Name: fmt.Sprintf("n%d", n)}, Message: "stale"})
	}
	r.Judged = append(r.Judged, Subject{Name: "cluster drift now", Class: "Drift", AnyObject: true, Rules: []string{"StaleOwnerLabel"}})
	return r
}

// JUnit at the scale of a large release (2,000 RBLNDrivers judged by 20 rules each, 20,000
// findings, 2,000 drifting nodes) takes no longer than the JSON of it does, give or take: a
// case's findings are found by its object, not by reading every finding for every case.
// BenchmarkJUnitAtScale writes JUnit and JSON of 2,000 objects × 20 rules (22,000 findings)
// in one run and reports the ratio (junit/json): JUnit indexes the findings by object, so it
// stays within a small factor of JSON (it was quadratic: 62 s against 0.11 s).
func BenchmarkJUnitAtScale(b *testing.B) {
	r := scaleReport(2000, 20, 10)
	var jsonTook, junitTook time.Duration
	for b.Loop() {
		start := time.Now()
		if err := writeJSON(io.Discard, r); err != nil {
			b.Fatal(err)
		}
		jsonTook += time.Since(start)
		start = time.Now()
		if err := writeJUnit(io.Discard, r); err != nil {
			b.Fatal(err)
		}
		junitTook += time.Since(start)
	}
	b.ReportMetric(float64(junitTook)/float64(jsonTook), "junit/json")
}

// The cases hold every finding once: each object's rule a case, failed by its denials; the
// drift one case of any object.
func TestJUnitScaleCases(t *testing.T) {
	r := scaleReport(30, 4, 6)
	var b = &writerBuffer{}
	require.NoError(t, writeJUnit(b, r))
	var doc junitSuites
	require.NoError(t, xml.Unmarshal(b.data, &doc))
	assert.Equal(t, 30*4+1, doc.Tests)
	assert.Equal(t, 30*4, doc.Failures)
	var failures, drift int
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				failures++
				assert.NotEmpty(t, c.Failure.Text)
			}
			if c.Name == "cluster drift now" {
				drift++
				assert.Contains(t, c.Output, "Node/n29: StaleOwnerLabel: stale")
			}
		}
	}
	assert.Equal(t, 30*4, failures)
	assert.Equal(t, 1, drift)
}

type writerBuffer struct{ data []byte }

func (w *writerBuffer) Write(p []byte) (int, error) {
	w.data = append(w.data, p...)
	return len(p), nil
}

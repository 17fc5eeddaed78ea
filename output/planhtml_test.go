package output

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/routing"
)

// largePlan is a plan of n nodes as plan.Make shapes it at scale: 500 drivers over a few
// families, OS versions and kernels (their pools), about half the nodes upgrading in batches
// of 10 ordered by owner, pool and node, 3% blocked (one or two blockers each), 1% held, 5%
// with a stale owner label.
func largePlan(n int) *plan.Plan {
	p := &plan.Plan{Batches: [][]string{}, Manual: []plan.ManualNode{}, MissingImages: []plan.MissingImage{}, ImageWarnings: []plan.MissingImage{},
		Drift: []plan.Drift{}, InputWarnings: []string{}, Denials: []plan.Denial{}, Reasons: []string{"blocked"},
		Rollout: plan.Rollout{AutoUpgrade: true, MaxParallelUpgrades: 10, Drain: true, DrainTimeoutSeconds: 300, NPUPodDeletionTimeoutSeconds: 300}}
	families := []string{"atom", "rebel", "atom-max"}
	kernels := []string{"ubuntu22.04-6.8.0-90-generic", "ubuntu24.04-6.8.0-45-generic", "rhel9.2-5.14.0-284.11.1.el9_2.x86_64"}
	var restart []string
	for i := range n {
		owner := fmt.Sprintf("rbln-driver-t%03d", i%500)
		fam, k := families[i%len(families)], kernels[(i/7)%len(kernels)]
		pool := fam + "-" + strings.ReplaceAll(k, "_", "-")
		img := func(v string) string {
			return fmt.Sprintf("registry.example/rebellions/%s/rbln-driver:%s-%s", fam, v, k)
		}
		np := plan.NodePlan{Name: fmt.Sprintf("npu-%05d", i), Action: plan.NodeNone, OldOwner: owner, NewOwner: owner, OldImage: img("3.2.2"), NewImage: img("3.2.2"), Pool: pool, Blockers: []plan.Blocker{}}
		switch {
		case i%33 == 1:
			np.Action, np.NewImage = plan.NodeBlocked, img("3.3.0")
			np.Blockers = append(np.Blockers, plan.Blocker{Kind: "PodDisruptionBudget", Pod: fmt.Sprintf("serving/inference-%d", i), Blocks: true,
				Detail: "PodDisruptionBudget serving/inference allows 0 disruption(s) (2 healthy, 2 desired, 2 expected) and the drain evicts 1 of its pods from this node"})
			if i%2 == 0 {
				np.Blockers = append(np.Blockers, plan.Blocker{Kind: "NPUPod", Pod: "research/notebook", Blocks: true, Detail: "an NPU pod without a controller"})
			}
			p.Summary.Blocked++
		case i%100 == 3:
			np.Action, np.NewImage = plan.NodeHeld, img("3.3.0")
			p.Summary.Held++
		case i%2 == 0:
			np.Action, np.NewImage, np.Restart = plan.NodeUpgrade, img("3.3.0"), true
			p.Summary.Upgrade++
			restart = append(restart, np.Name)
		}
		if i%20 == 5 {
			p.Drift = append(p.Drift, plan.Drift{Kind: routing.DriftStaleOwnerLabel, Node: np.Name, Detail: fmt.Sprintf("its rebellions.ai/npu.driver.owner label is %q, routing gives %q", "rbln-driver", owner)})
		}
		p.Nodes = append(p.Nodes, np)
	}
	for i := 0; i < len(restart); i += 10 {
		p.Batches = append(p.Batches, restart[i:min(i+10, len(restart))])
	}
	p.Summary.Batches = len(p.Batches)
	return p
}

func planReport(p *plan.Plan) *Report {
	return &Report{Tool: "driverguard plan", Document: p, HTML: func(w io.Writer) error { return PlanHTML(w, p, "dg") }}
}

func writeFormat(t testing.TB, f Format, r *Report, w io.Writer) {
	wr, ok := For(f)
	require.True(t, ok)
	require.NoError(t, wr.Write(w, r))
}

// TestPlanHTMLAtScale: at 10,000 nodes the page groups the nodes (per lane, action and batch)
// and the lanes (per driver), lists the blocked and held nodes and the drift up to its limits
// and says how many more, and stays at most twice the bytes of the JSON plan.
func TestPlanHTMLAtScale(t *testing.T) {
	p := largePlan(10_000)
	r := planReport(p)
	var js, page bytes.Buffer
	writeFormat(t, JSON, r, &js)
	writeFormat(t, HTML, r, &page)
	t.Logf("10,000 nodes: JSON %d bytes, HTML %d bytes (%.2fx)", js.Len(), page.Len(), float64(page.Len())/float64(js.Len()))
	assert.LessOrEqual(t, page.Len(), 2*js.Len(), "the page is at most twice the JSON plan")
	html := page.String()
	assert.Contains(t, html, "10000 nodes, grouped per pool, action and batch")
	assert.Contains(t, html, "lanes: drawn per driver")
	assert.Contains(t, html, "more (-o json lists them all)")
	assert.Equal(t, planHTMLLanes, strings.Count(html, `class="driver"`), "the lanes are capped")
}

// TestPlanHTMLEscapes: a name is text on the page, never markup (html/template).
func TestPlanHTMLEscapes(t *testing.T) {
	p := largePlan(20)
	p.Nodes[1].Name = `<script>alert(1)</script>`
	p.Nodes[1].Blockers[0].Pod = `"><img src=x onerror=alert(1)>`
	p.Drift = append(p.Drift, plan.Drift{Kind: "Unowned", Node: `</title><svg onload=alert(1)>`})
	var page bytes.Buffer
	writeFormat(t, HTML, planReport(p), &page)
	html := page.String()
	assert.NotContains(t, html, "<script>alert")
	assert.NotContains(t, html, "<img src=x")
	assert.NotContains(t, html, "<svg onload")
	assert.Contains(t, html, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.Equal(t, 1, strings.Count(html, "<script>"), "the filter's script only")
}

// TestEstimateBasis: the page and the ticket say what the estimate is made from — the batches,
// the driver restart assumed, the waits — and, when a wait has no timeout, that the rollout has
// no upper bound (plan.TestEstimateRollout holds the model).
func TestEstimateBasis(t *testing.T) {
	bounded := &plan.Plan{Rollout: plan.Rollout{MaxParallelUpgrades: 2, Drain: true, DrainTimeoutSeconds: 600, NPUPodDeletionTimeoutSeconds: 300},
		Batches: [][]string{{"a"}, {"b"}, {"c"}}}
	assert.Equal(t, "An estimate, not a measurement: 3 batches of 2 nodes (maxParallelUpgrades 2), one after another; each takes at least 2 min (the driver restart, assumed: the cluster policy does not say it) and at most 15 min more when every wait runs to its timeout (npuPodDeletion.timeoutSeconds 300, drain.timeoutSeconds 600). The whole rollout: at least 6 min, at most 51 min.",
		estimateBasis(bounded))
	open := &plan.Plan{Rollout: plan.Rollout{Drain: true, NPUPodDeletionTimeoutSeconds: 60}, Batches: [][]string{{"a"}}}
	basis := estimateBasis(open)
	assert.Contains(t, basis, "1 batch of all nodes")
	assert.Contains(t, basis, "with no upper bound: drain (timeoutSeconds 0: waits indefinitely)")
}

// TestMermaidText: what a name could carry into the gantt's grammar (a colon ends a task's
// name, "%%" starts a directive, a newline a statement) is replaced.
func TestMermaidText(t *testing.T) {
	assert.Equal(t, "rbln-driver / atom-ubuntu22.04 (x)", mermaidText("rbln-driver / atom-ubuntu22.04 (x)"))
	assert.Equal(t, "a_b___init__c_d_e", mermaidText("a:b%%{init}\nc;d#e"))
}

// BenchmarkPlanHTML writes a 10,000-node plan as JSON and as HTML in the same run and reports
// the ratios (goal: the page at most twice the JSON's bytes and time; hack/bench.sh prints
// them against it).
func BenchmarkPlanHTML(b *testing.B) {
	p := largePlan(10_000)
	r := planReport(p)
	var js, page bytes.Buffer
	var jsonTime, htmlTime time.Duration
	for b.Loop() {
		js.Reset()
		page.Reset()
		start := time.Now()
		writeFormat(b, JSON, r, &js)
		mid := time.Now()
		writeFormat(b, HTML, r, &page)
		jsonTime += mid.Sub(start)
		htmlTime += time.Since(mid)
	}
	b.ReportMetric(float64(js.Len()), "json-bytes")
	b.ReportMetric(float64(page.Len()), "html-bytes")
	b.ReportMetric(float64(page.Len())/float64(js.Len()), "html/json-bytes")
	b.ReportMetric(float64(htmlTime)/float64(jsonTime), "html/json-time")
}

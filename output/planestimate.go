package output

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/driverguard/driverguard/plan"
)

// estimateBasis says what the plan's estimate is made from, in one sentence.
func estimateBasis(p *plan.Plan) string {
	e := p.RolloutEstimate()
	lo, hi := e.Total()
	upper := "at most " + humanDuration(hi)
	if e.Open() {
		upper = "with no upper bound: " + strings.Join(e.Unbounded, ", ") + "; the bars show the bounded waits"
	}
	return fmt.Sprintf("An estimate, not a measurement: %s of %s (maxParallelUpgrades %d), one after another; each takes at least %s (the driver restart, assumed: the cluster policy does not say it) and at most %s more when every wait runs to its timeout (%s). The whole rollout: at least %s, %s.",
		batches(e.Batches), maxParallel(p.Rollout.MaxParallelUpgrades), p.Rollout.MaxParallelUpgrades,
		humanDuration(e.Min()), humanDuration(e.Max()-e.Min()), strings.Join(e.Waits, ", "), humanDuration(lo), upper)
}

// batches is n batches in words.
func batches(n int) string {
	if n == 1 {
		return "1 batch"
	}
	return fmt.Sprintf("%d batches", n)
}

// humanDuration is d in hours and minutes ("1 h 20 min", "12 min", "30 s").
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		m := int(d.Minutes())
		if s := int(d.Seconds()) % 60; s != 0 {
			return fmt.Sprintf("%d min %d s", m, s)
		}
		return fmt.Sprintf("%d min", m)
	}
	h, m := int(d.Hours()), int(d.Minutes())%60
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// lane is one driver's pool: the rows of the timeline.
type lane struct{ Driver, Pool string }

func (l lane) String() string { return dash(l.Driver) + " / " + dash(l.Pool) }

// laneOf is the lane a node is drawn in: its driver after the change (before, when it loses
// its driver) and its pool.
func laneOf(n plan.NodePlan) lane {
	owner := n.NewOwner
	if owner == "" {
		owner = n.OldOwner
	}
	return lane{Driver: owner, Pool: n.Pool}
}

// batchSegment is the part of one batch in one lane.
type batchSegment struct {
	Batch int // from 0
	Lane  lane
	Nodes []string
}

// batchSegments splits every batch by lane, in the batches' order (owner, pool, node): the
// lanes in the order they first roll out.
func batchSegments(p *plan.Plan) ([]lane, []batchSegment) {
	byName := make(map[string]plan.NodePlan, len(p.Nodes))
	for _, n := range p.Nodes {
		byName[n.Name] = n
	}
	var lanes []lane
	seen := map[lane]bool{}
	var segs []batchSegment
	for i, b := range p.Batches {
		at := map[lane]int{}
		for _, name := range b {
			l := laneOf(byName[name])
			if !seen[l] {
				seen[l] = true
				lanes = append(lanes, l)
			}
			j, ok := at[l]
			if !ok {
				j = len(segs)
				at[l] = j
				segs = append(segs, batchSegment{Batch: i, Lane: l})
			}
			segs[j].Nodes = append(segs[j].Nodes, name)
		}
	}
	return lanes, segs
}

// mermaidGanttSegments is the most batch segments the gantt draws one by one; past it the
// diagram draws a task per batch, and past that many batches the rest as one task.
const mermaidGanttSegments = 60

// printMermaidGantt writes the batches as a mermaid gantt diagram (a section per driver and
// pool, a task per batch in it), on the estimated timeline of the plan's Estimate: code hosts
// render it where the change ticket is read. Names are reduced to what mermaid's gantt
// grammar reads as text (letters, digits, " ._/()-"), so none can end a task or a section.
func printMermaidGantt(w io.Writer, p *plan.Plan) {
	if len(p.Batches) == 0 {
		return
	}
	e := p.RolloutEstimate()
	_, total := e.Total()
	axis := "%H:%M"
	if total >= 24*time.Hour {
		axis = "%d %H:%M"
	}
	title := "Estimated rollout, each wait to its timeout (time from the start)"
	if e.Open() {
		title = "Estimated rollout, the bounded waits to their timeouts (some have none)"
	}
	fmt.Fprintf(w, "\n```mermaid\ngantt\n    title %s\n    dateFormat YYYY-MM-DD HH:mm:ss\n    axisFormat %s\n    todayMarker off\n", title, axis)
	task := func(name, id string, batch int, span int) {
		start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Add(e.Start(batch))
		fmt.Fprintf(w, "    %s :%s, %s, %ds\n", mermaidText(name), id, start.Format("2006-01-02 15:04:05"), int((time.Duration(span) * e.Max()).Seconds()))
	}
	lanes, segs := batchSegments(p)
	if len(segs) <= mermaidGanttSegments {
		for li, l := range lanes {
			fmt.Fprintf(w, "    section %s\n", mermaidText(l.String()))
			for _, s := range segs {
				if s.Lane == l {
					task(fmt.Sprintf("batch %d (%s)", s.Batch+1, plural(len(s.Nodes), "node")), fmt.Sprintf("b%d_%d", s.Batch+1, li), s.Batch, 1)
				}
			}
		}
	} else {
		fmt.Fprintf(w, "    section %s\n", mermaidText(fmt.Sprintf("%s in %d lanes", batches(len(p.Batches)), len(lanes))))
		for i, b := range p.Batches {
			if i == mermaidGanttSegments-1 && len(p.Batches) > mermaidGanttSegments {
				task(fmt.Sprintf("batches %d to %d", i+1, len(p.Batches)), fmt.Sprintf("b%d", i+1), i, len(p.Batches)-i)
				break
			}
			task(fmt.Sprintf("batch %d (%s)", i+1, plural(len(b), "node")), fmt.Sprintf("b%d", i+1), i, 1)
		}
	}
	fmt.Fprintln(w, "```")
}

// mermaidText keeps what the gantt grammar reads as plain text.
func mermaidText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" ._/()-", r):
			return r
		}
		return '_'
	}, s)
}

package output

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/driverguard/driverguard/plan"
)

// The page's limits: past planHTMLNodes nodes the node table groups them per lane, action and
// batch; past planHTMLLanes lanes the timeline draws a lane per driver (then the drivers past
// it in one lane); a list (drift of one kind, the nodes of a mark) names its first
// planHTMLList entries and counts the rest. So a plan of 10,000 nodes stays a page.
const (
	planHTMLNodes = 300
	planHTMLLanes = 60
	planHTMLList  = 50
)

// The timeline's geometry, in pixels.
const (
	tlLabelW = 310 // lane labels
	tlPlotW  = 560 // the batches
	tlMarkW  = 250 // the nodes outside the batches
	tlTop    = 34  // the time axis
	tlLaneH  = 30
	tlBarH   = 18
)

//go:embed planhtml.tmpl
var planHTMLSource string

var planHTMLTemplate = template.Must(template.New("plan").Funcs(template.FuncMap{
	"sub8": func(x int) int { return x - 8 },
	"add6": func(x int) int { return x + 6 },
}).Parse(planHTMLSource))

// PlanHTML writes the plan as one self-contained page (docs/plan.md "The picture: -o html"): inline CSS and SVG, a
// small inline script for the table's filter, nothing loaded from anywhere (its
// Content-Security-Policy forbids it). Every name from the cluster or the values is escaped
// by html/template.
func PlanHTML(w io.Writer, p *plan.Plan, releaseName string) error {
	if err := planHTMLTemplate.Execute(w, newPlanPage(p, releaseName)); err != nil {
		return fmt.Errorf("writing the plan as HTML: %w", err)
	}
	return nil
}

// planPage is what the template shows.
type planPage struct {
	Release  string
	Proceed  bool
	Status   string
	Reasons  []string
	Summary  plan.Summary
	Inputs   []string
	Warnings []string
	Timeline *timelineView
	// NoBatches says why there is no timeline.
	NoBatches string
	Attention []attentionNode
	// AttentionMore counts the nodes needing attention not listed.
	AttentionMore int
	BlockerCaveat string
	ImageCheck    string
	ImageCaveat   string
	Missing       []plan.MissingImage
	NotVerified   []notVerified
	Denials       []plan.Denial
	Drift         []driftGroup
	Grouped       bool
	Rows          []nodeRow
	NodeCount     int
}

// notVerified is an image no registry answered for, and the pools that pull it.
type notVerified struct {
	Image, Reason, Why string
	Pools              []string
}

type attentionNode struct {
	Name, Action, Lane string
	Blockers           []blockerView
}

type blockerView struct {
	Kind, Pod, Detail string
	Blocks            bool
}

type driftGroup struct {
	Kind    string
	Entries []plan.Drift
	More    int
}

// nodeRow is one node, or (Grouped) the nodes of one lane, action and batch.
type nodeRow struct {
	Name, Action, Owner, Pool, Image, Batch, Blockers string
	Count                                             int
}

type timelineView struct {
	Width, Height int
	Basis         string
	Lanes         []laneView
	Bars          []barView
	Ticks         []tickView
	Marks         []markView
	PlotX, MarkX  int
	// Collapsed says how lanes were merged to fit.
	Collapsed string
}

type laneView struct {
	Y, TextY   int
	PoolY      int
	Driver     string
	Pool       string
	Background bool
}

type barView struct {
	Batch            int // from 1
	X, Y, W, MinW, H int
	TextX, TextY     int
	Label, Title     string
	Nodes            string
	ShowLabel        bool
}

type tickView struct {
	X     int
	Label string
}

type markView struct {
	Kind           string // blocked, held, lose-driver, gain-driver
	X, Y, W, TextY int
	Label, Title   string
}

func newPlanPage(p *plan.Plan, releaseName string) *planPage {
	pg := &planPage{Release: releaseName, Proceed: p.Proceed, Reasons: p.Reasons, Summary: p.Summary,
		Inputs: planInputLines(p), Warnings: p.InputWarnings, BlockerCaveat: p.BlockerCheck.Caveat(),
		ImageCheck: sentence(p.ImageCheck.String()), ImageCaveat: p.ImageCheck.Caveat(),
		Missing: p.MissingImages, Denials: p.Denials, NodeCount: len(p.Nodes)}
	for _, g := range byImage(p.ImageWarnings) {
		pg.NotVerified = append(pg.NotVerified, notVerified{Image: g.image, Reason: g.reason, Why: g.why, Pools: g.pools})
	}
	switch {
	case !p.Proceed:
		pg.Status = "Cannot proceed as is"
	case p.BlockerCheck.Unchecked():
		pg.Status = "Can proceed as far as it could see (drain blockers not checked)"
	default:
		pg.Status = "Can proceed"
	}
	pg.Timeline = newTimeline(p)
	if pg.Timeline == nil {
		switch {
		case len(p.Manual) > 0:
			pg.NoBatches = fmt.Sprintf("autoUpgrade is false (OnDelete DaemonSets): nothing restarts until each node's driver pod is deleted, node by node (%s; -o markdown has the procedure).", plural(len(p.Manual), "node"))
		default:
			pg.NoBatches = "No driver pod restarts: there are no batches."
		}
	}
	for _, n := range p.Nodes {
		if len(n.Blockers) == 0 && n.Action != plan.NodeBlocked && n.Action != plan.NodeHeld && n.Action != plan.NodeLoseDriver {
			continue
		}
		if len(pg.Attention) == planHTMLNodes {
			pg.AttentionMore++
			continue
		}
		a := attentionNode{Name: n.Name, Action: n.Action, Lane: laneOf(n).String()}
		for _, b := range n.Blockers {
			a.Blockers = append(a.Blockers, blockerView{Kind: b.Kind, Pod: b.Pod, Detail: b.Detail, Blocks: b.Blocks})
		}
		pg.Attention = append(pg.Attention, a)
	}
	pg.Drift = groupDrift(p.Drift)
	pg.Grouped = len(p.Nodes) > planHTMLNodes
	if pg.Grouped {
		pg.Rows = groupedRows(p)
	} else {
		pg.Rows = nodeRows(p)
	}
	return pg
}

func groupDrift(drift []plan.Drift) []driftGroup {
	var out []driftGroup
	at := map[string]int{}
	for _, d := range drift {
		i, ok := at[d.Kind]
		if !ok {
			i = len(out)
			at[d.Kind] = i
			out = append(out, driftGroup{Kind: d.Kind})
		}
		if len(out[i].Entries) == planHTMLList {
			out[i].More++
			continue
		}
		out[i].Entries = append(out[i].Entries, d)
	}
	return out
}

// batchOf maps each node to its batch ("1", ...), or "manual" without autoUpgrade.
func batchOf(p *plan.Plan) map[string]string {
	out := map[string]string{}
	for i, b := range p.Batches {
		for _, n := range b {
			out[n] = fmt.Sprint(i + 1)
		}
	}
	for _, m := range p.Manual {
		out[m.Node] = "manual"
	}
	return out
}

func blockerSummary(n plan.NodePlan) string {
	parts := make([]string, len(n.Blockers))
	for i, b := range n.Blockers {
		parts[i] = b.Kind + " " + b.Pod
	}
	return strings.Join(parts, ", ")
}

func nodeRows(p *plan.Plan) []nodeRow {
	batch := batchOf(p)
	rows := make([]nodeRow, len(p.Nodes))
	for i, n := range p.Nodes {
		rows[i] = nodeRow{Name: n.Name, Action: n.Action, Owner: arrow(n.OldOwner, n.NewOwner), Pool: dash(n.Pool),
			Image: imageChange(n.OldImage, n.NewImage), Batch: dash(batch[n.Name]), Blockers: blockerSummary(n), Count: 1}
	}
	return rows
}

// groupedRows are the nodes per pool, action and batch, in the order of the nodes: the
// names of the first few, the drivers (the one, or how many), the count, the blockers' kinds.
func groupedRows(p *plan.Plan) []nodeRow {
	batch := batchOf(p)
	type key struct{ pool, action, batch string }
	type group struct {
		names   []string
		drivers map[string]bool
		kinds   map[string]bool
	}
	var rows []nodeRow
	var groups []group
	at := map[key]int{}
	for _, n := range p.Nodes {
		k := key{n.Pool, n.Action, batch[n.Name]}
		i, ok := at[k]
		if !ok {
			i = len(rows)
			at[k] = i
			rows = append(rows, nodeRow{Action: n.Action, Pool: dash(n.Pool), Batch: dash(k.batch)})
			groups = append(groups, group{drivers: map[string]bool{}, kinds: map[string]bool{}})
		}
		rows[i].Count++
		g := &groups[i]
		if len(g.names) < 3 {
			g.names = append(g.names, n.Name)
		}
		g.drivers[laneOf(n).Driver] = true
		for _, b := range n.Blockers {
			g.kinds[b.Kind] = true
		}
	}
	for i := range rows {
		g := groups[i]
		rows[i].Name = strings.Join(g.names, ", ")
		if more := rows[i].Count - len(g.names); more > 0 {
			rows[i].Name += fmt.Sprintf(" and %d more", more)
		}
		drivers := sortedKeys(g.drivers)
		rows[i].Owner = dash(strings.Join(drivers, ", "))
		if len(drivers) > 3 {
			rows[i].Owner = fmt.Sprintf("%s and %d more drivers", strings.Join(drivers[:3], ", "), len(drivers)-3)
		}
		rows[i].Blockers = strings.Join(sortedKeys(g.kinds), ", ")
	}
	return rows
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return sortedStrings(out)
}

func sortedStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// newTimeline draws the batches as bars over the estimated time, a lane per driver and pool,
// and beside them the nodes no batch holds (blocked, held, losing or gaining a driver); nil
// without batches.
func newTimeline(p *plan.Plan) *timelineView {
	if len(p.Batches) == 0 {
		return nil
	}
	est := p.RolloutEstimate()
	lanes, segs := batchSegments(p)
	lanes, marks := outsideBatches(p, lanes)
	tv := &timelineView{Basis: estimateBasis(p), PlotX: tlLabelW, MarkX: tlLabelW + tlPlotW + 16}
	rowOf := tv.fitLanes(lanes)
	tv.Width = tlLabelW + tlPlotW + 16 + tlMarkW
	tv.Height = tlTop + len(tv.Lanes)*tlLaneH + 8
	_, total := est.Total()
	scale := float64(tlPlotW) / float64(total)
	px := func(d time.Duration) int { return int(math.Round(float64(d) * scale)) }
	tv.addBars(segs, est, rowOf, px)
	tv.addTicks(total, px)
	tv.addMarks(marks, rowOf)
	return tv
}

// laneMarks are the nodes outside the batches of one kind (blocked, held, losing or gaining a
// driver) in one lane: each node's name and what it waits on, and its blockers' kinds.
type laneMarks struct {
	lane  lane
	kind  string
	what  []string // the node, with its blockers
	names []string
	kinds map[string]bool
}

// outsideBatches are the nodes no batch holds, per lane and kind in the order of the nodes,
// and the lanes with those only a mark has added after the batches' lanes.
func outsideBatches(p *plan.Plan, lanes []lane) ([]lane, []*laneMarks) {
	seen := map[lane]bool{}
	for _, l := range lanes {
		seen[l] = true
	}
	type key struct {
		lane lane
		kind string
	}
	at := map[key]*laneMarks{}
	var marks []*laneMarks
	for _, n := range p.Nodes {
		switch n.Action {
		case plan.NodeBlocked, plan.NodeHeld, plan.NodeLoseDriver, plan.NodeGainDriver:
		default:
			continue
		}
		l := laneOf(n)
		if !seen[l] {
			seen[l] = true
			lanes = append(lanes, l)
		}
		m := at[key{l, n.Action}]
		if m == nil {
			m = &laneMarks{lane: l, kind: n.Action, kinds: map[string]bool{}}
			at[key{l, n.Action}] = m
			marks = append(marks, m)
		}
		what := n.Name
		if len(n.Blockers) > 0 {
			what += ": " + blockerSummary(n)
		}
		m.what = append(m.what, what)
		m.names = append(m.names, n.Name)
		for _, b := range n.Blockers {
			m.kinds[b.Kind] = true
		}
	}
	return lanes, marks
}

// fitLanes draws a row per lane, up to planHTMLLanes; past it a row per driver (all its pools),
// and past planHTMLLanes drivers the last ones in one row. It returns the row of each lane.
func (tv *timelineView) fitLanes(lanes []lane) func(lane) int {
	merge := func(l lane) lane { return l }
	if len(lanes) > planHTMLLanes {
		tv.Collapsed = fmt.Sprintf("%d lanes: drawn per driver (all its pools in one lane)", len(lanes))
		index := map[string]int{}
		for _, l := range lanes {
			if _, ok := index[l.Driver]; !ok {
				index[l.Driver] = len(index)
			}
		}
		merge = func(l lane) lane {
			if index[l.Driver] >= planHTMLLanes-1 && len(index) > planHTMLLanes {
				return lane{Driver: "other drivers", Pool: "all pools"}
			}
			return lane{Driver: l.Driver, Pool: "all pools"}
		}
		if len(index) > planHTMLLanes {
			tv.Collapsed += fmt.Sprintf("; %d drivers: the last %d in one lane", len(index), len(index)-planHTMLLanes+1)
		}
	}
	row := map[lane]int{}
	for _, l := range lanes {
		m := merge(l)
		if _, ok := row[m]; !ok {
			row[m] = len(tv.Lanes)
			y := tlTop + row[m]*tlLaneH
			tv.Lanes = append(tv.Lanes, laneView{Y: y, TextY: y + 13, PoolY: y + 25, Driver: dash(m.Driver), Pool: dash(m.Pool), Background: row[m]%2 == 0})
		}
	}
	return func(l lane) int { return row[merge(l)] }
}

// addBars draws a bar per batch and row (the segments of a batch in lanes drawn as one row
// merged), each titled with its nodes and its times.
func (tv *timelineView) addBars(segs []batchSegment, est *plan.Estimate, rowOf func(lane) int, px func(time.Duration) int) {
	type barKey struct {
		batch int
		row   int
	}
	bars := map[barKey]int{}
	for _, s := range segs {
		k := barKey{s.Batch, rowOf(s.Lane)}
		i, ok := bars[k]
		if !ok {
			i = len(tv.Bars)
			bars[k] = i
			x := tlLabelW + px(est.Start(s.Batch))
			y := tlTop + k.row*tlLaneH + (tlLaneH-tlBarH)/2
			w := max(px(est.Max()), 2)
			tv.Bars = append(tv.Bars, barView{Batch: s.Batch + 1, X: x, Y: y, W: w, MinW: max(px(est.Min()), 1), H: tlBarH,
				TextX: x + w/2, TextY: y + tlBarH/2 + 4, Label: fmt.Sprint(s.Batch + 1), ShowLabel: w >= 8*len(fmt.Sprint(s.Batch+1))+4})
		}
		b := &tv.Bars[i]
		if b.Nodes != "" {
			b.Nodes += " "
		}
		b.Nodes += strings.Join(s.Nodes, " ")
	}
	for i := range tv.Bars {
		b := &tv.Bars[i]
		names := strings.Fields(b.Nodes)
		shown := names
		if len(shown) > planHTMLList {
			shown = shown[:planHTMLList]
		}
		b.Title = fmt.Sprintf("batch %d, %s: %s", b.Batch, plural(len(names), "node"), strings.Join(shown, ", "))
		if len(names) > len(shown) {
			b.Title += fmt.Sprintf(" and %d more", len(names)-len(shown))
		}
		b.Title += fmt.Sprintf(" (starts by %s, takes %s to %s)", humanDuration(est.Start(b.Batch-1)), humanDuration(est.Min()), humanDuration(est.Max()))
	}
}

// addTicks draws the time axis, at a round step.
func (tv *timelineView) addTicks(total time.Duration, px func(time.Duration) int) {
	step := tickStep(total)
	for t := time.Duration(0); t <= total; t += step {
		tv.Ticks = append(tv.Ticks, tickView{X: tlLabelW + px(t), Label: humanDuration(t)})
	}
}

// addMarks draws the nodes outside the batches right of the plot, a mark per row and kind
// (the marks of lanes drawn as one row merged), and widens the timeline to hold them.
func (tv *timelineView) addMarks(marks []*laneMarks, rowOf func(lane) int) {
	type mk struct {
		row  int
		kind string
	}
	at := map[mk]*laneMarks{}
	var order []mk
	for _, lm := range marks {
		m := mk{rowOf(lm.lane), lm.kind}
		if at[m] == nil {
			order = append(order, m)
			at[m] = &laneMarks{kinds: map[string]bool{}}
		}
		merged := at[m]
		merged.what = append(merged.what, lm.what...)
		merged.names = append(merged.names, lm.names...)
		for kind := range lm.kinds {
			merged.kinds[kind] = true
		}
	}
	offset := map[int]int{}
	for _, m := range order {
		label, title := markText(m.kind, at[m])
		y := tlTop + m.row*tlLaneH + (tlLaneH-tlBarH)/2
		x := tv.MarkX + offset[m.row]
		w := len([]rune(label))*15/2 + 14
		offset[m.row] += w + 6
		tv.Marks = append(tv.Marks, markView{Kind: m.kind, X: x, Y: y, W: w, TextY: y + tlBarH/2 + 4, Label: label, Title: title})
	}
	for _, off := range offset {
		tv.Width = max(tv.Width, tv.MarkX+off)
	}
}

// markText is a mark's label — the node when it is one, else how many; then the kinds of
// their blockers — and its title, the nodes with their blockers up to planHTMLList.
func markText(kind string, m *laneMarks) (string, string) {
	nodes := m.what
	label := fmt.Sprintf("%s %d %s", markSymbol[kind], len(nodes), kind)
	if len(nodes) == 1 {
		label = fmt.Sprintf("%s %s %s", markSymbol[kind], m.names[0], kind)
	}
	if kinds := sortedKeys(m.kinds); len(kinds) > 0 {
		label += ": " + strings.Join(kinds, ", ")
	}
	shown := nodes
	if len(shown) > planHTMLList {
		shown = shown[:planHTMLList]
	}
	title := strings.Join(shown, "; ")
	if len(nodes) > len(shown) {
		title += fmt.Sprintf("; and %d more", len(nodes)-len(shown))
	}
	return label, title
}

var markSymbol = map[string]string{
	plan.NodeBlocked:    "✕",
	plan.NodeHeld:       "⏸",
	plan.NodeLoseDriver: "−",
	plan.NodeGainDriver: "+",
}

// tickStep is a round step for the time axis: at most about 8 ticks.
func tickStep(total time.Duration) time.Duration {
	for _, m := range []int{1, 2, 5, 10, 15, 30, 60, 120, 240, 480, 720, 1440, 2880, 10080} {
		if step := time.Duration(m) * time.Minute; total/step <= 8 {
			return step
		}
	}
	return total / 8
}

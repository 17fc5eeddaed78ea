package picture

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/driverguard/driverguard/test/controlplane"
)

var update = flag.Bool("update", false, "rewrite docs/plan-example.png from the screenshot")

// root is the repository root (this package is test/picture).
var root = func() string {
	abs, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	return abs
}()

// The screenshot's viewport: the README's picture (the header and the timeline of the example).
const viewW, viewH = 1100, 600

// exampleArgs are docs/plan.md's worked example.
var exampleArgs = []string{"plan", "-f", "examples/multi-driver.yaml", "-f", "examples/rollout.yaml", "--nodes", "examples/nodes.yaml",
	"--drivers", "examples/drivers.yaml", "--pods", "examples/workloads.yaml"}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// plan runs driverguard plan of the worked example with -o format: its output, and the exit
// code (1: the example cannot proceed, two nodes are blocked).
func plan(t *testing.T, format string) []byte {
	t.Helper()
	binOnce.Do(func() { binPath, binErr = controlplane.DriverguardBinary(root, "picture") })
	require.NoError(t, binErr, "building driverguard (or set DRIVERGUARD_BIN)")
	cmd := exec.CommandContext(t.Context(), binPath, append(exampleArgs, "-o", format)...)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "plan -o %s: %s", format, stderr.String())
	require.Equal(t, 1, exit.ExitCode(), "plan -o %s exits 1 as the other formats: %s", format, stderr.String())
	return stdout.Bytes()
}

// browser starts Debian's headless chromium; it fails (not skips) without one: hack/tools.sh
// browser installs it, and make test runs that first.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("DRIVERGUARD_CHROMIUM")
	if path == "" {
		var err error
		path, err = exec.LookPath("chromium")
		require.NoError(t, err, "no chromium: run 'bash hack/tools.sh browser' (installs Debian's chromium) or set DRIVERGUARD_CHROMIUM")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(viewW, viewH), chromedp.Flag("headless", "new"))
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(cancelCtx)
	return bctx
}

// server serves pages on 127.0.0.1 and records every request it gets.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

func serve(t *testing.T, files map[string][]byte) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.URL.Path)
		s.mu.Unlock()
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		switch filepath.Ext(r.URL.Path) {
		case ".html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		case ".js":
			w.Header().Set("Content-Type", "text/javascript")
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// networkLog records every request the browser sends (the DevTools protocol's network log,
// which chromedp enables on every tab).
func networkLog(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var urls []string
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			urls = append(urls, e.Request.URL)
			mu.Unlock()
		}
	}))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(urls)
	}
}

// pageState is what the page shows after it loaded, read from its DOM.
type pageState struct {
	Status  string `json:"status"`
	Batches []struct {
		Batch   string  `json:"batch"`
		Nodes   string  `json:"nodes"`
		Width   float64 `json:"width"`
		X       float64 `json:"x"`
		Visible bool    `json:"visible"`
	} `json:"batches"`
	Lanes []string `json:"lanes"`
	Marks []struct {
		Kind    string `json:"kind"`
		Text    string `json:"text"`
		Title   string `json:"title"`
		Visible bool   `json:"visible"`
	} `json:"marks"`
	Attention []struct {
		Node     string   `json:"node"`
		Text     string   `json:"text"`
		Blockers []string `json:"blockers"`
		Visible  bool     `json:"visible"`
	} `json:"attention"`
	Drift []struct {
		Node    string `json:"node"`
		Kind    string `json:"kind"`
		Visible bool   `json:"visible"`
	} `json:"drift"`
	Estimate string `json:"estimate"`
	Rows     int    `json:"rows"`
	Shown    int    `json:"shown"`
}

const readPage = `(() => {
  const vis = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && e.checkVisibility({visibilityProperty: true}); };
  const rows = [...document.querySelectorAll("#nodes tbody tr")];
  return {
    status: document.getElementById("status").textContent,
    batches: [...document.querySelectorAll("#timeline g.batch")].map(g => {
      const r = g.querySelector("rect.bar").getBoundingClientRect();
      return {batch: g.dataset.batch, nodes: g.dataset.nodes, width: r.width, x: r.x, visible: vis(g)};
    }),
    lanes: [...document.querySelectorAll("#timeline text.pool")].map(e => e.textContent),
    marks: [...document.querySelectorAll("#timeline g.mark")].map(g => ({kind: g.dataset.kind, text: g.querySelector("text").textContent, title: g.querySelector("title").textContent, visible: vis(g)})),
    attention: [...document.querySelectorAll("#attention > li")].map(li => ({node: li.dataset.node, text: li.textContent,
      blockers: [...li.querySelectorAll("li[data-kind]")].map(b => b.dataset.kind), visible: vis(li)})),
    drift: [...document.querySelectorAll("#drift li")].map(li => ({node: li.dataset.node, kind: li.dataset.kind, visible: vis(li)})),
    estimate: document.getElementById("estimate").textContent,
    rows: rows.length,
    shown: rows.filter(r => !r.hidden).length,
  };
})()`

// TestPlanPage loads plan -o html of the worked example in headless Chromium: the batches,
// the blocked nodes with their blockers and the drift are on the page after it loaded and
// visible; the filter filters the node table; the screenshot is a picture (not blank, the
// timeline's bars drawn); and the browser sent no request but the page's own.
func TestPlanPage(t *testing.T) {
	page := plan(t, "html")
	srv := serve(t, map[string][]byte{"/plan.html": page})
	ctx := browser(t)
	requests := networkLog(t, ctx)

	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(viewW, viewH), chromedp.Navigate(srv.URL+"/plan.html"), chromedp.WaitVisible(chromedp.ID("timeline"))))
	st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](readPage))
	require.NoError(t, err)
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)

	// the batches of docs/plan.md: 1. npu-atom-canary-01, npu-rebel-01 (two lanes); 2. npu-rebel-03
	batches := map[string][]string{}
	var x1, x2 float64
	for _, b := range st.Batches {
		assert.True(t, b.Visible, "batch %s is visible", b.Batch)
		assert.Positive(t, b.Width, "batch %s is drawn", b.Batch)
		batches[b.Batch] = append(batches[b.Batch], strings.Fields(b.Nodes)...)
		if b.Batch == "1" {
			x1 = b.X
		} else {
			x2 = b.X
		}
	}
	assert.Equal(t, map[string][]string{"1": {"npu-atom-canary-01", "npu-rebel-01"}, "2": {"npu-rebel-03"}}, batches)
	assert.Greater(t, x2, x1, "batch 2 starts after batch 1 on the timeline")
	assert.Contains(t, st.Lanes, "atom-ubuntu22.04-6.8.0-90-generic")
	assert.Contains(t, st.Lanes, "rebel-rhel9.2-5.14.0-284.11.1.el9.2", "the blocked node's lane")
	assert.Contains(t, st.Estimate, "An estimate")
	assert.Contains(t, st.Estimate, "maxParallelUpgrades 2")
	assert.Contains(t, st.Estimate, "drain.timeoutSeconds 300")
	assert.Contains(t, st.Status, "Cannot proceed")

	// blocked nodes: marked on the timeline and listed with their blockers
	marks := map[string]bool{}
	for _, m := range st.Marks {
		assert.True(t, m.Visible, m.Text)
		assert.Equal(t, "blocked", m.Kind)
		marks[m.Text] = true
		assert.Contains(t, m.Title, ": ", "the mark's tooltip names the blocking pods")
	}
	assert.Equal(t, map[string]bool{"✕ npu-atom-canary-02 blocked: PodDisruptionBudget": true, "✕ npu-rebel-02 blocked: NPUPod, NoController": true}, marks)
	blockers := map[string][]string{}
	for _, a := range st.Attention {
		assert.True(t, a.Visible, a.Node)
		blockers[a.Node] = a.Blockers
	}
	assert.Equal(t, map[string][]string{
		"npu-atom-canary-02": {"PodDisruptionBudget"},
		"npu-rebel-01":       {"SingleReplica"},
		"npu-rebel-02":       {"NPUPod", "NoController"},
	}, blockers)

	// the drift now
	drift := map[string]bool{}
	for _, d := range st.Drift {
		assert.True(t, d.Visible, d.Node)
		drift[d.Node+" "+d.Kind] = true
	}
	assert.True(t, drift["npu-nofamily-01 DriverFamilyLabelMissing"], "drift: %v", drift)
	assert.True(t, drift["npu-rebel-01 StaleOwnerLabel"], "drift: %v", drift)
	assert.Len(t, st.Drift, 9)

	// every node a row; the filter keeps the blocked ones
	assert.Equal(t, 12, st.Rows)
	assert.Equal(t, 12, st.Shown)
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("filter"), "blocked")))
	st, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](readPage))
	require.NoError(t, err)
	assert.Equal(t, 2, st.Shown, "the filter 'blocked' shows the two blocked nodes")

	// the screenshot: a picture, with the bars of the timeline in it
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	assertPicture(t, img)
	checkExample(t, shot, img)

	// no request but the page: the browser's network log and the server's
	assert.Equal(t, []string{srv.URL + "/plan.html"}, requests(), "the browser's network log")
	assert.Equal(t, []string{"/plan.html"}, withoutFavicon(srv.got()), "the requests the server got")
}

// withoutFavicon drops the browser's own request for /favicon.ico, which it sends for any page
// served over HTTP whatever the page says (it is not in the page's network log: file:// and
// a ticket attachment send none).
func withoutFavicon(paths []string) []string {
	return slices.DeleteFunc(paths, func(p string) bool { return p == "/favicon.ico" })
}

// assertPicture checks that a screenshot is not blank: many colours, a good part of it not
// white, and the timeline's bar colours (#b6e3ff, #0969da) in it.
func assertPicture(t *testing.T, img image.Image) {
	t.Helper()
	b := img.Bounds()
	require.Equal(t, image.Rect(0, 0, viewW, viewH), b, "the viewport")
	colors := map[[3]uint32]int{}
	nonWhite := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := [3]uint32{r >> 8, g >> 8, bl >> 8}
			colors[c]++
			if c != [3]uint32{255, 255, 255} {
				nonWhite++
			}
		}
	}
	total := b.Dx() * b.Dy()
	assert.Greater(t, len(colors), 50, "a screenshot of text and bars has many colours")
	assert.Greater(t, nonWhite, total/20, "at least 5%% of the screenshot is not white")
	assert.Greater(t, colors[[3]uint32{0xb6, 0xe3, 0xff}], 1000, "the bars' fill is drawn")
	assert.Greater(t, colors[[3]uint32{0x09, 0x69, 0xda}], 300, "the bars' least-time part is drawn")
}

// checkExample keeps docs/plan-example.png, the README's screenshot, the picture of what the
// page is: -update writes it; otherwise it must be a PNG of the same size, its file of about
// the same size as this screenshot, and at most maxChangedPixels of its pixels visibly
// different from it (font rendering may differ a little between machines; the page may not).
func checkExample(t *testing.T, shot []byte, img image.Image) {
	t.Helper()
	path := filepath.Join(root, "docs", "plan-example.png")
	if *update {
		require.NoError(t, os.WriteFile(path, shot, 0o644))
		return
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err, "docs/plan-example.png: run go test ./test/picture -update")
	doc, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err, "docs/plan-example.png is a PNG")
	assert.Equal(t, img.Bounds(), doc.Bounds(), "docs/plan-example.png has the screenshot's size: run go test ./test/picture -update")
	ratio := float64(len(data)) / float64(len(shot))
	assert.True(t, ratio > 0.5 && ratio < 2, "docs/plan-example.png is %d bytes, the screenshot %d: the page changed? run go test ./test/picture -update", len(data), len(shot))
	assertPicture(t, doc)
	changed := changedPixels(img, doc)
	t.Logf("docs/plan-example.png: %.2f%% of the pixels differ from the screenshot", 100*changed)
	assert.LessOrEqual(t, changed, maxChangedPixels, "docs/plan-example.png is not what the page looks like now (%.1f%% of its pixels differ): run go test ./test/picture -update", 100*changed)
}

// maxChangedPixels is the share of pixels the README's screenshot may differ by from the page
// as the browser draws it now.
const maxChangedPixels = 0.03

// changedPixels is the share of pixels of a and b (of one size) that differ visibly: by more
// than a quarter of the range in a colour channel.
func changedPixels(a, b image.Image) float64 {
	r := a.Bounds()
	if r.Empty() {
		return 0
	}
	changed := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ar, ag, ab, _ := a.At(x, y).RGBA()
			br, bg, bb, _ := b.At(x, y).RGBA()
			if channelDiff(ar, br) > 0x4000 || channelDiff(ag, bg) > 0x4000 || channelDiff(ab, bb) > 0x4000 {
				changed++
			}
		}
	}
	return float64(changed) / float64(r.Dx()*r.Dy())
}

func channelDiff(x, y uint32) uint32 {
	if x > y {
		return x - y
	}
	return y - x
}

// mermaidBlock is the ticket's mermaid block, as a CommonMark parser reads it.
func mermaidBlock(t *testing.T, md []byte) string {
	t.Helper()
	doc := goldmark.New().Parser().Parse(text.NewReader(md))
	var blocks []string
	require.NoError(t, ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if fc, ok := n.(*ast.FencedCodeBlock); ok && entering && string(fc.Language(md)) == "mermaid" {
			var b strings.Builder
			for i := 0; i < fc.Lines().Len(); i++ {
				seg := fc.Lines().At(i)
				b.Write(seg.Value(md))
			}
			blocks = append(blocks, b.String())
		}
		return ast.WalkContinue, nil
	}))
	require.Len(t, blocks, 1, "one mermaid block in the ticket")
	return blocks[0]
}

const mermaidPage = `<!doctype html><html><head><meta charset="utf-8"><script src="/mermaid.min.js"></script></head><body><div id="out"></div></body></html>`

// gantt is what mermaid drew: each task's bar and label, the sections' titles.
type gantt struct {
	Error string `json:"error"`
	Tasks []struct {
		ID    string  `json:"id"`
		Label string  `json:"label"`
		X     float64 `json:"x"`
		Width float64 `json:"width"`
	} `json:"tasks"`
	Sections []string `json:"sections"`
}

const renderGantt = `(async () => {
  try {
    mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
    const {svg} = await mermaid.render("gantt", %s);
    const out = document.getElementById("out");
    out.innerHTML = svg;
    const s = out.querySelector("svg");
    return {
      tasks: [...s.querySelectorAll("rect.task")].map(r => ({id: r.id.replace(/^gantt-/, ""), x: r.getBoundingClientRect().x, width: r.getBoundingClientRect().width,
        label: ((s.querySelector("#" + CSS.escape(r.id + "-text")) || {}).textContent || "").trim()})),
      sections: [...s.querySelectorAll("text.sectionTitle")].map(e => e.textContent.trim()),
    };
  } catch (e) { return {error: String(e && e.message || e)}; }
})()`

// TestTicketGantt draws the change ticket's mermaid block with mermaid's own library (npm's
// package, bin/mermaid.min.js, served with the block) in the headless browser, and finds the
// batches among the tasks it drew: a task per batch and lane, in the lanes' sections, batch 2
// after batch 1.
func TestTicketGantt(t *testing.T) {
	lib, err := os.ReadFile(filepath.Join(root, "bin", "mermaid.min.js"))
	require.NoError(t, err, "bin/mermaid.min.js: run 'bash hack/tools.sh browser' (npm's mermaid)")
	block := mermaidBlock(t, plan(t, "markdown"))
	srv := serve(t, map[string][]byte{"/ticket.html": []byte(mermaidPage), "/mermaid.min.js": lib})
	ctx := browser(t)
	requests := networkLog(t, ctx)

	quoted, err := json.Marshal(block) // a JavaScript string literal
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ticket.html")))
	g, err := chromedp.Run(ctx, chromedp.Evaluate[gantt](fmt.Sprintf(renderGantt, quoted), chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Empty(t, g.Error, "mermaid rendered the block:\n%s", block)
	labels := map[string]float64{}
	for _, task := range g.Tasks {
		assert.Positive(t, task.Width, task.ID)
		labels[task.ID+" "+task.Label] = task.X
	}
	assert.Equal(t, []string{"b1_0 batch 1 (1 node)", "b1_1 batch 1 (1 node)", "b2_2 batch 2 (1 node)"}, sortedKeys(labels))
	assert.Equal(t, labels["b1_0 batch 1 (1 node)"], labels["b1_1 batch 1 (1 node)"], "batch 1 starts at once in both lanes")
	assert.Greater(t, labels["b2_2 batch 2 (1 node)"], labels["b1_0 batch 1 (1 node)"], "batch 2 after batch 1")
	assert.Equal(t, []string{
		"rbln-driver-atom-canary / atom-ubuntu22.04-6.8.0-90-generic",
		"rbln-driver-rebel / rebel-ubuntu22.04-6.8.0-90-generic",
		"rbln-driver-rebel / rebel-ubuntu24.04-6.8.0-45-generic",
	}, g.Sections)
	for _, u := range requests() {
		assert.True(t, strings.HasPrefix(u, srv.URL+"/"), "mermaid is loaded from the local copy only, not %s", u)
	}
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestNetworkLogSeesRequests: the network log TestPlanPage finds empty does record a page's
// requests (a page with an image), so its emptiness means something.
func TestNetworkLogSeesRequests(t *testing.T) {
	srv := serve(t, map[string][]byte{"/probe.html": []byte(`<!doctype html><img src="/probe.png" alt="">`)})
	ctx := browser(t)
	requests := networkLog(t, ctx)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/probe.html")))
	assert.Contains(t, requests(), srv.URL+"/probe.png")
	assert.Contains(t, srv.got(), "/probe.png")
}

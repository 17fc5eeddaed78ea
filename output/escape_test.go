package output_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/output"
	"github.com/driverguard/driverguard/output/inerttest"
)

// TestEscape: what a terminal acts on, or what would break a line or a column, is shown as Go
// quotes it; printable Unicode and the space are kept byte for byte.
func TestEscape(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain ASCII is kept", "rbln-driver npu.family=atom /a/b.yaml", "rbln-driver npu.family=atom /a/b.yaml"},
		{"printable Unicode is kept", "노드-α ✓ 3.2.2 — “quoted” 🙂", "노드-α ✓ 3.2.2 — “quoted” 🙂"},
		{"a backslash is kept", `C:\x1b not an escape`, `C:\x1b not an escape`},
		{"empty", "", ""},
		{"CSI colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"OSC 8 hyperlink", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", `\x1b]8;;http://x\x1b\link\x1b]8;;\x1b\`},
		{"carriage return", "ok\rFORGED", `ok\rFORGED`},
		{"line break and tab", "a\nb\tc", `a\nb\tc`},
		{"CRLF", "a\r\nb", `a\r\nb`},
		{"backspace, bell, form feed, vertical tab", "\b\a\f\v", `\b\a\f\v`},
		{"NUL and other C0", "\x00\x01\x1f", `\x00\x01\x1f`},
		{"DEL", "\x7f", `\x7f`},
		{"C1 controls (NEL, CSI)", "\u0085\u009b", `\u0085\u009b`},
		{"bidi embeddings and overrides", "\u202a\u202b\u202c\u202d\u202e", `\u202a\u202b\u202c\u202d\u202e`},
		{"bidi isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"zero width, BOM, line and paragraph separators", "\u200b\ufeff\u2028\u2029", `\u200b\ufeff\u2028\u2029`},
		{"a non-ASCII space is not a plain space", "a\u00a0b", `a\u00a0b`},
		{"bytes that are not UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"a tag character (hidden text)", "x\U000E0041", `x\U000e0041`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := output.Escape(tc.in)
			assert.Equal(t, tc.want, got)
			inerttest.AssertInert(t, strings.ReplaceAll(got, "\n", "")) // not even the line break
			assert.NotContains(t, got, "\n")
			assert.Equal(t, got, output.Escape(got), "escaping twice changes nothing")
		})
	}
	t.Run("keeping", func(t *testing.T) {
		assert.Equal(t, "a\tb\\nc\\x1b", output.EscapeKeeping("a\tb\nc\x1b", "\t"))
		assert.Equal(t, "a\\tb\nc\\x1b", output.EscapeKeeping("a\tb\nc\x1b", "\n"))
	})
	t.Run("an inert string is returned as it is", func(t *testing.T) {
		s := strings.Repeat("inert ✓ ", 100)
		assert.Zero(t, testing.AllocsPerRun(10, func() { _ = output.Escape(s) }))
	})
}

// TestInertWriter: the backstop under every table keeps the lines its writer writes and
// escapes everything else a value could carry.
func TestInertWriter(t *testing.T) {
	var b bytes.Buffer
	w := output.InertWriter(&b)
	for _, v := range inerttest.Terminal {
		n, err := fmt.Fprintf(w, "row %s\n", v)
		require.NoError(t, err)
		assert.Equal(t, len("row \n")+len(v), n, "the bytes given are reported written")
	}
	got := b.String()
	inerttest.AssertInert(t, got)
	assert.Contains(t, got, `row \x1b[31mred\x1b[0m`+"\n")
	assert.Contains(t, got, `row a`+"\n"+`FAIL forged line\tcolumn`+"\n", "a line break is the writer's own: kept")
	assert.Contains(t, got, `\u202eevil`)
	assert.Equal(t, w, output.InertWriter(w), "wrapped once")

	_, err := output.InertWriter(failing{}).Write([]byte("\x1b"))
	assert.Error(t, err)
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestTableEscapesValues: the findings table escapes every value — the object, the rule, the
// message — so a finding stays one line of four columns and nothing reaches the terminal; a
// command's own table is written through InertWriter.
func TestTableEscapesValues(t *testing.T) {
	var fs []finding.Finding
	for _, v := range inerttest.All() {
		fs = append(fs, finding.Finding{Rule: "team.deny" + v, Level: finding.Deny, Object: finding.Object{Kind: "RBLNDriver", Name: v}, Message: "msg " + v})
	}
	got := write(t, output.Table, &output.Report{Findings: fs})
	inerttest.AssertInert(t, got)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	require.Len(t, lines, len(fs)+3, "a line per finding: %s", got)
	assert.Contains(t, got, `RBLNDriver/\x1b[31mred\x1b[0m`)
	assert.Contains(t, got, `msg a\nFAIL forged line\tcolumn`)

	own := &output.Report{Table: func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "NAME\n%s\n", "\x1b[31mred\r\u202e")
		return err
	}}
	got = write(t, output.Table, own)
	assert.Equal(t, "NAME\n"+`\x1b[31mred\r\u202e`+"\n", got)
}

// TestGitHubEscapesControls: a workflow command's message keeps its lines (%0A) and shows every
// other control character escaped.
func TestGitHubEscapesControls(t *testing.T) {
	got := write(t, output.GitHub, &output.Report{Findings: []finding.Finding{{Rule: "R\x1b", Level: finding.Deny, Message: "a\x1b[31m\nb\u202e"}}})
	assert.Equal(t, `::error title=R\x1b::a\x1b[31m%0Ab\u202e`+"\n", got)
	inerttest.AssertInert(t, got)
}

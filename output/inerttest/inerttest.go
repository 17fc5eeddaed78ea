// Package inerttest gives the writers' tests hostile values — strings from the cluster, the
// values or a policy that try to act on a terminal or to become a link, an image or HTML in a
// rendered ticket — and the assertions that an output stayed inert: no control character in
// a table, no link, image, autolink or HTML made of a value when the Markdown is rendered as a
// code host renders it (CommonMark with GitHub's extensions, bare URLs linked).
package inerttest

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// Evil is in every destination the hostile values try to make: a link, image or autolink to
// it was made from a value.
const Evil = "evil.example"

// Terminal are values that try to act on a terminal: colour, an OSC 8 hyperlink, a carriage
// return over the line, backspaces, the bell, C1 controls, bidi overrides and isolates, a
// line and a tab that would break the layout, a byte that is not UTF-8.
var Terminal = []string{
	"\x1b[31mred\x1b[0m",
	"\x1b]8;;http://" + Evil + "/osc\x1b\\click\x1b]8;;\x1b\\",
	"ok\rFORGED",
	"abc\b\b\bxyz\a",
	"c1\u0085\u009b31m",
	"\u202eevil\u202c \u202a\u202b\u202d \u2066\u2067\u2068\u2069",
	"a\nFAIL forged line\tcolumn",
	"bad\xffbyte\x00\x7f",
}

// Markdown are values that try to become a link, an image, an autolink or HTML, to close a
// code span or a fence, to split a table cell or end a line.
var Markdown = []string{
	"[x](http://" + Evil + "/link)",
	"![i](http://" + Evil + "/image.png)",
	"<http://" + Evil + "/autolink>",
	"<mail@" + Evil + ">",
	"https://" + Evil + "/bare",
	"HTTPS://" + strings.ToUpper(Evil) + "/UPPER",
	"www." + Evil + "/www",
	"WWW." + strings.ToUpper(Evil) + "/WWW",
	"write to someone@" + Evil,
	"ftp://" + Evil + "/ftp",
	"<img src=http://" + Evil + "/html onerror=alert(1)>",
	"<a href='http://" + Evil + "/a'>a</a>",
	"<!-- comment --><div>block</div>",
	"`` ` ``[t](http://" + Evil + "/tick)`",
	"```\n[f](http://" + Evil + "/fence)\n```",
	"a|b [c](http://" + Evil + "/cell) |",
	"  [s](http://" + Evil + "/space)  ",
	"line\n[n](http://" + Evil + "/newline)\n<div>x</div>",
	"[ref]\n\n[ref]: http://" + Evil + "/reference",
	"[ref][r] [r]: http://" + Evil + "/reference2",
	"&lt;b&gt; &#x3C;i&#x3E; &amp;",
	"\\[x\\](http://" + Evil + "/backslash)",
	"*em* _em_ ~~del~~ **strong** $x$ # h",
	"(http://" + Evil + "/paren)",
	"\u202e[bidi](http://" + Evil + "/bidi)",
}

// All are every hostile value.
func All() []string { return append(append([]string{}, Terminal...), Markdown...) }

// AssertInert asserts s holds no control character but the line break, no other rune
// unicode.IsPrint refuses (a bidi override) and no byte that is not UTF-8.
func AssertInert(t testing.TB, s string) {
	t.Helper()
	AssertInertKeeping(t, s, "\n")
}

// AssertInertKeeping is AssertInert allowing the control characters in keep (a tab in a
// fenced code block).
func AssertInertKeeping(t testing.TB, s, keep string) {
	t.Helper()
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strings.ContainsRune(keep, r) && !unicode.IsPrint(r) {
			start := max(0, i-40)
			assert.Failf(t, "not inert", "%U at byte %d: ...%q...", r, i, s[start:min(len(s), i+40)])
			return
		}
		i += n
	}
}

// Parse parses Markdown as a code host does: CommonMark with GitHub's extensions (tables,
// strikethrough, task lists and Linkify, which links bare URLs, www. and addresses).
func Parse(source []byte) ast.Node {
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	return md.Parser().Parse(text.NewReader(source))
}

// Render renders Markdown to HTML as Parse parses it.
func Render(t testing.TB, source []byte) string {
	t.Helper()
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	var b bytes.Buffer
	if err := md.Convert(source, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// AssertNoLiveMarkdown asserts that Markdown, rendered as a code host renders it, holds no
// link, image or autolink to Evil and no HTML at all (the writers write none of their own):
// every hostile value stayed text. It returns the number of links, images and autolinks the
// writer made itself.
func AssertNoLiveMarkdown(t testing.TB, source []byte) int {
	t.Helper()
	own := 0
	doc := Parse(source)
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var dest string
		switch n := n.(type) {
		case *ast.Link:
			dest = string(n.Destination)
		case *ast.Image:
			dest = string(n.Destination)
		case *ast.AutoLink:
			dest = string(n.URL(source))
		case *ast.RawHTML:
			assert.Failf(t, "HTML made of a value", "inline HTML %q", segments(n.Segments, source))
			return ast.WalkContinue, nil
		case *ast.HTMLBlock:
			assert.Failf(t, "HTML made of a value", "an HTML block %q", segments(n.Lines(), source))
			return ast.WalkContinue, nil
		default:
			return ast.WalkContinue, nil
		}
		if strings.Contains(strings.ToLower(dest), Evil) {
			assert.Failf(t, "a link made of a value", "%T to %q", n, dest)
		} else {
			own++
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	html := strings.ToLower(Render(t, source))
	for _, bad := range []string{"href=\"http://" + Evil, "src=\"http://" + Evil, "<img", "<div", "<script", "<!--"} {
		if i := strings.Index(html, bad); i >= 0 {
			assert.Failf(t, "HTML made of a value", "the rendered HTML holds %q: ...%s...", bad, html[max(0, i-80):min(len(html), i+80)])
		}
	}
	return own
}

func segments(s *text.Segments, source []byte) string {
	var b strings.Builder
	for i := range s.Len() {
		seg := s.At(i)
		b.Write(seg.Value(source))
	}
	return b.String()
}

package output

import (
	"strings"
)

// The Markdown writers (-o markdown: the findings table here, plan's change ticket) put every
// value from the input in the ticket through one of these, so that a code host rendering it
// (CommonMark with GitHub's extensions, bare URLs linked) makes no link, image, autolink or
// HTML of it, and a value cannot end its line, its table cell or its code span:
//
//   - MarkdownText for prose and table cells: control characters escaped (Escape), and a
//     backslash before every character Markdown or GFM reads inside a line;
//   - MarkdownCode for names, images, selectors, flags: a code span, fenced with more
//     backticks than any run in the value (MarkdownCodeCell in a table cell);
//   - MarkdownFence for a fenced code block of lines.

// MarkdownText escapes s for Markdown: control characters shown escaped (a value cannot break
// a line or a table row), and a backslash before every character Markdown or GFM reads in the
// middle of a line — emphasis, code, links and images, HTML and entities, table cells,
// strikethrough, math — and before what starts an autolink GFM makes of plain text ("www.",
// "://", the "@" of an address). What only counts at the start of a line (">", "-", "1.") is
// left: the writers never start a line with a value.
func MarkdownText(s string) string {
	s = Escape(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '`', '*', '_', '[', ']', '<', '&', '~', '|', '#', '$', '@', '!':
			b.WriteByte('\\')
		case ':':
			if strings.HasPrefix(s[i+1:], "//") {
				b.WriteByte('\\')
			}
		case '.':
			if i >= 3 && strings.EqualFold(s[i-3:i], "www") {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// MarkdownCode is s as a code span: literal (no emphasis, link, autolink or HTML), its
// control characters shown escaped, delimited by one backtick more than the longest run
// inside it, and padded with a space on each side when it starts or ends with a backtick (or
// with a space at both ends, which CommonMark would strip).
func MarkdownCode(s string) string {
	s = Escape(s)
	if s == "" {
		return "` `"
	}
	d := strings.Repeat("`", longestRun(s, '`')+1)
	if s[0] == '`' || s[len(s)-1] == '`' || s[0] == ' ' && s[len(s)-1] == ' ' {
		s = " " + s + " "
	}
	return d + s + d
}

// MarkdownCodeCell is MarkdownCode in a GFM table cell: a pipe splits a cell even inside a
// code span unless it is escaped (GFM removes the backslash before the span is read).
func MarkdownCodeCell(s string) string {
	return strings.ReplaceAll(MarkdownCode(s), "|", `\|`)
}

// MarkdownFence is the fence of a fenced code block holding lines: more backticks than any
// run inside them (at least three), so no line closes it.
func MarkdownFence(lines []string) string {
	run := 0
	for _, l := range lines {
		run = max(run, longestRun(l, '`'))
	}
	return strings.Repeat("`", max(3, run+1))
}

// longestRun is the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

package output

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape makes a value from the input inert for a terminal and for a one-line layout: every
// rune a terminal would act on or that would break a line or a column is written as Go writes
// it in a quoted string — ESC as \x1b (so "\x1b[31m" prints as the eight characters
// \x1b[31m), CR \r, LF \n, TAB \t, backspace \b, BEL \a, DEL \x7f, a C1 control as \u0085, a
// bidirectional override or isolate (U+202A–U+202E, U+2066–U+2069) as \u202e, any other rune
// unicode.IsPrint refuses (zero-width and format characters, line and paragraph separators,
// private-use and unassigned runes) the same way — and a byte that is not UTF-8 as \xff.
// Printable Unicode (letters, marks, digits, punctuation, symbols) and the ASCII space are
// kept as they are; a backslash is kept as it is (the escapes are for a human reader; the JSON
// and YAML outputs carry the value itself).
//
// A table or text writer shows each value it quotes from the input through Escape, so that a
// tab or a line break in it cannot break a column or a line either; every table is also
// written through InertWriter, so that a value a writer did not escape still cannot reach the
// terminal as a control sequence. (kubectl shows ESC as ^[ and CR as \r; this escapes every
// control character, and always Go's way, which says which character it was.)
func Escape(s string) string {
	return escape(s, "")
}

// EscapeKeeping is Escape keeping the control characters in keep (a tab inside a fenced code
// block; a line break a format encodes itself).
func EscapeKeeping(s, keep string) string {
	return escape(s, keep)
}

func escape(s, keep string) string {
	i := inertPrefix(s, keep)
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	return string(appendEscaped(b, s[i:], keep))
}

// inertPrefix is the length of the prefix of s that needs no escape.
func inertPrefix(s, keep string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !inert(r, n, keep) {
			return i
		}
		i += n
	}
	return len(s)
}

// inert reports whether the rune r, n bytes long, is shown as it is.
func inert(r rune, n int, keep string) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return false
	case r < 0x20 && keep != "":
		return strings.ContainsRune(keep, r)
	}
	return unicode.IsPrint(r)
}

func appendEscaped(b []byte, s, keep string) []byte {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\x`...)
			b = append(b, hex[s[i]>>4], hex[s[i]&0xf])
		case inert(r, n, keep):
			b = append(b, s[i:i+n]...)
		default:
			q := strconv.QuoteRune(r)
			b = append(b, q[1:len(q)-1]...)
		}
		i += n
	}
	return b
}

const hex = "0123456789abcdef"

// InertWriter writes what is written to it to w with every rune Escape escapes escaped,
// except the line break: the text of a table or report, whose lines are the writer's own,
// reaches w without a control character. It is the backstop under each table (writeTable,
// the commands' tables): a value written into it unescaped may still break a column or a line,
// but never acts on the terminal. A rune split across two writes is escaped byte by byte.
func InertWriter(w io.Writer) io.Writer {
	return inertWriterKeeping(w, "\n")
}

func inertWriterKeeping(w io.Writer, keep string) io.Writer {
	if iw, ok := w.(inertWriter); ok && iw.keep == keep {
		return w
	}
	return inertWriter{w: w, keep: keep}
}

type inertWriter struct {
	w    io.Writer
	keep string
}

func (iw inertWriter) Write(p []byte) (int, error) {
	i := inertPrefixBytes(p, iw.keep)
	if i == len(p) {
		return iw.w.Write(p)
	}
	b := make([]byte, 0, len(p)+16)
	b = append(b, p[:i]...)
	b = appendEscaped(b, string(p[i:]), iw.keep)
	if _, err := iw.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// inertPrefixBytes is inertPrefix of a write: a table writes its cells one at a time, most
// of them plain ASCII, and is not copied to be checked.
func inertPrefixBytes(p []byte, keep string) int {
	for i := 0; i < len(p); {
		c := p[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRune(p[i:])
		if !inert(r, n, keep) {
			return i
		}
		i += n
	}
	return len(p)
}

package registry

import (
	"slices"
	"strings"
)

// A message is what driverguard says of an image, in parts of two kinds (docs/audit.md
// "serve --audit": credentials never appear in output):
//
//   - its own words: the fixed phrases, what describe rebuilds of a failure, and the user's
//     own configuration it repeats — the image reference, the registry host, the sources'
//     names. Printed as they are: nothing in them came from a registry, and the image and
//     the sources are printed whole beside the message anyway.
//   - words from outside: what a credential source says is wrong with it (the API server's
//     error on reading a pull Secret, a file system's, the Docker config library's, a Secret's
//     type). Redacted (secrets.redact) of every secret the pass sent or was sent, in every
//     form — but of none that the message's own words hold, which redaction would only point
//     at.
//
// Redacting the whole message instead made "[redacted]" an oracle: with the password
// "rebellions", the image 127.0.0.1:5055/rebellions/atom/… was printed as the result's key and
// as 127.0.0.1:5055/[redacted]/atom/… in its message, and a one-letter password turned every
// such letter of a fixed phrase into "[redacted]".
type message struct{ parts []part }

type part struct {
	text    string
	outside bool
}

// say is a message in driverguard's own words.
func say(s string) message { return message{parts: []part{{text: s}}} }

// then is m followed by s, in driverguard's own words.
func (m message) then(s string) message {
	return message{parts: append(slices.Clip(m.parts), part{text: s})}
}

// quote is m followed by s, words from outside driverguard.
func (m message) quote(s string) message {
	return message{parts: append(slices.Clip(m.parts), part{text: s, outside: true})}
}

// and is m followed by o.
func (m message) and(o message) message { return message{parts: slices.Concat(m.parts, o.parts)} }

// empty: m says nothing.
func (m message) empty() bool {
	return !slices.ContainsFunc(m.parts, func(p part) bool { return p.text != "" })
}

// joinMessages is ms with sep (driverguard's own) between them.
func joinMessages(ms []message, sep string) message {
	var out message
	for i, m := range ms {
		if i > 0 {
			out = out.then(sep)
		}
		out = out.and(m)
	}
	return out
}

// render is the text of m with the words from outside redacted: of every secret s holds, but
// of none that m's own words (and ours, own words printed beside it) hold.
func (s *secrets) render(m message, ours ...string) string {
	for _, p := range m.parts {
		if !p.outside {
			ours = append(ours, p.text)
		}
	}
	var b strings.Builder
	for _, p := range m.parts {
		if p.outside {
			b.WriteString(s.redact(p.text, ours...))
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

package decode

import (
	"bytes"
	"fmt"

	"github.com/driverguard/driverguard/api/validation"
)

// separator starts the line that ends a YAML document.
const separator = "---"

// splitDocuments splits a stream into its documents exactly as apimachinery's YAMLReader does
// (k8s.io/apimachinery/pkg/util/yaml), but over bytes already read: each document is a slice
// of data where it can be (every line of it ends in "\n"), not a copy grown line by line. A
// line that starts with "---" ends a document (and starts it, when it comes first), and may be
// followed by spaces and a comment only; each line of a document ends in "\n" (a "\r\n"
// ending becomes "\n"). TestSplitDocumentsMatchesYAMLReader compares the two.
func splitDocuments(data []byte) ([][]byte, error) {
	var (
		docs    [][]byte
		start   = -1   // the current document as data[start:end], while it is one
		end     int    //
		buf     []byte // the current document, once it is not a slice of data
		copying bool
	)
	flush := func() {
		switch {
		case copying:
			if len(buf) > 0 {
				docs = append(docs, buf)
			}
		case start >= 0 && end > start:
			docs = append(docs, data[start:end:end])
		}
		start, end, buf, copying = -1, 0, nil, false
	}
	for pos := 0; pos < len(data); {
		lineEnd, contentEnd, next := len(data), len(data), len(data)
		if nl := bytes.IndexByte(data[pos:], '\n'); nl >= 0 {
			lineEnd, contentEnd, next = pos+nl+1, pos+nl, pos+nl+1
			if contentEnd > pos && data[contentEnd-1] == '\r' {
				contentEnd--
			}
		}
		line := data[pos:contentEnd]
		if bytes.HasPrefix(line, []byte(separator)) {
			rest := bytes.TrimSpace(line[len(separator):])
			if len(rest) > 0 && rest[0] != '#' {
				return nil, fmt.Errorf("invalid Yaml document separator: %s", validation.Truncate(string(rest), validation.MaxQuotedValue))
			}
			if start >= 0 || copying {
				flush() // the separator ends the document
				pos = next
				continue
			}
			// before any line of a document, YAMLReader keeps the separator as its first line
		}
		// The line as YAMLReader writes it: its content and "\n".
		if exact := contentEnd+1 == lineEnd; exact && !copying {
			if start < 0 {
				start = pos
			}
			end = lineEnd
		} else {
			if !copying {
				copying = true
				if start >= 0 {
					buf = append([]byte(nil), data[start:end]...)
				}
			}
			buf = append(append(buf, line...), '\n')
		}
		pos = next
	}
	flush()
	return docs, nil
}

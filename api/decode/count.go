package decode

import "fmt"

// valueBound is an upper bound of the values (maps, lists, keys and scalars) of a YAML or
// JSON text, counted without parsing it: a value can only start where a line starts or
// after an indicator — ',', '[', '{', or '-', ':' or '?' followed by a blank — and each such
// place starts at most two (a new map or list and its first entry). Parsing costs memory per
// value, not per byte ("{}," is one value in three bytes and hundreds of bytes once parsed),
// so a bound on values is what bounds a parse.
func valueBound(data []byte) int64 {
	var n int64
	var prev byte
	indicator := func(b byte) bool { return b == '-' || b == ':' || b == '?' }
	for _, b := range data {
		switch b {
		case '\n':
			n++
			if indicator(prev) {
				n++
			}
		case ',', '[', '{':
			n++
		case ' ', '\t', '\r':
			if indicator(prev) {
				n++
			}
		}
		prev = b
	}
	n++ // the document's first value
	if indicator(prev) {
		n++
	}
	return 2 * n
}

// CheckDocumentValues refuses a stream one of whose documents could hold more than max values
// (valueBound), before any of it is parsed: for streams whose documents are small by nature
// (the manifests Helm renders), so that a few MiB of tiny values cannot cost gigabytes.
func CheckDocumentValues(data []byte, source string, max int64) error {
	raws, err := splitDocuments(data)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	for i, raw := range raws {
		if n := valueBound(raw); n > max {
			return fmt.Errorf("%s: document %d could hold up to %d values, more than the %d one document may: it is not a rendered manifest; split it", source, i+1, n, max)
		}
	}
	return nil
}

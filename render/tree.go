package render

import "strconv"

// Helpers for values trees (maps, lists and scalars as decoded from YAML).

// lookup walks a values tree through map keys and list indexes. It reports the value and
// whether every key on the way exists.
func lookup(v any, path ...string) (any, bool) {
	for _, k := range path {
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// isEmpty reports whether a value renders as nothing: null, "", an empty list or map.
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

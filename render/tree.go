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

// copyTables copies the maps of a values tree, the maps in its maps included: what
// CoalesceTables and prune change. Lists and scalars, which nothing here changes, are shared.
func copyTables(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if t, ok := v.(map[string]any); ok {
			v = copyTables(t)
		}
		out[k] = v
	}
	return out
}

// prune removes every null value from m, recursively (null means "remove this key").
func prune(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(t)
		}
	}
}

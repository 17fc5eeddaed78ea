package render

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	yaml "go.yaml.in/yaml/v2"
)

// Manifest writes the rendered objects as a YAML stream, in the order `helm template` prints
// them: the RBLNClusterPolicy, then the RBLNDrivers (default first, then instances by key).
// Keys are sorted (the style of helm's toYaml); the output is byte-for-byte stable for the same
// result.
func Manifest(r *Result) ([]byte, error) {
	var buf bytes.Buffer
	docs := []any{&r.ClusterPolicy}
	for i := range r.Drivers {
		docs = append(docs, &r.Drivers[i])
	}
	for _, d := range docs {
		data, err := toYAML(d)
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", d, err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// toYAML encodes an API object as YAML with sorted keys. It goes through JSON, so the object's
// JSON tags (omitempty, omitzero) decide what is written, but decodes that JSON with
// encoding/json: sigs.k8s.io/yaml.Marshal re-parses it with the YAML parser, which made writing
// 500 RBLNDrivers cost three times their rendering.
func toYAML(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		return nil, err
	}
	return marshalYAML(sortedKeys(tree))
}

// chunkEntries is the size of the parts a large map or list is written in.
var chunkEntries = 4096

// marshalYAML is yaml.Marshal(tree), byte for byte, for a tree of yaml.MapSlices, lists and
// scalars: go-yaml's emitter keeps every event of a document until its end (a million
// annotations held 2 GB at once), so a map or list of more than chunkEntries entries under
// keys alone (spec.annotations, spec.tolerations) is written in parts of chunkEntries, each
// under the same keys so that it is indented, and wrapped, as in the whole.
// TestMarshalYAMLInParts compares the two.
func marshalYAML(tree any) ([]byte, error) {
	placeholders := map[string][]byte{}
	reduced, _, err := writeLarge(tree, nil, placeholders)
	if err != nil {
		return nil, err
	}
	out, err := yaml.Marshal(reduced)
	if err != nil || len(placeholders) == 0 {
		return out, err
	}
	for ph, body := range placeholders {
		i := bytes.Index(out, []byte(": "+ph+"\n"))
		if i < 0 {
			return yaml.Marshal(tree) // not where expected: write it whole
		}
		out = slices.Concat(out[:i], []byte(":\n"), body, out[i+len(ph)+3:])
	}
	return out, nil
}

// writeLarge returns v with each large map or list under keys alone (path) replaced by a
// placeholder, and the placeholder's lines in placeholders; changed reports a replacement.
func writeLarge(v any, path []string, placeholders map[string][]byte) (_ any, changed bool, _ error) {
	switch t := v.(type) {
	case yaml.MapSlice:
		if len(t) > chunkEntries && len(path) > 0 {
			ph, err := writeParts(path, len(t), func(i, j int) any { return t[i:j] }, placeholders)
			return ph, err == nil, err
		}
		var out yaml.MapSlice
		for i, item := range t {
			k, ok := item.Key.(string)
			if !ok || !simpleKey(k) {
				continue
			}
			nv, changed, err := writeLarge(item.Value, append(slices.Clip(path), k), placeholders)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = slices.Clone(t)
				}
				out[i].Value = nv
			}
		}
		if out != nil {
			return out, true, nil
		}
	case []any:
		if len(t) > chunkEntries && len(path) > 0 {
			ph, err := writeParts(path, len(t), func(i, j int) any { return t[i:j] }, placeholders)
			return ph, err == nil, err
		}
	}
	return v, false, nil
}

// simpleKey is a key written as it is, on one line, whatever the key before it.
func simpleKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return k != "y" && k != "Y" && k != "n" && k != "N" && strings.ToLower(k) != "yes" && strings.ToLower(k) != "no" &&
		strings.ToLower(k) != "on" && strings.ToLower(k) != "off" && strings.ToLower(k) != "true" && strings.ToLower(k) != "false" &&
		strings.ToLower(k) != "null"
}

// writeParts writes the n entries of a map or list at path in parts, and returns the
// placeholder that stands for them.
func writeParts(path []string, n int, part func(i, j int) any, placeholders map[string][]byte) (any, error) {
	var body []byte
	for i := 0; i < n; i += chunkEntries {
		// The part under the same keys: its lines are those of the whole, after one line per key.
		wrapped := part(i, min(i+chunkEntries, n))
		for k := len(path) - 1; k >= 0; k-- {
			wrapped = yaml.MapSlice{{Key: path[k], Value: wrapped}}
		}
		out, err := yaml.Marshal(wrapped)
		if err != nil {
			return nil, err
		}
		for range path {
			out = out[bytes.IndexByte(out, '\n')+1:]
		}
		body = append(body, out...)
	}
	var token [8]byte
	_, _ = rand.Read(token[:]) // a value no document holds
	ph := fmt.Sprintf("driverguard-part-%x-%d", token, len(placeholders))
	placeholders[ph] = body
	return ph, nil
}

// sortedKeys turns the maps of a JSON tree into yaml.MapSlices in the order go-yaml writes a
// map's keys (its keyList.Less on strings), so that Marshal writes the same bytes without
// sorting them itself: its comparator converts both keys to runes on every comparison, which
// made writing a million annotations take seconds. TestSortedKeysMatchesYAML compares both.
func sortedKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		keys := make(yamlKeys, 0, len(t))
		for k := range t {
			keys = append(keys, yamlKey{s: k, r: []rune(k)})
		}
		sort.Sort(keys)
		out := make(yaml.MapSlice, len(keys))
		for i, k := range keys {
			out[i] = yaml.MapItem{Key: k.s, Value: sortedKeys(t[k.s])}
		}
		return out
	case []any:
		for i, e := range t {
			t[i] = sortedKeys(e)
		}
	}
	return v
}

// yamlKey is a map key with its runes, computed once.
type yamlKey struct {
	s string
	r []rune
}

// yamlKeys sort string keys as go-yaml v2's keyList.Less does: runes in order, letters after
// other characters, runs of digits by their value.
type yamlKeys []yamlKey

func (l yamlKeys) Len() int      { return len(l) }
func (l yamlKeys) Swap(i, j int) { l[i], l[j] = l[j], l[i] }
func (l yamlKeys) Less(i, j int) bool {
	ar, br := l[i].r, l[j].r
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al := unicode.IsLetter(ar[i])
		bl := unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	yamlv3 "go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/util/validation/field"

	dgvalidation "github.com/driverguard/driverguard/api/validation"
)

// SourceKind says how the user gave a value.
type SourceKind int

// The value sources, in Helm's order of precedence (later wins).
const (
	FromFile      SourceKind = iota + 1 // -f/--values
	FromSetJSON                         // --set-json
	FromSet                             // --set
	FromSetString                       // --set-string
	FromSetFile                         // --set-file
)

// Flag is the command-line flag of the source kind.
func (k SourceKind) Flag() string {
	switch k {
	case FromFile:
		return "-f"
	case FromSetJSON:
		return "--set-json"
	case FromSet:
		return "--set"
	case FromSetString:
		return "--set-string"
	case FromSetFile:
		return "--set-file"
	}
	return ""
}

// Location is where the user wrote the value at a values path.
type Location struct {
	Kind SourceKind
	// Source is the values file as given ("<stdin>" for "-"), or the flag's argument
	// ("driver.image.tag=3").
	Source string
	// Line and Column locate the value in a values file, from 1 (0 on the command line).
	Line, Column int
	// KeyLine and KeyColumn locate the value's key in a values file (0 for a list item and on
	// the command line).
	KeyLine, KeyColumn int
	// Text is a scalar as written: the YAML source text ("3.10", "y"; unescaped when quoted),
	// the --set or --set-string text after '=', a --set-json scalar as JSON. "" for a map, a
	// list, and a --set-file value (a file's content).
	Text string
	// Plain reports an unquoted YAML scalar, whose type YAML infers from its text.
	Plain bool
}

// String is the location for a message: "values.yaml:3:10", or "--set driver.image.tag=3"
// (the argument cut to a readable length).
func (l Location) String() string {
	if l.Kind == FromFile {
		return fmt.Sprintf("%s:%d:%d", dgvalidation.Truncate(l.Source, dgvalidation.MaxFieldPath), l.Line, l.Column)
	}
	return l.Kind.Flag() + " " + dgvalidation.Truncate(l.Source, dgvalidation.MaxFieldPath)
}

// Sources index the user's values by where they were written: values path → file, line,
// column and the text as written. Messages quote what the user wrote (`3.10`, not the 3.1 YAML
// read), and a report can point at the line of a values key. Each source is parsed for this
// only when first asked, once; a values file larger than 4 MiB is not indexed (a value it may
// have set has no location). The zero value (and nil) has no sources.
type Sources struct {
	list []*source // in precedence order, lowest first
}

type source struct {
	kind SourceKind
	name string // the file as given, or the flag's argument
	data []byte // a values file's content
	// unindexed marks a values file too large to index (maxIndexedBytes): what it holds is
	// unknown here.
	unindexed bool

	once sync.Once
	root *yamlv3.Node // a values file's first document (nil when empty or unparsable)
	vals map[string]any
}

func (s *Sources) add(src *source) { s.list = append(s.list, src) }

// found says what a source holds at a path.
type found int

const (
	absent   found = iota // nothing there: an earlier source may hold it
	unknown               // the source is not indexed: where the value comes from is unknown
	here                  // the value is this source's
	merged                // a map the command line merged keys into: an earlier source may have written it
	replaced              // this source replaced an ancestor: no earlier source holds it
)

// Locate returns where the value at path — map keys and list indexes, e.g. "driver",
// "tolerations", "0" — was written: by the source that set it last under Helm's merge (values
// files merge map by map, anything else replaces; --set and --set-file assign leaves and
// list items; a map they merged keys into is the earlier source's when it wrote one). ok is
// false for a value no source wrote (a chart default).
func (s *Sources) Locate(path ...string) (Location, bool) {
	if s == nil {
		return Location{}, false
	}
	var mergedAt *Location // the last command-line source that merged keys into a map there
	for i := len(s.list) - 1; i >= 0; i-- {
		switch loc, f := s.list[i].locate(path); f {
		case here:
			return loc, true
		case merged:
			if mergedAt == nil {
				mergedAt = &loc
			}
		case replaced, unknown:
			return Location{}, false
		}
	}
	if mergedAt != nil {
		return *mergedAt, true
	}
	return Location{}, false
}

// LocateField is Locate for the field path of a values error, e.g.
// driver.instances.atom.nodeSelector[rebellions.ai/npu.family] or driver.tolerations[0].
func (s *Sources) LocateField(p *field.Path) (Location, bool) {
	return s.Locate(pathSegments(p)...)
}

func (src *source) locate(path []string) (Location, found) {
	if src.unindexed {
		return Location{}, unknown
	}
	src.once.Do(src.parse)
	if src.kind == FromFile {
		return src.locateYAML(path)
	}
	return src.locateValue(path)
}

// parse reads the source for locating: a values file as YAML nodes (the first document, as
// Helm reads it), a command-line value as its flag does, with --set values kept as text.
func (src *source) parse() {
	switch src.kind {
	case FromFile:
		var doc yamlv3.Node
		if err := yamlv3.NewDecoder(bytes.NewReader(src.data)).Decode(&doc); err == nil && len(doc.Content) > 0 {
			src.root = doc.Content[0]
		}
		src.data = nil
		return
	case FromSetJSON:
		src.vals = map[string]any{}
		_ = strvals.ParseJSON(src.name, src.vals)
	case FromSet, FromSetString:
		src.vals = map[string]any{}
		_ = strvals.ParseIntoString(src.name, src.vals) // every value as the text given
	case FromSetFile:
		src.vals = map[string]any{}
		_ = strvals.ParseIntoFile(src.name, src.vals, func([]rune) (any, error) { return "", nil })
	}
}

// locateYAML walks a values file's nodes: a map missing the key leaves it to earlier files
// (maps merge); a list or a scalar on the way replaced whatever earlier files held.
func (src *source) locateYAML(path []string) (Location, found) {
	n := src.root
	var key *yamlv3.Node
	for _, seg := range path {
		n = deref(n)
		if n == nil {
			return Location{}, absent
		}
		switch n.Kind {
		case yamlv3.MappingNode:
			key, n = mappingValue(n, seg, 0)
			if n == nil {
				return Location{}, absent
			}
		case yamlv3.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n.Content) {
				return Location{}, replaced
			}
			key, n = nil, n.Content[i]
		default:
			return Location{}, replaced
		}
	}
	n = deref(n)
	if n == nil {
		return Location{}, absent
	}
	loc := Location{Kind: FromFile, Source: src.name, Line: n.Line, Column: n.Column}
	if key != nil {
		loc.KeyLine, loc.KeyColumn = key.Line, key.Column
	}
	if n.Kind == yamlv3.ScalarNode {
		loc.Text, loc.Plain = n.Value, n.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) == 0
	}
	return loc, here
}

// deref follows an alias to its anchor.
func deref(n *yamlv3.Node) *yamlv3.Node {
	for i := 0; n != nil && n.Kind == yamlv3.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yamlv3.AliasNode {
		return nil
	}
	return n
}

// mappingValue finds key in a mapping as Helm's YAML reader does: the last of repeated keys
// wins, explicit keys win over merged ones (<<), earlier merged maps over later ones.
func mappingValue(m *yamlv3.Node, key string, depth int) (*yamlv3.Node, *yamlv3.Node) {
	var k, v *yamlv3.Node
	var merges []*yamlv3.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn := m.Content[i]
		if kn.Kind == yamlv3.ScalarNode && kn.Value == "<<" && kn.Style == 0 {
			merges = append(merges, m.Content[i+1])
			continue
		}
		if keyText(kn) == key {
			k, v = kn, m.Content[i+1]
		}
	}
	if v != nil || depth > 10 {
		return k, v
	}
	for _, mv := range merges {
		mv = deref(mv)
		if mv == nil {
			continue
		}
		candidates := []*yamlv3.Node{mv}
		if mv.Kind == yamlv3.SequenceNode {
			candidates = mv.Content
		}
		for _, c := range candidates {
			if c = deref(c); c != nil && c.Kind == yamlv3.MappingNode {
				if k, v := mappingValue(c, key, depth+1); v != nil {
					return k, v
				}
			}
		}
	}
	return nil, nil
}

// keyText is a key as Helm's YAML reader (YAML 1.1) turns it into a string: an unquoted y or
// on is the boolean true, so the key "true".
func keyText(n *yamlv3.Node) string {
	n = deref(n)
	if n == nil || n.Kind != yamlv3.ScalarNode {
		return ""
	}
	if n.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle) == 0 {
		switch n.Value {
		case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE":
			return "true"
		case "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE":
			return "false"
		}
	}
	return n.Value
}

// locateValue walks a command-line value: maps and lists lead on (--set assigns leaves and
// list items into what is there); a scalar on the way replaced what was there.
func (src *source) locateValue(path []string) (Location, found) {
	var cur any = src.vals
	for _, seg := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return Location{}, absent
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) || c[i] == nil {
				// --set a[2]=x leaves a[0] and a[1] to the values before it
				return Location{}, absent
			}
			cur = c[i]
		default:
			return Location{}, replaced
		}
	}
	loc := Location{Kind: src.kind, Source: src.name}
	switch v := cur.(type) {
	case map[string]any:
		return loc, merged // --set a.b=x merges b into a map an earlier source may have written
	case []any:
	case string:
		if src.kind != FromSetFile {
			loc.Text = v
		}
	default:
		if data, err := json.Marshal(v); err == nil {
			loc.Text = string(data)
		}
	}
	return loc, here
}

// pathSegments splits a field path into its map keys and list indexes:
// driver.instances.a.nodeSelector[rebellions.ai/npu.family] → driver, instances, a,
// nodeSelector, rebellions.ai/npu.family. A key holding '.', '[' or ']' outside brackets
// cannot be told apart (such keys are errors of their own).
func pathSegments(p *field.Path) []string { return splitPath(p.String()) }

// splitPath splits a field path written as text into its segments (see pathSegments).
func splitPath(s string) []string {
	var segs []string
	for len(s) > 0 {
		switch {
		case s[0] == '.':
			s = s[1:]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				end = len(s) - 1
			}
			segs = append(segs, s[1:end])
			s = s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			segs = append(segs, s[:end])
			s = s[end:]
		}
	}
	return segs
}

package suite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/plan"
)

// MaxFileBytes bounds a suite file.
const MaxFileBytes = 4 << 20

// Error is a suite that cannot be read: the file, the line (0: none) and what is wrong.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Find returns every suite file under paths (a suite file itself, or a folder searched
// recursively for *.dgtest.yaml, entries starting with "." skipped), sorted, without
// duplicates. A path that does not exist, or a folder without suites, is an error.
func Find(paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var out []string
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("finding suites: %w", err)
		}
		if !info.IsDir() {
			out = append(out, filepath.Clean(root))
			continue
		}
		n := len(out)
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), FileSuffix) {
				out = append(out, filepath.Clean(path))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("finding suites under %s: %w", root, err)
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: no *%s file in this folder or below", root, FileSuffix)
		}
	}
	sort.Strings(out)
	// One suite reached twice (given twice, as a relative and an absolute path, or through a
	// symlink) runs once.
	seen := map[string]bool{}
	uniq := out[:0]
	for _, path := range out {
		key := path
		if real, err := filepath.EvalSymlinks(path); err == nil {
			if abs, err := filepath.Abs(real); err == nil {
				key = abs
			}
		}
		if !seen[key] {
			seen[key] = true
			uniq = append(uniq, path)
		}
	}
	return uniq, nil
}

// Load reads and checks one suite file: unknown fields, wrong kinds, missing files and
// impossible expectations are an *Error naming the line.
func Load(path string) (*Suite, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	// The tree first: its size is bounded before yaml decodes it into the suite (which costs
	// more per key, and again for each alias).
	var root yaml.Node
	nodes := yaml.NewDecoder(bytes.NewReader(data))
	if err := nodes.Decode(&root); err != nil {
		return nil, decodeError(path, err)
	}
	var next yaml.Node
	switch err := nodes.Decode(&next); {
	case err == nil:
		return nil, &Error{File: path, Line: max(next.Line, 1), Msg: "a second YAML document: a suite file holds one TestSuite (split the suites into files of their own)"}
	case !errors.Is(err, io.EOF):
		return nil, decodeError(path, err)
	}
	if err := checkSize(path, &root); err != nil {
		return nil, err
	}
	s := &Suite{File: path, Dir: filepath.Dir(path)}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil {
		return nil, decodeError(path, err)
	}
	if line := nullItem(&root); line > 0 {
		return nil, &Error{File: path, Line: line, Msg: "an empty (null) list entry: remove it or give a value"}
	}
	markLines(s, &root)
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

func readBounded(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileBytes+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB: split it into several suites", MaxFileBytes>>20)
	}
	return buf.Bytes(), nil
}

var fieldNotFound = regexp.MustCompile(`^line (\d+): field (\S+) not found in type suite\.(\w+)$`)

var goType = regexp.MustCompile(`into suite\.\w+`)

var lineMsg = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// decodeError turns yaml's errors into lines of the suite: an unknown field names the fields
// its place takes.
func decodeError(path string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		if m := fieldNotFound.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			more := ""
			if len(te.Errors) > 1 {
				more = fmt.Sprintf(" (and %d more problems)", len(te.Errors)-1)
			}
			return &Error{File: path, Line: line, Msg: fmt.Sprintf("unknown field %q in %s; it takes: %s%s",
				m[2], typeNames[m[3]], strings.Join(fieldsOf(m[3]), ", "), more)}
		}
		err = errors.New(msg)
	}
	if m := lineMsg.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		// "into suite.Suite": the place in the format, not the Go type
		msg := goType.ReplaceAllStringFunc(m[2], func(t string) string {
			if name, ok := typeNames[strings.TrimPrefix(t, "into suite.")]; ok {
				return "where " + name + " belongs"
			}
			return t
		})
		return &Error{File: path, Line: line, Msg: msg}
	}
	if err.Error() == "EOF" {
		return &Error{File: path, Msg: "empty: a suite needs apiVersion, kind and tests"}
	}
	return &Error{File: path, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
}

// typeNames are the places of the format, for messages.
var typeNames = map[string]string{
	"Suite": "the suite", "Inventory": "an inventory", "Case": "a test", "Expect": "expect",
	"ResultExpect": "an expected result", "PlanExpect": "expect.plan",
}

var formatTypes = map[string]reflect.Type{
	"Suite": reflect.TypeFor[Suite](), "Inventory": reflect.TypeFor[Inventory](), "Case": reflect.TypeFor[Case](),
	"Expect": reflect.TypeFor[Expect](), "ResultExpect": reflect.TypeFor[ResultExpect](), "PlanExpect": reflect.TypeFor[PlanExpect](),
}

// fieldsOf lists the YAML keys of a format type.
func fieldsOf(name string) []string {
	t, ok := formatTypes[name]
	if !ok {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		if key, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); key != "" && key != "-" {
			out = append(out, key)
		}
	}
	return out
}

// markLines sets the lines of the tests and their expected results from the document.
func markLines(s *Suite, root *yaml.Node) {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	tests := mapValue(doc, "tests")
	if tests == nil || tests.Kind != yaml.SequenceNode {
		return
	}
	for i, n := range tests.Content {
		if i >= len(s.Tests) {
			return
		}
		s.Tests[i].Line = n.Line
		results := mapValue(mapValue(n, "expect"), "results")
		if results == nil || results.Kind != yaml.SequenceNode {
			continue
		}
		for j, r := range results.Content {
			if j < len(s.Tests[i].Expect.Results) {
				s.Tests[i].Expect.Results[j].Line = r.Line
			}
		}
	}
}

// nullItem is the line of the first null entry of a list (yaml leaves it out of the list it
// decodes: it would be dropped without a word), or 0.
func nullItem(n *yaml.Node) int {
	for _, c := range n.Content {
		if n.Kind == yaml.SequenceNode && c.Kind == yaml.ScalarNode && c.Tag == "!!null" {
			return c.Line
		}
		if line := nullItem(c); line > 0 {
			return line
		}
	}
	return 0
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Results a case may expect, and verdicts.
const (
	ResultFail  = "fail"
	ResultWarn  = "warn"
	ResultAudit = "audit"
	ResultPass  = "pass"

	VerdictDenied  = "denied"
	VerdictAllowed = "allowed"
)

// planActions are the node actions of a plan.
var planActions = []string{plan.NodeNone, plan.NodeUpgrade, plan.NodeChangeOwner, plan.NodeLoseDriver, plan.NodeGainDriver,
	plan.NodeHeld, plan.NodeBlocked}

// check reports the first problem of a decoded suite.
func (s *Suite) check() error {
	fail := func(line int, format string, args ...any) error {
		return &Error{File: s.File, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if s.APIVersion != APIVersion || s.Kind != Kind {
		return fail(1, "not a suite: want apiVersion %s and kind %s, got %q and %q", APIVersion, Kind, s.APIVersion, s.Kind)
	}
	if len(s.Tests) == 0 {
		return fail(1, "no tests: a suite lists its cases under tests")
	}
	for _, p := range s.Policies {
		if err := s.exists(p, true); err != nil {
			return err
		}
	}
	for _, p := range s.CoverageOf {
		if err := CheckPattern(p.Value); err != nil {
			return fail(p.Line, "coverageOf: %v", err)
		}
	}
	if err := s.checkInventory(&s.Inventory); err != nil {
		return err
	}
	names := map[string]int{}
	for i := range s.Tests {
		c := &s.Tests[i]
		if strings.TrimSpace(c.Name) == "" {
			return fail(c.Line, "test %d has no name", i+1)
		}
		if prev, ok := names[c.Name]; ok {
			return fail(c.Line, "test %q is also defined at line %d: names must be unique", c.Name, prev)
		}
		names[c.Name] = c.Line
		if err := s.checkCase(c); err != nil {
			return err
		}
	}
	return nil
}

func (s *Suite) checkCase(c *Case) error {
	fail := func(line int, format string, args ...any) error {
		return &Error{File: s.File, Line: line, Msg: fmt.Sprintf("test %q: ", c.Name) + fmt.Sprintf(format, args...)}
	}
	given := 0
	for _, b := range []bool{len(c.Values) > 0, !c.Objects.Empty(), !c.Review.Empty()} {
		if b {
			given++
		}
	}
	if given != 1 {
		return fail(c.Line, "give exactly one of values, objects or review (%d given)", given)
	}
	if len(c.Set) > 0 && len(c.Values) == 0 {
		return fail(c.Line, "set needs values (it sets values on top of the values files)")
	}
	if !c.OldObjects.Empty() && c.Objects.Empty() {
		return fail(c.OldObjects.Line, "oldObjects need objects (the objects that update them)")
	}
	switch c.Operation {
	case "", "CREATE":
	case "UPDATE":
		if c.Objects.Empty() {
			return fail(c.Line, "operation applies to objects (values are CREATE or UPDATE by the inventory's drivers; a review carries its own)")
		}
	default:
		return fail(c.Line, "operation %q: want CREATE or UPDATE", c.Operation)
	}
	if c.Review != nil && (len(c.Review.Files)+len(c.Review.Inline) != 1) {
		return fail(c.Review.Line, "review takes one AdmissionReview (a file or an inline object)")
	}
	for _, p := range c.Values {
		if err := s.exists(p, false); err != nil {
			return err
		}
	}
	for _, arg := range c.Set {
		if err := strvals.ParseInto(arg, map[string]any{}); err != nil {
			return fail(c.Line, "set %q: %v", validation.Truncate(arg, 200), err)
		}
	}
	for _, o := range []*Objects{c.Objects, c.OldObjects, c.Review} {
		if err := s.checkObjects(o); err != nil {
			return err
		}
	}
	if c.Inventory != nil {
		if err := s.checkInventory(c.Inventory); err != nil {
			return err
		}
	}
	e := &c.Expect
	switch e.Verdict {
	case "", VerdictDenied, VerdictAllowed:
	default:
		return fail(c.Line, "expect.verdict %q: want denied or allowed", e.Verdict)
	}
	if e.Verdict == "" && len(e.Results) == 0 && e.Plan == nil && !e.Exhaustive && e.Images == nil {
		return fail(c.Line, "expects nothing: give expect.verdict, expect.results, expect.plan or expect.images")
	}
	if e.Images != nil && c.Objects.Empty() && c.Review.Empty() {
		return fail(c.Line, "expect.images: only driver DaemonSets (in objects or a review) have images to expect")
	}
	for _, r := range e.Results {
		if r.Object == "" || !strings.Contains(r.Object, "/") {
			return fail(r.Line, "object %q: want Kind/name, e.g. RBLNDriver/rbln-driver-canary", r.Object)
		}
		if r.Rule == "" {
			return fail(r.Line, "a result needs its rule: a policy package (driverguard.lib.canary_selector, either of its deny and warn), one rule body (driverguard.lib.manager_version.warn) or a built-in rule (ConflictingNodeSelector)")
		}
		switch r.Result {
		case ResultFail, ResultWarn, ResultAudit:
		case ResultPass:
			if r.Message != "" {
				return fail(r.Line, "a pass result has no message to match")
			}
		default:
			return fail(r.Line, "result %q: want fail, warn, audit or pass", r.Result)
		}
		if _, err := regexp.Compile(r.Message); err != nil {
			return fail(r.Line, "message is not a regular expression: %v", err)
		}
	}
	if e.Plan != nil {
		if len(e.Plan.Nodes) == 0 {
			return fail(c.Line, "expect.plan lists no nodes")
		}
		for node, action := range e.Plan.Nodes {
			if !slices.Contains(planActions, action) {
				return fail(c.Line, "expect.plan.nodes.%s: %q is not a node action: want one of %s", node, action, strings.Join(planActions, ", "))
			}
		}
	}
	return nil
}

func (s *Suite) checkInventory(inv *Inventory) error {
	for _, o := range []*Objects{inv.Nodes, inv.Drivers, inv.ClusterPolicy, inv.Pods} {
		if err := s.checkObjects(o); err != nil {
			return err
		}
	}
	return nil
}

func (s *Suite) checkObjects(o *Objects) error {
	if o == nil {
		return nil
	}
	for _, p := range o.Files {
		if err := s.exists(p, false); err != nil {
			return err
		}
	}
	return nil
}

// Resolve is p relative to the suite's folder; always a file's path, never "-" (which the
// readers take for standard input).
func (s *Suite) Resolve(p Path) string {
	path := p.Value
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.Dir, path)
	}
	if path == "-" {
		return "." + string(filepath.Separator) + "-"
	}
	return path
}

// exists checks that p names a regular file (or, with dirs, a folder too): a folder, a FIFO
// or a device given as a values or objects file is an error here, not when a case runs.
func (s *Suite) exists(p Path, dirs bool) error {
	if p.Value == "" {
		return &Error{File: s.File, Line: p.Line, Msg: "empty file name"}
	}
	info, err := os.Stat(s.Resolve(p))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &Error{File: s.File, Line: p.Line, Msg: fmt.Sprintf("%s does not exist (paths are relative to the suite file)", p.Value)}
	case err != nil:
		return &Error{File: s.File, Line: p.Line, Msg: err.Error()}
	case info.IsDir() && !dirs:
		return &Error{File: s.File, Line: p.Line, Msg: fmt.Sprintf("%s is a folder: name the files", p.Value)}
	case !info.IsDir() && !info.Mode().IsRegular():
		return &Error{File: s.File, Line: p.Line, Msg: fmt.Sprintf("%s is not a regular file (%s)", p.Value, info.Mode().Type())}
	}
	return nil
}

// The most a suite may hold, aliases expanded: nodes in all, and keys in one mapping. Both are
// far beyond a suite written by people (inventories of thousands of nodes belong in files);
// they bound what a 4 MiB file can make the loader do.
const (
	MaxNodes       = 1 << 20
	MaxMappingKeys = 10000
)

// checkSize bounds the suite's tree, aliases expanded (each alias counts its target's nodes
// again, as decoding it would).
func checkSize(path string, root *yaml.Node) error {
	count := 0
	var walk func(n *yaml.Node, depth int) error
	walk = func(n *yaml.Node, depth int) error {
		count++
		if count > MaxNodes {
			return &Error{File: path, Line: n.Line, Msg: fmt.Sprintf("more than %d YAML nodes (aliases counted at each use): put large inventories in files of their own", MaxNodes)}
		}
		if n.Kind == yaml.MappingNode && len(n.Content)/2 > MaxMappingKeys {
			return &Error{File: path, Line: n.Line, Msg: fmt.Sprintf("a mapping of %d keys: a suite's mappings hold at most %d", len(n.Content)/2, MaxMappingKeys)}
		}
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			if depth > 100 {
				return &Error{File: path, Line: n.Line, Msg: "aliases nested more than 100 deep"}
			}
			return walk(n.Alias, depth+1)
		}
		for _, c := range n.Content {
			if err := walk(c, depth); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root, 0)
}

package policy

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// maxDirDepth bounds recursion into policy directories: a policy tree a few directories deep
// is plenty, and a deeper one is a mistake.
const maxDirDepth = 16

// MaxPolicyFiles bounds the policy and data files (.rego, .json, .yaml, .yml) read from the
// policy directories together: a policy set written by people holds a few dozen files, and a
// directory that fans out (thousands of files, or symlinks into a large tree) is refused
// naming the directory and this limit instead of being read without end. Each directory and
// file is read once whatever number of symlinks reach it, so a symlink loop or two symlinks
// to one tree count each file once.
const MaxPolicyFiles = 10_000

// sourceFile is one file read from a policy directory.
type sourceFile struct {
	// path is the file's path as shown in messages: the directory as given, joined with the
	// path inside it.
	path string
	// dataPath is the data path of a data file: its directory inside the policy directory.
	dataPath []string
	content  []byte
}

func (f *sourceFile) isRego() bool { return strings.HasSuffix(f.path, ".rego") }

// isPolicyFile reports whether a policy directory entry is read: Rego modules and JSON/YAML
// data documents, as `opa test DIR` reads them.
func isPolicyFile(name string) bool {
	switch filepath.Ext(name) {
	case ".rego", ".json", ".yaml", ".yml":
		return true
	}
	return false
}

// readDirs reads every policy file of dirs (a path may also be one policy or data file), in a
// deterministic order. Entries whose name
// starts with "." are skipped: they are hidden files and, in a mounted ConfigMap, the
// ..data and ..<timestamp> directories behind the visible symlinks (which are followed).
// With tests false, *_test.rego files are skipped.
//
// Every directory and file is read once, under the first path that reaches it (entries are
// read in name order, dirs in the order given): a symlink back to a directory being read,
// or a second symlink to a tree already read, is skipped. At most MaxPolicyFiles files are
// read in all, and directories at most maxDirDepth deep.
//
// A file of more than maxBytes (DefaultMaxFileBytes when zero) is a problem naming it.
func readDirs(dirs []string, tests bool, maxBytes int64) ([]sourceFile, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFileBytes
	}
	r := &dirReader{tests: tests, maxBytes: maxBytes, seen: map[string]bool{}}
	for _, dir := range dirs {
		info, err := os.Stat(dir)
		if err != nil {
			return nil, newLoadError(Problem{File: dir, Message: "cannot read the policy directory: " + pathErrorText(err)})
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return nil, newLoadError(Problem{File: dir, Message: "cannot read the policy directory: " + pathErrorText(err)})
		}
		real, _ = filepath.Abs(real)
		if r.seen[real] {
			continue // given twice, or inside a directory given before
		}
		r.seen[real] = true
		r.root = dir
		if !info.IsDir() {
			if err := r.readFile(dir, info, tests); err != nil {
				return nil, err
			}
			continue
		}
		if err := r.readDir(dir, real, nil, 0); err != nil {
			return nil, err
		}
	}
	return r.files, nil
}

// readFile reads a policy or data file given by itself (its data at the root of data, as
// `opa eval -d FILE` reads it).
func (r *dirReader) readFile(path string, info fs.FileInfo, tests bool) error {
	switch {
	case !info.Mode().IsRegular() || !isPolicyFile(path):
		return newLoadError(Problem{File: path, Message: "is neither a directory nor a policy or data file (.rego, .json, .yaml, .yml); --policy takes either"})
	case !tests && strings.HasSuffix(path, "_test.rego"):
		return newLoadError(Problem{File: path, Message: "is a Rego test file: 'driverguard policy test' runs it; give the policy itself, or its directory"})
	case len(r.files) >= MaxPolicyFiles:
		return newLoadError(Problem{File: path, Message: fmt.Sprintf("more than %d policy and data files given; driverguard reads at most %d", MaxPolicyFiles, MaxPolicyFiles)})
	}
	content, err := readLimited(path, r.maxBytes)
	if err != nil {
		return newLoadError(Problem{File: path, Message: pathErrorText(err)})
	}
	r.files = append(r.files, sourceFile{path: path, content: content})
	return nil
}

// DefaultMaxFileBytes bounds one policy or data file: a ConfigMap holds at most 1 MiB, and a
// policy written by people is a few KiB.
const DefaultMaxFileBytes = 16 << 20

// dirReader reads policy directories, each directory and file once.
type dirReader struct {
	tests    bool
	maxBytes int64
	// root is the policy directory being read, as given: what a limit's message names.
	root string
	// seen holds the real path (symlinks resolved) of every directory and file read.
	seen  map[string]bool
	files []sourceFile
}

// readDir reads dir, whose real path (no symlinks) is real.
func (r *dirReader) readDir(dir, real string, dataPath []string, depth int) error {
	if depth > maxDirDepth {
		return newLoadError(Problem{File: dir, Message: fmt.Sprintf("nested more than %d directories deep; driverguard reads policy directories at most %d deep", maxDirDepth, maxDirDepth)})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return newLoadError(Problem{File: dir, Message: "cannot read the policy directory: " + pathErrorText(err)})
	}
	for _, e := range entries { // sorted by name
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		info, err := os.Stat(path) // follows symlinks
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // a dangling symlink, e.g. during a ConfigMap update
			}
			return newLoadError(Problem{File: path, Message: pathErrorText(err)})
		}
		isDir := info.IsDir()
		if !isDir && (!info.Mode().IsRegular() || !isPolicyFile(name) || (!r.tests && strings.HasSuffix(name, "_test.rego"))) {
			continue
		}
		// The real path of the entry: a symlink resolved, anything else below real.
		entryReal := filepath.Join(real, name)
		if e.Type()&fs.ModeSymlink != 0 {
			if entryReal, err = filepath.EvalSymlinks(path); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // swapped since the Stat above
				}
				return newLoadError(Problem{File: path, Message: pathErrorText(err)})
			}
			entryReal, _ = filepath.Abs(entryReal)
		}
		if r.seen[entryReal] {
			continue // reached before through another path
		}
		r.seen[entryReal] = true
		if isDir {
			if err := r.readDir(path, entryReal, append(slices.Clone(dataPath), name), depth+1); err != nil {
				return err
			}
			continue
		}
		if len(r.files) >= MaxPolicyFiles {
			return newLoadError(Problem{File: r.root, Message: fmt.Sprintf("the policy directories hold more than %d policy and data files (.rego, .json, .yaml, .yml); driverguard reads at most %d: remove the files that are not policies, or symlinks that reach a large tree", MaxPolicyFiles, MaxPolicyFiles)})
		}
		content, err := readLimited(path, r.maxBytes)
		if err != nil {
			return newLoadError(Problem{File: path, Message: pathErrorText(err)})
		}
		r.files = append(r.files, sourceFile{path: path, dataPath: dataPath, content: content})
	}
	return nil
}

// readLimited reads a regular file of at most maxBytes (it may grow while it is read).
func readLimited(path string, maxBytes int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(content)) > maxBytes {
		return nil, fmt.Errorf("is larger than the limit of %d bytes for one policy or data file (--max-values-size raises it)", maxBytes)
	}
	return content, nil
}

// pathErrorText drops the path an *fs.PathError repeats.
func pathErrorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// fingerprint identifies the content of a set of files.
func fingerprint(files []sourceFile) [sha256.Size]byte {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.path, len(f.content))
		h.Write(f.content)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// parserOptions parse Rego v1 with METADATA annotations.
var parserOptions = ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true}

// parsed is the content of the policy directories.
type parsed struct {
	modules map[string]*ast.Module
	data    map[string]any
	// dataFiles maps each top-level data key to the file that set it first.
	dataFiles map[string]string
}

// parseFiles parses modules and merges data documents under their directory's data path, as
// `opa test DIR` does. It collects every problem before failing.
func parseFiles(files []sourceFile) (*parsed, []Problem) {
	p := &parsed{modules: map[string]*ast.Module{}, data: map[string]any{}, dataFiles: map[string]string{}}
	var problems []Problem
	for i := range files {
		f := &files[i]
		if f.isRego() {
			m, err := ast.ParseModuleWithOpts(f.path, string(f.content), parserOptions)
			if err != nil {
				problems = append(problems, problemsOf(err, f.path)...)
				continue
			}
			if m == nil { // only comments
				continue
			}
			p.modules[f.path] = m
			continue
		}
		var doc any
		if err := util.Unmarshal(f.content, &doc); err != nil {
			problems = append(problems, Problem{File: f.path, Message: "not a valid JSON or YAML data document: " + err.Error()})
			continue
		}
		if doc == nil {
			continue // an empty document
		}
		for i := len(f.dataPath) - 1; i >= 0; i-- {
			doc = map[string]any{f.dataPath[i]: doc}
		}
		obj, ok := doc.(map[string]any)
		if !ok {
			problems = append(problems, Problem{File: f.path, Message: "a data document at the top of a policy directory must be an object (its keys become data.<key>)"})
			continue
		}
		for k := range obj {
			if _, ok := p.dataFiles[k]; !ok {
				p.dataFiles[k] = f.path
			}
		}
		if err := mergeData(p.data, obj, nil); err != nil {
			problems = append(problems, Problem{File: f.path, Message: err.Error()})
		}
	}
	return p, problems
}

// mergeData merges src into dst; a key holding a non-object on either side may be set once.
func mergeData(dst, src map[string]any, path []string) error {
	for k, v := range src {
		cur, exists := dst[k]
		if !exists {
			dst[k] = v
			continue
		}
		cm, ok1 := cur.(map[string]any)
		vm, ok2 := v.(map[string]any)
		if !ok1 || !ok2 {
			return fmt.Errorf("data.%s is set by more than one data document", quoteName(strings.Join(append(path, k), ".")))
		}
		if err := mergeData(cm, vm, append(path, k)); err != nil {
			return err
		}
	}
	return nil
}

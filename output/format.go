package output

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Format is an output format.
type Format string

const (
	Table    Format = "table"
	JSON     Format = "json"
	YAML     Format = "yaml"
	JUnit    Format = "junit"
	SARIF    Format = "sarif"
	Markdown Format = "markdown"
	GitHub   Format = "github"
	// HTML is a command's own page (Report.HTML); only the commands that have one offer it.
	HTML Format = "html"
)

// Writer writes a report in one format.
type Writer interface {
	Write(w io.Writer, r *Report) error
}

// WriterFunc is a function as a Writer.
type WriterFunc func(w io.Writer, r *Report) error

func (f WriterFunc) Write(w io.Writer, r *Report) error { return f(w, r) }

// writers are the writers of each format.
var writers = map[Format]Writer{
	Table:    WriterFunc(writeTable),
	JSON:     WriterFunc(writeJSON),
	YAML:     WriterFunc(writeYAML),
	JUnit:    WriterFunc(writeJUnit),
	SARIF:    WriterFunc(writeSARIF),
	Markdown: WriterFunc(writeMarkdown),
	GitHub:   WriterFunc(writeGitHub),
	HTML:     WriterFunc(writeHTML),
}

// For returns the writer of a format.
func For(f Format) (Writer, bool) {
	w, ok := writers[f]
	return w, ok
}

// Target is a format and where it goes: a file, or standard output ("").
type Target struct {
	Format Format
	Path   string
}

// Flag is -o/--output, repeatable: each `-o FORMAT` or `-o FORMAT=FILE` (FILE "-" is standard
// output). A format may be given once, and no two formats share a stream: at most one goes to
// standard output (however named: /dev/stdout, /dev/fd/1 too), a file or descriptor is named
// once (however spelled), and no file is the one standard output is open on (sharedStream). A
// pflag.Value: a bad value fails while the flags are parsed (exit 2), before anything runs or
// is written.
type Flag struct {
	allowed []Format
	def     Format
	targets []Target
}

// NewFlag returns the flag of a command writing def by default and the allowed formats.
func NewFlag(def Format, allowed ...Format) *Flag { return &Flag{def: def, allowed: allowed} }

func (o *Flag) Type() string { return "format" }

// Repeatable: -o is given once per format.
func (o *Flag) Repeatable() bool { return true }

func (o *Flag) String() string {
	if len(o.targets) == 0 {
		return string(o.def)
	}
	parts := make([]string, len(o.targets))
	for i, t := range o.targets {
		parts[i] = string(t.Format)
		if t.Path != "" {
			parts[i] += "=" + t.Path
		}
	}
	return strings.Join(parts, ",")
}

// Set adds one target.
func (o *Flag) Set(s string) error {
	name, path, toFile := strings.Cut(s, "=")
	if path == "-" { // standard output, as everywhere on the command line
		path, toFile = "", false
	}
	f := Format(name)
	if !slices.Contains(o.allowed, f) {
		return fmt.Errorf("unsupported output format %q: use one of %s, each optionally =FILE (-o table -o sarif=results.sarif)", truncate(name), o.list())
	}
	if toFile && path == "" {
		return fmt.Errorf("-o %s=: name the file to write the %s to, or drop '=' for standard output", name, name)
	}
	t := Target{Format: f, Path: path}
	for _, prev := range o.targets {
		if prev.Format == f {
			return fmt.Errorf("-o %s given twice: each format is written once (give it one destination)", name)
		}
		if err := sharedStream(prev, t); err != nil {
			return err
		}
	}
	o.targets = append(o.targets, t)
	return nil
}

// sharedStream refuses two targets that write to one stream, however named: standard output
// ("-o table", "=-", "=/dev/stdout", "=/dev/fd/1", "=/proc/self/fd/1", a link to one of them),
// one descriptor (/dev/stderr and /dev/fd/2), one file (however spelled, or through a chain of
// links, one that points at a file that does not exist yet included: resolve), or a file that is
// what standard output or a named descriptor is open on (`-o json=out.json > out.json`, a
// descriptor duplicated from standard output). The second would land in the middle of, or in
// place of, the first: a reader of the machine-readable one could not parse it. The null
// device takes any number of outputs.
func sharedStream(a, b Target) error {
	fix := fmt.Sprintf("write %s to a file of its own (-o %s=FILE)", b.Format, b.Format)
	fdA, fdB := streamDescriptor(a), streamDescriptor(b)
	switch {
	case fdA == 1 && fdB == 1:
		return fmt.Errorf("%s and %s both write to standard output: %s", targetFlag(a), targetFlag(b), fix)
	case fdA >= 0 && fdA == fdB:
		return fmt.Errorf("%s and %s both write to descriptor %d: %s", targetFlag(a), targetFlag(b), fdA, fix)
	case fdA < 0 && fdB < 0 && samePath(a.Path, b.Path):
		if file, ok := throughLinks(a, b); ok {
			return fmt.Errorf("%s and %s both write %s (through symbolic links): give each its own file (-o %s=FILE)", targetFlag(a), targetFlag(b), file, b.Format)
		}
		return fmt.Errorf("-o %s and -o %s both write %s: give each its own file (-o %s=FILE)", a.Format, b.Format, b.Path, b.Format)
	}
	ia, ib := streamInfo(a, fdA), streamInfo(b, fdB)
	if ia != nil && ib != nil && os.SameFile(ia, ib) && !isNullDevice(ia) {
		return fmt.Errorf("%s and %s both write to one file (%s and %s are the same file): %s",
			targetFlag(a), targetFlag(b), streamName(a, fdA), streamName(b, fdB), fix)
	}
	return nil
}

// targetFlag is a target as given: "-o table", "-o json=out.json".
func targetFlag(t Target) string {
	if t.Path == "" {
		return "-o " + string(t.Format)
	}
	return "-o " + string(t.Format) + "=" + t.Path
}

// throughLinks is the file two targets that name one write, when either names it through
// symbolic links (ok false when neither is a link).
func throughLinks(a, b Target) (file string, ok bool) {
	for _, t := range []Target{a, b} {
		if abs, err := filepath.Abs(t.Path); err == nil {
			if real, err := resolve(t.Path); err == nil && real != abs {
				return real, true
			}
		}
	}
	return "", false
}

// streamDescriptor is the descriptor a target writes to: 1 for standard output, the one a
// path such as /dev/stderr or /dev/fd/3 names (or a link to it), -1 for a file.
func streamDescriptor(t Target) int {
	if t.Path == "" {
		return 1
	}
	p := t.Path
	if real, err := resolve(p); err == nil {
		p = real
	}
	if fd, ok := descriptor(p); ok {
		return fd
	}
	return -1
}

// streamName says what a target writes to, for a message.
func streamName(t Target, fd int) string {
	switch {
	case fd == 1:
		return "standard output"
	case fd == 2:
		return "standard error"
	}
	return t.Path
}

// streamInfo is the file a target writes to, as it is now: standard output's or standard
// error's, the file a descriptor is open on, or a file (nil for a file that does not exist
// yet, or a descriptor that is not open).
func streamInfo(t Target, fd int) os.FileInfo {
	var (
		fi  os.FileInfo
		err error
	)
	switch fd {
	case 1:
		fi, err = os.Stdout.Stat()
	case 2:
		fi, err = os.Stderr.Stat()
	default:
		fi, err = os.Stat(t.Path) // /dev/fd/N: the file the descriptor is open on
	}
	if err != nil {
		return nil
	}
	return fi
}

// isNullDevice reports whether fi is the null device.
func isNullDevice(fi os.FileInfo) bool {
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

// samePath reports whether two -o files name one file, however spelled: relative or
// absolute, through symbolic links — a chain of them, and one that points at a file that does
// not exist yet (resolve).
func samePath(a, b string) bool {
	return canonical(a) == canonical(b)
}

func canonical(p string) string {
	if real, err := resolve(p); err == nil {
		return real
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// maxLinks bounds the symbolic links resolve follows (the kernel's own bound is 40).
const maxLinks = 40

// resolve is the file writing p writes, as the kernel finds it when it opens p to create it:
// the absolute path with every symbolic link followed — a link whose target does not exist
// yet too (EvalSymlinks fails on it; the kernel creates the target), its target read relative
// to the link's own directory, link after link, up to maxLinks (an error beyond: a loop). It
// stops at a path that names a descriptor (/dev/stdout, /dev/fd/N: written through the
// descriptor). A file that exists but that the links' text does not lead to (a /proc link to a
// pipe or a socket) is p itself, for the kernel to follow.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	p = abs
	for hops := 0; ; hops++ {
		if _, ok := descriptor(p); ok {
			return p, nil
		}
		dir, base := splitLast(p)
		if base == "" || base == "." || base == ".." { // a directory
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real, nil
			}
			return p, nil // as it is: a directory, to be refused as one
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		p = filepath.Join(dir, base)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			if err != nil {
				if _, err := os.Stat(abs); err == nil {
					return abs, nil // the kernel reaches a file the links' text does not name
				}
			}
			return p, nil
		}
		if hops == maxLinks {
			return "", fmt.Errorf("%s: more than %d symbolic links (a loop?)", abs, maxLinks)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return p, nil
		}
		if !filepath.IsAbs(target) {
			// Not cleaned: a ".." in the target is taken after the link before it is followed.
			target = dir + string(filepath.Separator) + target
		}
		p = target
	}
}

// splitLast splits p at its last separator, without cleaning it.
func splitLast(p string) (dir, base string) {
	i := len(p) - 1
	for i >= len(filepath.VolumeName(p)) && !os.IsPathSeparator(p[i]) {
		i--
	}
	if i < len(filepath.VolumeName(p)) {
		return ".", p
	}
	if i == len(filepath.VolumeName(p)) { // the root
		return p[:i+1], p[i+1:]
	}
	return p[:i], p[i+1:]
}

func (o *Flag) list() string {
	s := make([]string, len(o.allowed))
	for i, f := range o.allowed {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// Targets are the targets given, or the default format to standard output.
func (o *Flag) Targets() []Target {
	if len(o.targets) == 0 {
		return []Target{{Format: o.def}}
	}
	return o.targets
}

// Has reports whether f is one of the targets.
func (o *Flag) Has(f Format) bool {
	return slices.ContainsFunc(o.Targets(), func(t Target) bool { return t.Format == f })
}

// Primary is the format written to standard output ("" when every format goes to a file).
func (o *Flag) Primary() Format {
	for _, t := range o.Targets() {
		if t.Path == "" {
			return t.Format
		}
	}
	return ""
}

// Write writes r to every target: files first (each written whole, then renamed into
// place, so a reader never sees half a file), then standard output.
func Write(stdout io.Writer, targets []Target, r *Report) error {
	var errs []error
	for _, t := range targets {
		if t.Path != "" {
			errs = append(errs, writeFile(t, r))
		}
	}
	for _, t := range targets {
		if t.Path == "" {
			w, _ := For(t.Format)
			errs = append(errs, w.Write(stdout, r))
		}
	}
	return errors.Join(errs...)
}

// writeFile writes a regular file whole, then renames it into place; through a symbolic
// link — a chain of them, one whose target does not exist yet included (resolve) — the file
// it points at (the links stay). What is not a regular file — a device such as /dev/null, a
// FIFO a reader waits on — is written into as it is: a rename would replace it (as root,
// /dev/null itself). /dev/stdout, /dev/stderr and /dev/fd/N (or a link to one) are written
// through the descriptor they name, wherever it points.
func writeFile(t Target, r *Report) (err error) {
	w, ok := For(t.Format)
	if !ok {
		return fmt.Errorf("unsupported output format %q", t.Format)
	}
	path, err := resolve(t.Path)
	if err != nil {
		return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
	}
	if f, ok, err := openDescriptor(path); ok {
		if err != nil {
			return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
		}
		return writeAndClose(w, f, t, r)
	}
	if fi, err := os.Stat(path); err == nil {
		switch {
		case fi.IsDir():
			return fmt.Errorf("writing -o %s=%s: %s is a directory: name a file in it, e.g. -o %s=%s", t.Format, t.Path, t.Path, t.Format, filepath.Join(t.Path, "results."+string(t.Format)))
		case !fi.Mode().IsRegular():
			return writeInto(w, t, path, r)
		}
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
	}
	temporaries.Store(f.Name(), struct{}{})
	defer temporaries.Delete(f.Name())
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = w.Write(f, r); err != nil {
		return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
	}
	return nil
}

// temporaries are the temporary files of the writes under way.
var temporaries sync.Map

// RemoveTemporaries removes the temporary files of the -o FILE writes under way, so that none
// is left behind: main calls it when it exits on a signal before the command returned. A
// write it cuts short fails (nothing to rename); its target is left as it was.
func RemoveTemporaries() {
	temporaries.Range(func(name, _ any) bool {
		_ = os.Remove(name.(string))
		return true
	})
}

// writeInto writes into path, a file that is not a regular one (a device, a FIFO), never
// creating or replacing it.
func writeInto(w Writer, t Target, path string, r *Report) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
	}
	return writeAndClose(w, f, t, r)
}

func writeAndClose(w Writer, f *os.File, t Target, r *Report) error {
	if err := w.Write(f, r); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
	}
	return nil
}

// truncate shortens a user value quoted in a message.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

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
// output). At most one format goes to standard output; a format may be given once, a file
// named once (however spelled). A pflag.Value: a bad value fails while
// the flags are parsed (exit 2), before anything runs.
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
	for _, t := range o.targets {
		switch {
		case t.Format == f:
			return fmt.Errorf("-o %s given twice: each format is written once (give it one destination)", name)
		case t.Path == "" && !toFile:
			return fmt.Errorf("-o %s and -o %s both write to standard output: send one to a file (-o %s=FILE)", t.Format, name, name)
		case toFile && t.Path != "" && samePath(t.Path, path):
			return fmt.Errorf("-o %s and -o %s both write %s: give each its own file", t.Format, name, path)
		}
	}
	o.targets = append(o.targets, Target{Format: f, Path: path})
	return nil
}

// samePath reports whether two -o files name one file, however spelled: relative or
// absolute, through symbolic links (a file that does not exist yet by its directory).
func samePath(a, b string) bool {
	return canonical(a) == canonical(b)
}

func canonical(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
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
// link, the file it points at (the link stays). What is not a regular file — a device such
// as /dev/null, a FIFO a reader waits on — is written into as it is: a rename would replace
// it (as root, /dev/null itself). /dev/stdout, /dev/stderr and /dev/fd/N are written through
// the descriptor they name, wherever it points.
func writeFile(t Target, r *Report) (err error) {
	w, ok := For(t.Format)
	if !ok {
		return fmt.Errorf("unsupported output format %q", t.Format)
	}
	if f, ok, err := openDescriptor(t.Path); ok {
		if err != nil {
			return fmt.Errorf("writing -o %s=%s: %w", t.Format, t.Path, err)
		}
		return writeAndClose(w, f, t, r)
	}
	path := t.Path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if fi, err := os.Stat(path); err == nil {
		switch {
		case fi.IsDir():
			return fmt.Errorf("writing -o %s=%s: %s is a directory: name a file in it, e.g. -o %s=%s", t.Format, t.Path, t.Path, t.Format, filepath.Join(t.Path, "results."+string(t.Format)))
		case !fi.Mode().IsRegular():
			return writeInto(w, t, r)
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

// writeInto writes into a file that is not a regular one (a device, a FIFO), never creating
// or replacing it.
func writeInto(w Writer, t Target, r *Report) error {
	f, err := os.OpenFile(t.Path, os.O_WRONLY, 0)
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

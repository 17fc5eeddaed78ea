package output_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/output"
)

// every is every format, in the order a command that judges offers them.
var every = []output.Format{output.Table, output.JSON, output.YAML, output.JUnit, output.SARIF, output.Markdown, output.GitHub}

// parse parses -o arguments as a command's flag set does.
func parse(def output.Format, allowed []output.Format, args ...string) (*output.Flag, error) {
	o := output.NewFlag(def, allowed...)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.VarP(o, "output", "o", "output format")
	return o, fs.Parse(args)
}

func TestFlag(t *testing.T) {
	tests := []struct {
		name    string
		allowed []output.Format
		args    []string
		want    []output.Target
		primary output.Format
		str     string
		// wantErr are the parts of the error message; none: no error.
		wantErr []string
	}{
		{name: "default", want: []output.Target{{Format: output.Table}}, primary: output.Table, str: "table"},
		{name: "one", args: []string{"-o", "json"}, want: []output.Target{{Format: output.JSON}}, primary: output.JSON, str: "json"},
		{name: "repeated, one to a file", args: []string{"-o", "table", "-o", "sarif=results.sarif"},
			want:    []output.Target{{Format: output.Table}, {Format: output.SARIF, Path: "results.sarif"}},
			primary: output.Table, str: "table,sarif=results.sarif"},
		{name: "every format to a file, none to standard output", args: []string{"--output=junit=a.xml", "-o", "sarif=b.sarif"},
			want:    []output.Target{{Format: output.JUnit, Path: "a.xml"}, {Format: output.SARIF, Path: "b.sarif"}},
			primary: "", str: "junit=a.xml,sarif=b.sarif"},
		{name: "a file name with '='", args: []string{"-o", "json=a=b.json"},
			want: []output.Target{{Format: output.JSON, Path: "a=b.json"}}, primary: "", str: "json=a=b.json"},
		{name: "html where the command has no page", args: []string{"-o", "html"},
			wantErr: []string{`unsupported output format "html"`, "use one of table, json, yaml, junit, sarif, markdown, github"}},
		{name: "html where the command offers it", allowed: append(every[:len(every):len(every)], output.HTML), args: []string{"-o", "html=plan.html"},
			want: []output.Target{{Format: output.HTML, Path: "plan.html"}}, primary: "", str: "html=plan.html"},
		{name: "two to standard output", args: []string{"-o", "table", "-o", "json"},
			wantErr: []string{"-o table and -o json both write to standard output", "-o json=FILE"}},
		{name: "the same format twice", args: []string{"-o", "sarif=a.sarif", "-o", "sarif=b.sarif"},
			wantErr: []string{"-o sarif given twice", "each format is written once"}},
		{name: "the same format twice to standard output", args: []string{"-o", "json", "-o", "json"},
			wantErr: []string{"-o json given twice"}},
		{name: "two formats to one file", args: []string{"-o", "sarif=out/r", "-o", "json=out/./r"},
			wantErr: []string{"-o sarif and -o json both write out/./r", "give each its own file"}},
		{name: "unknown format", args: []string{"-o", "xml"},
			wantErr: []string{`unsupported output format "xml"`, "use one of table, json, yaml, junit, sarif, markdown, github", "-o table -o sarif=results.sarif"}},
		{name: "unknown format with a file", args: []string{"-o", "html=report.html"},
			wantErr: []string{`unsupported output format "html"`}},
		{name: "a format this command does not write", allowed: []output.Format{output.JSON, output.YAML}, args: []string{"-o", "sarif"},
			wantErr: []string{`unsupported output format "sarif"`, "use one of json, yaml,"}},
		{name: "a long unknown name is cut", args: []string{"-o", strings.Repeat("x", 200)},
			wantErr: []string{`"` + strings.Repeat("x", 80) + `..."`}},
		{name: "an empty file name", args: []string{"-o", "sarif="},
			wantErr: []string{"-o sarif=: name the file to write the sarif to, or drop '=' for standard output"}},
		{name: "an empty format", args: []string{"-o", "=out.json"},
			wantErr: []string{`unsupported output format ""`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allowed := tt.allowed
			if allowed == nil {
				allowed = every
			}
			o, err := parse(output.Table, allowed, tt.args...)
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				for _, part := range tt.wantErr {
					assert.Contains(t, err.Error(), part)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, o.Targets())
			assert.Equal(t, tt.primary, o.Primary())
			assert.Equal(t, tt.str, o.String())
			for _, target := range tt.want {
				assert.True(t, o.Has(target.Format), "Has(%s)", target.Format)
			}
			assert.True(t, o.Repeatable())
			assert.Equal(t, "format", o.Type())
		})
	}
	t.Run("the unknown format message lists the command's formats in order", func(t *testing.T) {
		_, err := parse(output.JSON, []output.Format{output.Markdown, output.JSON}, "-o", "nope")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "use one of markdown, json, each optionally =FILE")
	})
	t.Run("Has is false for a format not given", func(t *testing.T) {
		o, err := parse(output.Table, every, "-o", "json")
		require.NoError(t, err)
		assert.False(t, o.Has(output.Table), "the default is replaced once -o is given")
	})
}

func TestFor(t *testing.T) {
	for _, f := range append(every, output.HTML) {
		w, ok := output.For(f)
		assert.True(t, ok, f)
		assert.NotNil(t, w, f)
	}
	_, ok := output.For("xml")
	assert.False(t, ok)
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stdout closed") }

func TestWrite(t *testing.T) {
	report := func() *output.Report {
		return &output.Report{Tool: "driverguard test", Findings: []finding.Finding{
			{Rule: "FieldValueInvalid", Level: finding.Deny, Object: finding.Object{Kind: "RBLNDriver", Name: "a"}, Field: "spec.version", Message: "bad"},
		}}
	}
	render := func(t *testing.T, f output.Format, r *output.Report) string {
		t.Helper()
		w, ok := output.For(f)
		require.True(t, ok)
		var b bytes.Buffer
		require.NoError(t, w.Write(&b, r))
		return b.String()
	}

	t.Run("files and standard output", func(t *testing.T) {
		dir := t.TempDir()
		r := report()
		var stdout bytes.Buffer
		targets := []output.Target{{Format: output.Table}, {Format: output.JSON, Path: filepath.Join(dir, "r.json")},
			{Format: output.SARIF, Path: filepath.Join(dir, "r.sarif")}}
		require.NoError(t, output.Write(&stdout, targets, r))
		assert.Equal(t, render(t, output.Table, r), stdout.String())
		for _, tg := range targets[1:] {
			data, err := os.ReadFile(tg.Path)
			require.NoError(t, err)
			assert.Equal(t, render(t, tg.Format, r), string(data), tg.Format)
			info, err := os.Stat(tg.Path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o644), info.Mode().Perm(), "%s: mode", tg.Path)
		}
		assertOnly(t, dir, "r.json", "r.sarif")
	})

	t.Run("a file replaces the one there", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "r.json")
		require.NoError(t, os.WriteFile(path, []byte("old, and longer than what replaces it ........................................................................................................................"), 0o600))
		require.NoError(t, output.Write(io.Discard, []output.Target{{Format: output.JSON, Path: path}}, report()))
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var doc struct{ Findings []finding.Finding }
		require.NoError(t, json.Unmarshal(data, &doc), string(data))
		assert.Len(t, doc.Findings, 1)
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), info.Mode().Perm())
	})

	failing := func(w io.Writer) error {
		_, _ = io.WriteString(w, "half a report")
		return errors.New("the writer failed")
	}
	tests := []struct {
		name   string
		format output.Format
		set    func(r *output.Report)
	}{
		{"table", output.Table, func(r *output.Report) { r.Table = failing }},
		{"markdown", output.Markdown, func(r *output.Report) { r.Markdown = failing }},
		{"html", output.HTML, func(r *output.Report) { r.HTML = failing }},
		{"html of a report without a page", output.HTML, func(r *output.Report) {}},
		{"yaml", output.YAML, func(r *output.Report) { r.YAML = failing }},
		{"json", output.JSON, func(r *output.Report) { r.Document = func() {} }}, // a func is no JSON
	}
	for _, tt := range tests {
		t.Run("no partial file when the "+tt.name+" writer fails", func(t *testing.T) {
			dir := t.TempDir()
			r := report()
			tt.set(r)
			fresh := filepath.Join(dir, "new.out")
			err := output.Write(io.Discard, []output.Target{{Format: tt.format, Path: fresh}}, r)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "writing -o "+string(tt.format)+"="+fresh)
			assert.NoFileExists(t, fresh)
			assertOnly(t, dir)

			// A file there before keeps its content.
			old := filepath.Join(dir, "old.out")
			require.NoError(t, os.WriteFile(old, []byte("the last good report"), 0o644))
			require.Error(t, output.Write(io.Discard, []output.Target{{Format: tt.format, Path: old}}, r))
			data, err := os.ReadFile(old)
			require.NoError(t, err)
			assert.Equal(t, "the last good report", string(data))
			assertOnly(t, dir, "old.out")
		})
	}

	t.Run("a folder that does not exist", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "missing", "r.sarif")
		err := output.Write(io.Discard, []output.Target{{Format: output.SARIF, Path: path}}, report())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "writing -o sarif="+path)
		assert.ErrorIs(t, err, os.ErrNotExist)
	})

	t.Run("the files are written when standard output fails", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "r.json")
		err := output.Write(failingWriter{}, []output.Target{{Format: output.Table}, {Format: output.JSON, Path: path}}, report())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "stdout closed")
		assert.FileExists(t, path)
	})

	t.Run("every failure is reported", func(t *testing.T) {
		dir := t.TempDir()
		r := report()
		r.YAML = failing
		err := output.Write(failingWriter{}, []output.Target{{Format: output.JSON}, {Format: output.YAML, Path: filepath.Join(dir, "r.yaml")},
			{Format: output.SARIF, Path: filepath.Join(dir, "r.sarif")}}, r)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the writer failed")
		assert.Contains(t, err.Error(), "stdout closed")
		assertOnly(t, dir, "r.sarif")
	})
}

// assertOnly asserts that dir holds exactly the files named (no temporary file left behind).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	got := []string{}
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if names == nil {
		names = []string{}
	}
	assert.ElementsMatch(t, names, got, "the files of %s", dir)
}

package output

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/finding"
)

func judging() *Flag {
	return NewFlag(Table, Table, JSON, YAML, JUnit, SARIF, Markdown, GitHub)
}

// Two formats naming one file, however spelled, would leave the file holding only the last
// one written: the first format silently lost. Set refuses that while the flags are parsed.
func TestFlagRefusesOneFileTwice(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.Mkdir("sub", 0o755))
	require.NoError(t, os.Symlink("sub", "link"))
	for _, tc := range []struct{ name, first, second string }{
		{"the same name", "a", "a"},
		{"./ and not", "./a", "a"},
		{"relative and absolute", "a", filepath.Join(dir, "a")},
		{"absolute and relative", filepath.Join(dir, "sub", "a"), "sub/../sub/a"},
		{"through a symlinked directory", "link/a", "sub/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := judging()
			require.NoError(t, o.Set("json="+tc.first))
			err := o.Set("sarif=" + tc.second)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "both write")
		})
	}
	o := judging()
	require.NoError(t, o.Set("json=a"))
	require.NoError(t, o.Set("sarif=sub/a"), "two files of one base name are two files")
}

// "-" is standard output, as everywhere on the command line: -o sarif=- never writes a file
// named "-", and counts as the one format standard output takes.
func TestFlagDashIsStandardOutput(t *testing.T) {
	t.Chdir(t.TempDir())
	o := judging()
	require.NoError(t, o.Set("sarif=-"))
	assert.Equal(t, []Target{{Format: SARIF}}, o.Targets())
	assert.Equal(t, SARIF, o.Primary())
	err := o.Set("table")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "both write to standard output")

	var out bytes.Buffer
	require.NoError(t, Write(&out, o.Targets(), &Report{Findings: []finding.Finding{{Rule: "R", Level: finding.Deny, Message: "m"}}}))
	var log struct{ Version string }
	require.NoError(t, json.Unmarshal(out.Bytes(), &log))
	assert.Equal(t, "2.1.0", log.Version)
	_, err = os.Lstat("-")
	assert.ErrorIs(t, err, os.ErrNotExist, "no file named -")
}

func sampleReport() *Report {
	return &Report{Tool: "driverguard check", Findings: []finding.Finding{{Rule: "R", Level: finding.Deny, Object: finding.Object{Kind: "RBLNDriver", Name: "a"}, Message: "m"}}}
}

// A file target that is a symbolic link is written through: the link stays, its target gets
// the output (as a shell's > does), instead of the link being replaced by a file.
func TestWriteFileThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.json"), filepath.Join(dir, "link.json")
	require.NoError(t, os.WriteFile(real, []byte("old"), 0o644))
	require.NoError(t, os.Symlink("real.json", link))

	require.NoError(t, Write(&bytes.Buffer{}, []Target{{Format: JSON, Path: link}}, sampleReport()))

	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link is still a link")
	data, err := os.ReadFile(real)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"findings"`)
	assert.Empty(t, tempFiles(t, dir))
}

// A device (-o junit=/dev/null, /dev/stdout, through a link here: the test must not risk the
// machine's /dev) is written into, never replaced by a regular file: run as root, a rename
// over /dev/null would break every process of the machine.
func TestWriteFileIntoDevice(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "null")
	require.NoError(t, os.Symlink(os.DevNull, link))

	require.NoError(t, Write(&bytes.Buffer{}, []Target{{Format: JUnit, Path: link}}, sampleReport()))

	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link to %s is still a link", os.DevNull)
	fi, err = os.Stat(os.DevNull)
	require.NoError(t, err)
	assert.Equal(t, os.ModeDevice|os.ModeCharDevice, fi.Mode().Type())
	assert.Empty(t, tempFiles(t, dir))
}

// A directory is not a file to write: the error names the flag and the fix, and no temporary
// file is left beside it.
func TestWriteFileDirectory(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "results")
	require.NoError(t, os.Mkdir(target, 0o755))

	err := Write(&bytes.Buffer{}, []Target{{Format: SARIF, Path: target}}, sampleReport())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-o sarif="+target)
	assert.Contains(t, err.Error(), "is a directory")
	assert.Empty(t, tempFiles(t, dir))
}

// tempFiles are the files writeFile's temporaries would be named like in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*"))
	require.NoError(t, err)
	return m
}

// A run ended by a signal while a file is being written (main exits after its grace period,
// whatever the writer is doing) leaves no temporary file beside the target: main removes
// them before it exits, and the target is never written.
func TestRemoveTemporaries(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "out.yaml")
	writing, release := make(chan struct{}), make(chan struct{})
	r := sampleReport()
	r.YAML = func(w io.Writer) error {
		close(writing)
		<-release
		_, err := io.WriteString(w, "findings: []\n")
		return err
	}
	done := make(chan error, 1)
	go func() { done <- Write(&bytes.Buffer{}, []Target{{Format: YAML, Path: target}}, r) }()
	<-writing
	require.Len(t, tempFiles(t, dir), 1, "the temporary file is there while the writer writes")

	RemoveTemporaries()
	assert.Empty(t, tempFiles(t, dir))
	close(release)
	require.Error(t, <-done, "the temporary file is gone: nothing to rename")
	assert.NoFileExists(t, target)
	assert.Empty(t, tempFiles(t, dir))
}

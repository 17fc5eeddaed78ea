package output

import (
	"bytes"
	"encoding/json"
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

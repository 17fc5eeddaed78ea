//go:build unix

package output

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlagRefusesASharedStream: two outputs on one stream would interleave (or replace) each
// other, and the machine-readable one could not be parsed. Set refuses them while the flags
// are parsed — before anything is written — naming both outputs and the fix, however the
// stream is named: standard output as -o FORMAT, "-", /dev/stdout, /dev/fd/1 or
// /proc/self/fd/1; one descriptor by two names; one file by two names (a hard link, the
// descriptor it is open on).
func TestFlagRefusesASharedStream(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.WriteFile("out.json", nil, 0o644))
	require.NoError(t, os.Link("out.json", "hard.json"))
	open, err := os.Open("out.json")
	require.NoError(t, err)
	defer open.Close()
	openFD := "/dev/fd/" + strconv.Itoa(int(open.Fd()))
	if _, err := os.Stat(openFD); err != nil {
		t.Skipf("no %s here: %v", openFD, err)
	}

	for _, tc := range []struct {
		name          string
		first, second string
		want          []string
	}{
		{"a table and /dev/stdout", "table", "json=/dev/stdout",
			[]string{"-o table and -o json=/dev/stdout both write to standard output", "write json to a file of its own (-o json=FILE)"}},
		{"/dev/stdout and a table", "json=/dev/stdout", "table",
			[]string{"-o json=/dev/stdout and -o table both write to standard output", "(-o table=FILE)"}},
		{"/dev/stdout twice", "json=/dev/stdout", "sarif=/dev/stdout", []string{"-o json=/dev/stdout and -o sarif=/dev/stdout both write to standard output"}},
		{"- and standard output", "sarif=-", "table", []string{"-o sarif and -o table both write to standard output"}},
		{"- and /dev/stdout", "sarif=-", "json=/dev/stdout", []string{"both write to standard output"}},
		{"/dev/fd/1 and /dev/stdout", "json=/dev/fd/1", "sarif=/dev/stdout", []string{"-o json=/dev/fd/1 and -o sarif=/dev/stdout both write to standard output"}},
		{"/proc/self/fd/1 and a table", "table", "junit=/proc/self/fd/1", []string{"both write to standard output"}},
		{"/dev/stdout spelled otherwise", "table", "json=/dev//./stdout", []string{"both write to standard output"}},
		{"one descriptor by two names", "json=/dev/stderr", "sarif=/dev/fd/2", []string{"-o json=/dev/stderr and -o sarif=/dev/fd/2 both write to descriptor 2"}},
		{"one file twice", "json=out.json", "sarif=./out.json", []string{"-o json and -o sarif both write ./out.json", "give each its own file"}},
		{"a hard link", "json=out.json", "sarif=hard.json", []string{"-o json=out.json and -o sarif=hard.json both write to one file", "(-o sarif=FILE)"}},
		{"a file and a descriptor open on it", "json=out.json", "sarif=" + openFD, []string{"both write to one file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := judging()
			require.NoError(t, o.Set(tc.first))
			err := o.Set(tc.second)
			require.Error(t, err)
			for _, part := range tc.want {
				assert.Contains(t, err.Error(), part)
			}
		})
	}

	t.Run("standard output redirected to the file", func(t *testing.T) {
		withStdout(t, "out.json")
		o := judging()
		require.NoError(t, o.Set("table"))
		err := o.Set("json=out.json")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "-o table and -o json=out.json both write to one file (standard output and out.json are the same file)")
	})

	t.Run("apart", func(t *testing.T) {
		for _, pair := range [][2]string{
			{"table", "json=other.json"},
			{"table", "json=/dev/stderr"}, // unless standard error is standard output's file (below)
			{"json=out.json", "sarif=sub/out.json"},
			{"json=/dev/fd/1", "sarif=/dev/fd/987"},
		} {
			withStdout(t, "stdout.txt")
			withStderr(t, "stderr.txt")
			o := judging()
			require.NoError(t, o.Set(pair[0]))
			assert.NoError(t, o.Set(pair[1]), "%s", pair)
		}
	})

	t.Run("standard error on standard output's file", func(t *testing.T) {
		withStdout(t, "both.txt")
		withStderr(t, "both.txt")
		o := judging()
		require.NoError(t, o.Set("table"))
		err := o.Set("json=/dev/stderr")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "(standard output and standard error are the same file)")
	})

	t.Run("the null device takes any number", func(t *testing.T) {
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		require.NoError(t, err)
		defer null.Close()
		saved := os.Stdout
		os.Stdout = null
		defer func() { os.Stdout = saved }()
		o := judging()
		require.NoError(t, o.Set("table"))
		assert.NoError(t, o.Set("json="+os.DevNull), "standard output is the null device too")
	})
}

// withStdout and withStderr point os.Stdout and os.Stderr at a file of the test's directory
// (created when missing) until the test ends: what sharedStream compares with.
func withStdout(t *testing.T, name string) { t.Helper(); redirect(t, &os.Stdout, name) }
func withStderr(t *testing.T, name string) { t.Helper(); redirect(t, &os.Stderr, name) }

func redirect(t *testing.T, std **os.File, name string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Clean(name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	require.NoError(t, err)
	saved := *std
	*std = f
	t.Cleanup(func() {
		*std = saved
		_ = f.Close()
	})
}

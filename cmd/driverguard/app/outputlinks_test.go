package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutputsThroughADanglingLink (#43 C1): `check -o json=a1 -o sarif=l1` with l1 a symbolic
// link to a1, which does not exist yet, is one file twice, in either order: exit 2, nothing
// written, the link left as it is. Alone, -o json=l1 writes a1 through the link, which stays.
func TestOutputsThroughADanglingLink(t *testing.T) {
	dir := t.TempDir()
	a1, l1 := filepath.Join(dir, "a1"), filepath.Join(dir, "l1")
	if err := os.Symlink("a1", l1); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	for _, outputs := range [][]string{{"-o", "json=" + a1, "-o", "sarif=" + l1}, {"-o", "json=" + l1, "-o", "sarif=" + a1}} {
		r := run(t, "", append([]string{"check", "-f", exampleValues}, outputs...)...)
		assert.Equal(t, ExitUsage, r.code, "%v", outputs)
		assert.Contains(t, r.stderr, "(through symbolic links): give each its own file", "%v", outputs)
		_, err := os.Lstat(a1)
		assert.ErrorIs(t, err, os.ErrNotExist, "nothing was written")
	}

	r := run(t, "", "check", "-f", exampleValues, "-o", "json="+l1, "-o", "sarif="+filepath.Join(dir, "b1"))
	require.Equal(t, ExitOK, r.code, r.stderr)
	fi, err := os.Lstat(l1)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "l1 is still a link")
	data, err := os.ReadFile(a1)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"findings"`)
}

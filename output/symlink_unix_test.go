//go:build unix

package output

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinkToADescriptor: a link to /dev/stdout is standard output, and refused beside -o table;
// a link to /dev/fd/N is written through the descriptor (what it wrote after lands after the
// output in the same file), and the link and the descriptor's file stay.
func TestLinkToADescriptor(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	symlinks(t, [2]string{"out-link", "/dev/stdout"}, [2]string{"chain", "out-link"})
	for _, name := range []string{"out-link", "chain"} {
		o := judging()
		require.NoError(t, o.Set("table"))
		err := o.Set("json=" + name)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "both write to standard output", name)
	}

	f, err := os.Create("held")
	require.NoError(t, err)
	defer f.Close()
	fdPath := "/dev/fd/" + strconv.Itoa(int(f.Fd()))
	if _, err := os.Stat(fdPath); err != nil {
		t.Skipf("no %s here: %v", fdPath, err)
	}
	symlinks(t, [2]string{"fd-link", fdPath})
	require.NoError(t, Write(&bytes.Buffer{}, []Target{{Format: JSON, Path: "fd-link"}}, sampleReport()))
	_, err = f.WriteString("after\n")
	require.NoError(t, err)
	data, err := os.ReadFile("held")
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(data), "}\nafter\n"), "written through the descriptor: %q", data)
	fi, err := os.Lstat("fd-link")
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type())
	assert.Empty(t, tempFiles(t, dir))
}

package output

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// symlinks makes each link (name → target) in the current directory, skipping the test where
// links cannot be made.
func symlinks(t *testing.T, links ...[2]string) {
	t.Helper()
	for _, l := range links {
		require.NoError(t, os.MkdirAll(filepath.Dir(l[0]), 0o755))
		if err := os.Symlink(l[1], l[0]); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
}

// TestFlagRefusesALinkToTheOtherFile (#43 C1): a symbolic link to the other output's file is
// one file, whether that file exists yet or not (a dangling link: EvalSymlinks fails on it, the
// kernel creates its target), in either order, through a chain of links, with targets relative
// to each link's own directory (a link in a directory reached through a linked directory, a
// ".." after a linked directory) or absolute. Set refuses it while the flags are parsed, before
// anything is written.
func TestFlagRefusesALinkToTheOtherFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.Mkdir("sub", 0o755))
	require.NoError(t, os.Mkdir("other", 0o755))
	symlinks(t,
		[2]string{"l1", "a1"},                        // dangling: a1 does not exist
		[2]string{"l2", "l1"},                        // a chain: l3 → l2 → l1 → a1
		[2]string{"l3", "l2"},                        //
		[2]string{"sub/up", "../a1"},                 // relative to the link's directory
		[2]string{"dlink", "sub"},                    // a linked directory…
		[2]string{"sub/deep", "../other/../a1"},      // …and ".." in a target
		[2]string{"via", "dlink/up"},                 // a link to a link in a linked directory
		[2]string{"odir", "other"},                   //
		[2]string{"other/back", "../sub/../a1"},      // reached as odir/back: relative to other/
		[2]string{"abs", filepath.Join(dir, "a1")},   // absolute
		[2]string{"tricky", "odir/../a1"},            // ".." after a linked directory: other/.. is dir
		[2]string{"sub/b", "b1"},                     // apart: sub/b1
		[2]string{"l4", "sub/b"},                     // a chain into sub/: sub/b1
		[2]string{"loop1", "loop2"},                  // a loop
		[2]string{"loop2", "loop1"},                  //
		[2]string{"real", "existing.json"},           // to a file that exists
		[2]string{"sub/real2", "../existing.json"},   //
		[2]string{"both", filepath.Join("sub", "b")}, //
	)
	require.NoError(t, os.WriteFile("existing.json", nil, 0o644))

	for _, pair := range [][2]string{
		{"a1", "l1"}, {"l1", "a1"},
		{"a1", "l3"}, {"l3", "a1"}, {"l1", "l3"},
		{"a1", "sub/up"}, {"sub/up", "l2"},
		{"a1", "dlink/up"}, {"dlink/up", "a1"},
		{"a1", "sub/deep"}, {"dlink/deep", "l1"},
		{"via", "a1"},
		{"odir/back", "a1"}, {"a1", "other/back"},
		{"abs", "l3"}, {filepath.Join(dir, "a1"), "abs"},
		{"tricky", "a1"},
		{"sub/b1", "l4"}, {"both", "sub/b1"}, {"l4", "both"},
		{"existing.json", "real"}, {"sub/real2", "real"},
	} {
		t.Run(pair[0]+" and "+pair[1], func(t *testing.T) {
			o := judging()
			require.NoError(t, o.Set("json="+pair[0]))
			err := o.Set("sarif=" + pair[1])
			require.Error(t, err, "%s and %s are one file", pair[0], pair[1])
			assert.Contains(t, err.Error(), "both write")
			assert.Contains(t, err.Error(), "give each its own file")
		})
	}

	t.Run("apart", func(t *testing.T) {
		for _, pair := range [][2]string{{"a1", "sub/b"}, {"l1", "l4"}, {"sub/a1", "sub/up"}, {"loop1", "a1"}, {"other/a1", "other/back"}} {
			o := judging()
			require.NoError(t, o.Set("json="+pair[0]))
			assert.NoError(t, o.Set("sarif="+pair[1]), "%s", pair)
		}
	})

	t.Run("the message names the file", func(t *testing.T) {
		o := judging()
		require.NoError(t, o.Set("json=a1"))
		err := o.Set("sarif=l3")
		require.Error(t, err)
		real, err2 := filepath.EvalSymlinks(dir)
		require.NoError(t, err2)
		assert.Contains(t, err.Error(), "-o json=a1 and -o sarif=l3 both write "+filepath.Join(real, "a1")+" (through symbolic links): give each its own file (-o sarif=FILE)")
	})
}

// TestWriteFileThroughDanglingSymlink (#43 C1): a link whose target does not exist yet is
// written through, as a shell's > writes it: the target is created, the link stays a link —
// through a chain of links with targets relative to each link's directory too. A loop of links
// is an error, and nothing is written.
func TestWriteFileThroughDanglingSymlink(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.Mkdir("sub", 0o755))
	symlinks(t, [2]string{"l1", "a1"}, [2]string{"sub/l2", "../l1"}, [2]string{"l3", "sub/l2"},
		[2]string{"loop1", "loop2"}, [2]string{"loop2", "loop1"})

	for _, link := range []string{"l1", "l3"} {
		require.NoError(t, os.RemoveAll("a1"))
		require.NoError(t, Write(&bytes.Buffer{}, []Target{{Format: JSON, Path: link}}, sampleReport()), link)
		for _, l := range []string{"l1", "sub/l2", "l3"} {
			fi, err := os.Lstat(l)
			require.NoError(t, err)
			assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "%s is still a link after writing %s", l, link)
		}
		fi, err := os.Lstat("a1")
		require.NoError(t, err, "writing %s created a1", link)
		assert.True(t, fi.Mode().IsRegular())
		data, err := os.ReadFile("a1")
		require.NoError(t, err)
		assert.Contains(t, string(data), `"findings"`)
	}

	err := Write(&bytes.Buffer{}, []Target{{Format: JSON, Path: "loop1"}}, sampleReport())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "symbolic links")
	assert.Empty(t, tempFiles(t, dir))
	assert.Empty(t, tempFiles(t, filepath.Join(dir, "sub")))
}

// TestLinkedOutputsAreBothKept (#43 C1): the reviewer's two orders, written as the flags would
// have let them through: -o json=a1 -o sarif=l1 (l1 → a1, a1 not there yet) is refused by the
// flag; and -o json=l1 alone writes a1 through the link, which stays.
func TestLinkedOutputsAreBothKept(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	symlinks(t, [2]string{"l1", "a1"})
	for _, order := range [][2]string{{"json=a1", "sarif=l1"}, {"json=l1", "sarif=a1"}} {
		o := judging()
		require.NoError(t, o.Set(order[0]))
		require.Error(t, o.Set(order[1]), "%s", order)
	}
	o := judging()
	require.NoError(t, o.Set("json=l1"))
	require.NoError(t, o.Set("sarif=b1"))
	require.NoError(t, Write(&bytes.Buffer{}, o.Targets(), sampleReport()))
	fi, err := os.Lstat("l1")
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "l1 is still a link")
	a1, err := os.ReadFile("a1")
	require.NoError(t, err)
	assert.Contains(t, string(a1), `"findings"`, "the JSON is in a1")
	b1, err := os.ReadFile("b1")
	require.NoError(t, err)
	assert.Contains(t, string(b1), `"2.1.0"`, "the SARIF is in b1")
}

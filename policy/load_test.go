package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/policy"
)

// treePolicy is a module that does not load twice: a second copy of it (the same file
// reached through another path) declares the default rule again.
const treePolicy = "package driverguard.tree\n\ndefault limit := 1\n\ndeny contains \"tree\" if limit > 1\n"

// TestPolicyDirectoriesReadEachFileOnce: symlinks cannot make a policy directory fan out; each
// directory and file is read once, under the first path (in name order) that reaches it.
func TestPolicyDirectoriesReadEachFileOnce(t *testing.T) {
	tests := []struct {
		name string
		// build lays out the policy directory dir (tree is a directory outside it) and
		// returns the files the engine should read, relative to dir.
		build func(t *testing.T, dir, tree string) []string
	}{
		{"a symlink to the directory itself", func(t *testing.T, dir, _ string) []string {
			writeFile(t, dir, "team.rego", treePolicy)
			require.NoError(t, os.Symlink(dir, filepath.Join(dir, "loop")))
			return []string{"team.rego"}
		}},
		{"a symlink to a parent directory", func(t *testing.T, dir, _ string) []string {
			writeFile(t, dir, "a/b/team.rego", treePolicy)
			require.NoError(t, os.Symlink("../..", filepath.Join(dir, "a", "b", "up")))
			return []string{"a/b/team.rego"}
		}},
		{"two symlinks to one tree", func(t *testing.T, dir, tree string) []string {
			writeFile(t, tree, "team.rego", treePolicy)
			writeFile(t, tree, "sub/data.yaml", "limits: {max: 1}\n")
			require.NoError(t, os.Symlink(tree, filepath.Join(dir, "first")))
			require.NoError(t, os.Symlink(tree, filepath.Join(dir, "second")))
			return []string{"first/sub/data.yaml", "first/team.rego"}
		}},
		{"a directory and a symlink to it", func(t *testing.T, dir, _ string) []string {
			writeFile(t, dir, "b/team.rego", treePolicy)
			require.NoError(t, os.Symlink("b", filepath.Join(dir, "c")))
			return []string{"b/team.rego"}
		}},
		{"symlinks to one file", func(t *testing.T, dir, tree string) []string {
			file := writeFile(t, tree, "team.rego", treePolicy)
			require.NoError(t, os.Symlink(file, filepath.Join(dir, "one.rego")))
			require.NoError(t, os.Symlink(file, filepath.Join(dir, "two.rego")))
			return []string{"one.rego"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, tree := t.TempDir(), t.TempDir()
			want := tt.build(t, dir, tree)
			for i, f := range want {
				want[i] = filepath.Join(dir, f)
			}
			e, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
			require.NoError(t, err)
			assert.Equal(t, want, e.Status().Files)
			assert.Equal(t, []string{"driverguard.tree"}, e.Status().Policies)
			// policy test reads the directories the same way
			_, err = policy.RunTests(t.Context(), policy.TestOptions{Dirs: []string{dir}})
			require.NoError(t, err)
		})
	}
	t.Run("a directory given twice", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "team.rego", treePolicy)
		e, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir, dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
		require.NoError(t, err)
		assert.Equal(t, []string{filepath.Join(dir, "team.rego")}, e.Status().Files)
	})
}

// TestPolicyDirectoryLimits: at most policy.MaxPolicyFiles files in all, and directories at
// most 16 deep, each refused naming the directory and the limit.
func TestPolicyDirectoryLimits(t *testing.T) {
	load := func(t *testing.T, dirs ...string) error {
		t.Helper()
		_, err := policy.New(t.Context(), policy.Options{Dirs: dirs, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
		return err
	}
	t.Run("files", func(t *testing.T) {
		dir := t.TempDir()
		for i := range policy.MaxPolicyFiles {
			require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%05d.json", i)), []byte("{}"), 0o600))
		}
		writeFile(t, dir, "README.md", "not a policy file, not counted")
		writeFile(t, dir, "team_test.rego", "package driverguard.team_test\n") // a test: not read by the engine
		require.NoError(t, load(t, dir), "exactly the limit")

		other := t.TempDir()
		writeFile(t, other, "one-more.json", "{}")
		err := load(t, dir, other)
		var le *policy.LoadError
		require.ErrorAs(t, err, &le)
		assert.EqualError(t, err, fmt.Sprintf("policy: %s: the policy directories hold more than %d policy and data files (.rego, .json, .yaml, .yml); driverguard reads at most %d: remove the files that are not policies, or symlinks that reach a large tree",
			other, policy.MaxPolicyFiles, policy.MaxPolicyFiles))

		// symlinks to the same tree count its files once
		links := t.TempDir()
		require.NoError(t, os.Symlink(dir, filepath.Join(links, "a")))
		require.NoError(t, os.Symlink(dir, filepath.Join(links, "b")))
		require.NoError(t, load(t, links))
	})
	t.Run("depth", func(t *testing.T) {
		dir := t.TempDir()
		deep := filepath.Join(dir, strings.Repeat("d/", 16))
		writeFile(t, deep, "team.rego", treePolicy)
		require.NoError(t, load(t, dir), "16 directories deep")
		writeFile(t, filepath.Join(deep, "d"), "team.rego", treePolicy)
		err := load(t, dir)
		var le *policy.LoadError
		require.ErrorAs(t, err, &le)
		assert.EqualError(t, err, "policy: "+filepath.Join(deep, "d")+": nested more than 16 directories deep; driverguard reads policy directories at most 16 deep")
	})
}

// TestPolicyFiles: a path may be one policy or data file as well as a directory; a file that
// is neither, a test file outside `policy test`, and a directory given with a file of its own
// (read once) each say what they are.
func TestPolicyFiles(t *testing.T) {
	load := func(t *testing.T, paths ...string) (*policy.Engine, error) {
		t.Helper()
		return policy.New(t.Context(), policy.Options{Dirs: paths, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
	}
	dir := t.TempDir()
	rego := writeFile(t, dir, "team.rego", treePolicy)
	data := writeFile(t, dir, "limits.yaml", "limits: {max: 3}\n")
	test := writeFile(t, dir, "team_test.rego", "package driverguard.tree_test\n")
	readme := writeFile(t, dir, "README.md", "# not a policy\n")

	e, err := load(t, rego, data)
	require.NoError(t, err)
	assert.Equal(t, []string{"driverguard.tree"}, e.Status().Policies)

	e, err = load(t, dir, rego) // the file again, inside the directory read before: read once
	require.NoError(t, err, "a file reached twice loads once")
	assert.Equal(t, []string{"driverguard.tree"}, e.Status().Policies)

	for _, tc := range []struct{ path, msg string }{
		{readme, "is neither a directory nor a policy or data file (.rego, .json, .yaml, .yml); --policy takes either"},
		{test, "is a Rego test file: 'driverguard policy test' runs it; give the policy itself, or its directory"},
		{os.DevNull, "is neither a directory nor a policy or data file"},
	} {
		_, err := load(t, tc.path)
		var le *policy.LoadError
		require.ErrorAs(t, err, &le, tc.path)
		assert.ErrorContains(t, err, tc.path+": "+tc.msg)
	}
}

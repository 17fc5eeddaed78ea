package policy_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
)

// maxLoadErrorBytes bounds a LoadError's message: MaxProblems lines of a file (cut to
// MaxQuotedName and its length), a line and column, and a message of at most MaxProblemBytes
// and its length, then the count of the rest.
const maxLoadErrorBytes = 64 + policy.MaxProblems*(3+policy.MaxQuotedName+32+policy.MaxProblemBytes+32) + 80

// TestLoadErrorsAreBounded: a LoadError holds the first MaxProblems problems and counts the
// rest, each quoting names and paths cut to MaxQuotedName, in its message, its JSON (the
// /policyz answer) and the engine's Status.
func TestLoadErrorsAreBounded(t *testing.T) {
	assert.Equal(t, decision.MaxFindings, policy.MaxProblems, "a policy load lists as many problems as a verdict lists findings")
	long := strings.Repeat("a", 10<<10)
	tests := []struct {
		name  string
		files func(t *testing.T, dir string)
		opts  policy.Options
		// total is the number of problems, want what one of them says.
		total int
		want  string
	}{
		{"500 modules outside driverguard.", func(t *testing.T, dir string) {
			for i := range 500 {
				writeFile(t, dir, fmt.Sprintf("m%03d.rego", i), fmt.Sprintf("package team%03d\n", i))
			}
		}, policy.Options{}, 500, "m000.rego:1:1: package team000: driverguard evaluates only packages under driverguard."},
		{"500 modules in the library's namespace", func(t *testing.T, dir string) {
			for i := range 500 {
				writeFile(t, dir, fmt.Sprintf("m%03d.rego", i), fmt.Sprintf("package driverguard.lib.%s%03d\n", long, i))
			}
		}, policy.Options{}, 500, "m000.rego:1:1: package driverguard.lib." + strings.Repeat("a", 200-len("driverguard.lib.")) + "... (10259 bytes): driverguard.lib is reserved for the bundled library"},
		{"a 10 KB package name", func(t *testing.T, dir string) {
			writeFile(t, dir, "team.rego", "package "+long+"\n")
		}, policy.Options{}, 1, "team.rego:1:1: package " + strings.Repeat("a", 200) + "... (10240 bytes): driverguard evaluates only packages under driverguard., so this module would never run; rename it, e.g. package driverguard." + strings.Repeat("a", 200) + "... (10240 bytes) (tests: driverguard." + strings.Repeat("a", 200) + "... (10240 bytes)_test)"},
		{"500 unknown names to disable, 30 policies", func(t *testing.T, dir string) {
			for i := range 30 {
				writeFile(t, dir, fmt.Sprintf("p%02d.rego", i), fmt.Sprintf("package driverguard.team_%s%02d\n\ndeny contains \"x\" if false\n", long, i))
			}
		}, policy.Options{Disable: func() []string {
			names := make([]string, 500)
			for i := range names {
				names[i] = fmt.Sprintf("%s-%03d", long, i)
			}
			return names
		}()}, 500, "--disable: cannot disable \"" + strings.Repeat("a", 200) + "... (10244 bytes)\": no policy has that name; the policies are lib.allowed_registries, "},
		{"the policies of a problem", func(t *testing.T, dir string) {
			for i := range 30 {
				writeFile(t, dir, fmt.Sprintf("p%02d.rego", i), fmt.Sprintf("package driverguard.team_%s%02d\n\ndeny contains \"x\" if false\n", long, i))
			}
		}, policy.Options{Disable: []string{"x"}}, 1, "--disable: cannot disable \"x\": no policy has that name; the policies are lib.allowed_registries, lib.canary_selector, lib.drain_empty_dir, lib.family_in_image, lib.kernel_tag, lib.manager_version, lib.max_parallel_upgrades, lib.pinned_version, " +
			"team_" + strings.Repeat("a", 75) + "... (10247 bytes), team_" + strings.Repeat("a", 75) + "... (10247 bytes), ... (38 in all; driverguard policy list shows them)"},
		{"a 10 KB setting", func(t *testing.T, dir string) {
			writeFile(t, dir, "data.json", `{"driverguard_config": {"`+long+`": []}}`)
		}, policy.Options{}, 1, "data.json: driverguard_config." + strings.Repeat("a", 200) + "... (10240 bytes) is not a setting"},
		{"a 10 KB data path set twice", func(t *testing.T, dir string) {
			writeFile(t, dir, "a.json", `{"`+long+`": 1}`)
			writeFile(t, dir, "b.json", `{"`+long+`": 2}`)
		}, policy.Options{}, 1, "b.json: data." + strings.Repeat("a", 200) + "... (10240 bytes) is set by more than one data document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.files(t, dir)
			opts := tt.opts
			opts.Dirs, opts.Metrics = []string{dir}, prometheus.NewRegistry()
			_, err := policy.New(t.Context(), opts)
			var le *policy.LoadError
			require.ErrorAs(t, err, &le)
			assertBounded(t, le, tt.total)
			if strings.HasPrefix(tt.want, "--disable") {
				assert.Contains(t, err.Error(), tt.want)
			} else {
				assert.Contains(t, err.Error(), filepath.Join(dir, tt.want))
			}
			for _, p := range le.Problems {
				assert.LessOrEqual(t, len(p.Message), policy.MaxProblemBytes+32)
			}
			// policy test reads and checks the directory with the same loader
			if tt.opts.Disable == nil {
				_, err = policy.RunTests(t.Context(), policy.TestOptions{Dirs: []string{dir}})
				require.ErrorAs(t, err, &le)
				assertBounded(t, le, tt.total)
			}
		})
	}
	t.Run("a reload", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "team.rego", teamPolicy)
		e := newEngine(t, policy.Options{Dirs: []string{dir}})
		for i := range 500 {
			writeFile(t, dir, fmt.Sprintf("m%03d.rego", i), fmt.Sprintf("package %s%03d\n", long, i))
		}
		require.Error(t, e.Reload(t.Context()))
		st := e.Status()
		require.NotNil(t, st.Error)
		assertBounded(t, st.Error, 500)
		text := st.String()
		assert.Less(t, len(text), maxLoadErrorBytes)
		assert.True(t, strings.HasSuffix(text, "\n  ... and 450 more (500 problems in all)"), text[len(text)-200:])
		js, err := json.Marshal(st)
		require.NoError(t, err)
		assert.Less(t, len(js), 2*maxLoadErrorBytes, "the /policyz answer")
	})
	t.Run("a long path", func(t *testing.T) {
		dir := t.TempDir()
		sub := filepath.Join(dir, strings.Repeat(strings.Repeat("d", 250)+"/", 8))
		path := writeFile(t, sub, "team.rego", "package team\n")
		_, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, Metrics: prometheus.NewRegistry()})
		var le *policy.LoadError
		require.ErrorAs(t, err, &le)
		require.Len(t, le.Problems, 1)
		assert.Equal(t, path[:policy.MaxQuotedName]+fmt.Sprintf("... (%d bytes)", len(path)), le.Problems[0].File)
	})
}

// assertBounded checks that le lists at most MaxProblems of total problems and counts the
// rest, in its message and its JSON.
func assertBounded(t *testing.T, le *policy.LoadError, total int) {
	t.Helper()
	assert.Equal(t, total, le.Total())
	assert.Len(t, le.Problems, min(total, policy.MaxProblems))
	assert.Equal(t, max(total-policy.MaxProblems, 0), le.Omitted)
	msg := le.Error()
	assert.Less(t, len(msg), maxLoadErrorBytes)
	if total > policy.MaxProblems {
		assert.True(t, strings.HasPrefix(msg, fmt.Sprintf("policy: %d problems:\n", total)), msg[:100])
		assert.True(t, strings.HasSuffix(msg, fmt.Sprintf("\n  ... and %d more (%d problems in all)", total-policy.MaxProblems, total)), msg[len(msg)-100:])
		assert.Equal(t, policy.MaxProblems+2, strings.Count(msg, "\n")+1)
	}
	js, err := json.Marshal(le)
	require.NoError(t, err)
	assert.Less(t, len(js), 2*maxLoadErrorBytes)
	if total > policy.MaxProblems {
		assert.Contains(t, string(js), fmt.Sprintf(`"omitted":%d`, total-policy.MaxProblems))
	}
}

package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/policy"
)

// startWatching runs e.Start until the test ends.
func startWatching(t *testing.T, e *policy.Engine) {
	t.Helper()
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() { done <- e.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
}

// denies evaluates the rbln-driver input of the example and returns its deny messages.
func denies(t *testing.T, e *policy.Engine, inputs []*policy.Input) []string {
	t.Helper()
	return msgs(evaluate(t, e, inputs, "rbln-driver").Deny)
}

const waitFor, tick = 10 * time.Second, 20 * time.Millisecond

// TestWatchPicksUpEdits: editing, breaking, fixing, adding and removing files in a watched
// directory changes the engine's answers without a restart. The poll interval is an hour, so
// file system events do the work.
func TestWatchPicksUpEdits(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "team.rego", teamPolicy)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, PollInterval: time.Hour})
	startWatching(t, e)
	inputs := renderInputs(t, exampleValues, "")
	require.Len(t, denies(t, e, inputs), 1)

	// edit: deny becomes warn
	writeFile(t, dir, "team.rego", strings.Replace(teamPolicy, "deny contains", "warn contains", 1))
	require.Eventually(t, func() bool { return len(denies(t, e, inputs)) == 0 }, waitFor, tick)

	// break it: the previous answers stay, and the problem is reported with file and line
	broken := writeFile(t, dir, "team.rego", "package driverguard.team\n\ndeny contains msg if {\n")
	require.Eventually(t, func() bool { return !e.Status().Healthy() }, waitFor, tick)
	assert.Equal(t, broken, e.Status().Error.Problems[0].File)
	assert.NotZero(t, e.Status().Error.Problems[0].Line)
	assert.Empty(t, denies(t, e, inputs))
	assert.Len(t, evaluate(t, e, inputs, "rbln-driver").Warn, 1, "the last good set still warns")

	// fix it in a new file in a new subdirectory, and remove the broken one
	writeFile(t, dir, "more/strict.rego", "package driverguard.strict\n\ndeny contains \"strict\" if input.object.kind == \"RBLNDriver\"\n")
	require.NoError(t, os.Remove(broken))
	require.Eventually(t, func() bool {
		return e.Status().Healthy() && strings.Join(denies(t, e, inputs), "|") == "driverguard.strict: strict"
	}, waitFor, tick)
}

// TestWatchFollowsConfigMapUpdates mimics the kubelet's atomic ConfigMap update: the visible
// files are symlinks through ..data to a timestamped directory, and an update swaps ..data.
func TestWatchFollowsConfigMapUpdates(t *testing.T) {
	dir := t.TempDir()
	version := func(name, content string) {
		writeFile(t, dir, filepath.Join(name, "team.rego"), content)
		tmp := filepath.Join(dir, "..data_tmp")
		require.NoError(t, os.Symlink(name, tmp))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, "..data")))
	}
	version("..2026_01_01_00_00_00.000000001", teamPolicy)
	require.NoError(t, os.Symlink(filepath.Join("..data", "team.rego"), filepath.Join(dir, "team.rego")))

	e := newEngine(t, policy.Options{Dirs: []string{dir}, PollInterval: time.Hour, Metrics: prometheus.NewRegistry()})
	assert.Equal(t, []string{filepath.Join(dir, "team.rego")}, e.Status().Files, "the timestamped directories are not read twice")
	startWatching(t, e)
	inputs := renderInputs(t, exampleValues, "")
	require.Len(t, denies(t, e, inputs), 1)

	version("..2026_01_01_00_00_01.000000002", strings.Replace(teamPolicy, "deny contains", "warn contains", 1))
	require.Eventually(t, func() bool { return len(denies(t, e, inputs)) == 0 }, waitFor, tick)
	assert.EqualValues(t, 2, e.Status().Generation)
}

// TestPollingCatchesChangesWithoutEvents: with a short poll interval, a change is seen even if
// no event arrives (here: the whole directory is replaced).
func TestPollingCatchesChangesWithoutEvents(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "policies")
	writeFile(t, dir, "team.rego", teamPolicy)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, PollInterval: 50 * time.Millisecond})
	startWatching(t, e)
	inputs := renderInputs(t, exampleValues, "")
	require.Len(t, denies(t, e, inputs), 1)

	next := filepath.Join(parent, "next")
	writeFile(t, next, "team.rego", strings.Replace(teamPolicy, "deny contains", "warn contains", 1))
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Rename(next, dir))
	require.Eventually(t, func() bool { return len(denies(t, e, inputs)) == 0 && e.Status().Healthy() }, waitFor, tick)
}

package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timingFlags are the ranges every timing flag of every command takes (#30): a value outside
// means nothing or does harm, and 0 is taken only where it says what it means.
var timingFlags = map[string]struct {
	min, max, def time.Duration
	zero          bool // 0 is accepted (and the usage says what it means)
}{
	"policy-timeout":              {10 * time.Millisecond, time.Minute, time.Second, false},
	"image-timeout":               {100 * time.Millisecond, 5 * time.Minute, 10 * time.Second, false},
	"timeout":                     {10 * time.Millisecond, 10 * time.Minute, 5 * time.Second, false}, // policy test
	"live-timeout":                {time.Second, 5 * time.Minute, 20 * time.Second, false},
	"request-body-timeout":        {time.Second, 30 * time.Second, 10 * time.Second, false},
	"header-timeout":              {time.Second, 30 * time.Second, 5 * time.Second, false},
	"idle-timeout":                {time.Second, 10 * time.Minute, time.Minute, false},
	"shutdown-delay":              {0, time.Minute, 5 * time.Second, true},
	"shutdown-timeout":            {time.Second, 5 * time.Minute, 30 * time.Second, false},
	"policy-poll-interval":        {time.Second, time.Hour, 10 * time.Second, false},
	"audit-interval":              {10 * time.Second, 24 * time.Hour, 10 * time.Minute, false},
	"audit-image-interval":        {time.Minute, 24 * time.Hour, time.Hour, false},
	"leader-elect-lease-duration": {time.Second, 10 * time.Minute, 15 * time.Second, false},
	"leader-elect-renew-deadline": {500 * time.Millisecond, 10 * time.Minute, 10 * time.Second, false},
	"leader-elect-retry-period":   {100 * time.Millisecond, time.Minute, 2 * time.Second, false},
}

// durationFlagsOf lists every duration flag of every command under root, by command path
// without the root ("serve", "policy test").
func durationFlagsOf(root *cobra.Command) map[string][]*pflag.Flag {
	out := map[string][]*pflag.Flag{}
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		path := strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "duration" {
				out[path] = append(out[path], f)
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

func newTestRoot() *cobra.Command {
	root := newRootCommand(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	singleUse(root)
	return root
}

// TestTimingFlagsRefuseOutOfRange (#30): every duration flag of every command refuses, when it
// is parsed, a value too small, too large, negative or (unless 0 means something) zero, with
// exit 2 and an error naming the flag and its range; a value in range is taken as given.
// `serve --policy-timeout=1ns` started and would have refused every RBLNDriver write;
// `--audit-interval=1ns` wrote the cluster policy's status on every pass.
func TestTimingFlagsRefuseOutOfRange(t *testing.T) {
	t.Cleanup(func() { stopGrace.Store(0) })
	flags := durationFlagsOf(newTestRoot())
	require.NotEmpty(t, flags)
	paths := make([]string, 0, len(flags))
	for p := range flags {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, path := range paths {
		for _, f := range flags[path] {
			want, ok := timingFlags[f.Name]
			require.True(t, ok, "%s --%s is a duration flag without a range in this test", path, f.Name)
			t.Run(path+" --"+f.Name, func(t *testing.T) {
				var bad []string
				if want.min > 0 {
					bad = append(bad, (want.min - want.min/10).String(), "1ns")
				}
				bad = append(bad, (want.max + want.max/10).String(), "-1s", "soon")
				if !want.zero {
					bad = append(bad, "0", "0s")
				}
				for _, v := range bad {
					args := append(strings.Fields(path), "--"+f.Name+"="+v)
					r := run(t, "", args...)
					assert.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
					assert.Empty(t, r.stdout)
					assert.Contains(t, r.stderr, fmt.Sprintf(`invalid argument %q for "--%s" flag: `, v, f.Name), "%v", args)
					assert.Contains(t, r.stderr, formatDuration(want.max), "the error gives the range")
				}
				good := []time.Duration{want.min, want.max, want.def, (want.min + want.max) / 2}
				if want.zero {
					good = append(good, 0)
				}
				for _, d := range good {
					if d == 0 && !want.zero {
						continue
					}
					cmd, _, err := newTestRoot().Find(strings.Fields(path))
					require.NoError(t, err)
					require.NoError(t, cmd.ParseFlags([]string{"--" + f.Name + "=" + d.String()}), "%s --%s=%s", path, f.Name, d)
					got, err := cmd.Flags().GetDuration(f.Name)
					require.NoError(t, err)
					assert.Equal(t, d, got)
				}
				// The default is the documented one, and in range.
				cmd, _, err := newTestRoot().Find(strings.Fields(path))
				require.NoError(t, err)
				got, err := cmd.Flags().GetDuration(f.Name)
				require.NoError(t, err)
				assert.Equal(t, want.def, got, "the default")
			})
		}
	}
	// Every flag of the table is one some command has.
	seen := map[string]bool{}
	for _, fs := range flags {
		for _, f := range fs {
			seen[f.Name] = true
		}
	}
	for name := range timingFlags {
		assert.True(t, seen[name], "--%s is in the table but no command has it", name)
	}
}

// TestTimingFlagsStateTheirRange (#30): --help of every command shows each timing flag's range.
func TestTimingFlagsStateTheirRange(t *testing.T) {
	for path, fs := range durationFlagsOf(newTestRoot()) {
		r := run(t, "", append(strings.Fields(path), "--help")...)
		require.Equal(t, ExitOK, r.code, r.stderr)
		for _, f := range fs {
			want := timingFlags[f.Name]
			rng := formatDuration(want.min) + " to " + formatDuration(want.max)
			line := ""
			for l := range strings.SplitSeq(r.stdout, "\n") {
				if strings.Contains(l, "--"+f.Name+" ") {
					line = l
				}
			}
			assert.Contains(t, line, "("+rng, "%s --help, --%s", path, f.Name)
			if want.zero {
				assert.Contains(t, line, "; 0: ", "%s --help, --%s says what 0 means", path, f.Name)
			}
		}
	}
}

func TestDurationRangeWords(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"}, {10 * time.Millisecond, "10ms"}, {time.Second, "1s"}, {time.Minute, "1m"}, {90 * time.Second, "1m30s"},
		{time.Hour, "1h"}, {24 * time.Hour, "24h"}, {90 * time.Minute, "1h30m"}, {time.Hour + time.Second, "1h0m1s"},
	} {
		assert.Equal(t, tc.want, formatDuration(tc.d))
		if tc.d > 0 {
			back, err := time.ParseDuration(tc.want)
			require.NoError(t, err)
			assert.Equal(t, tc.d, back)
		}
	}
	assert.Equal(t, "10ms to 1m", durationRange{min: 10 * time.Millisecond, max: time.Minute}.String())
	assert.Equal(t, "0 to 1m; 0: stop serving at once", durationRange{max: time.Minute, zero: "stop serving at once"}.String())
	assert.Equal(t, "0: no deadline, or 1s to 1m", durationRange{min: time.Second, max: time.Minute, zero: "no deadline"}.String())
}

// TestChartAuditIntervalsServeTakes (#30): the chart passes webhook.audit.interval and
// imageInterval to serve --audit-interval and --audit-image-interval; its schema admits no
// value serve refuses (a pod that crashloops on its flags), and every whole number of seconds
// in serve's range, written as seconds or as Go writes durations (1h0m5s), is admitted.
func TestChartAuditIntervalsServeTakes(t *testing.T) {
	raw, err := os.ReadFile("../../../charts/driverguard/values.schema.json")
	require.NoError(t, err)
	var schema struct {
		Properties struct {
			Webhook struct {
				Properties struct {
					Audit struct {
						Properties map[string]struct{ Pattern string }
					}
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(raw, &schema))
	cmd, _, err := newTestRoot().Find([]string{"serve"})
	require.NoError(t, err)
	for key, flag := range map[string]string{"interval": "audit-interval", "imageInterval": "audit-image-interval"} {
		t.Run(key, func(t *testing.T) {
			pattern := schema.Properties.Webhook.Properties.Audit.Properties[key].Pattern
			require.NotEmpty(t, pattern)
			re := regexp.MustCompile(pattern)
			v := cmd.Flags().Lookup(flag).Value.(*onceValue).Value.(*durationValue)
			takes := func(s string) bool {
				var d time.Duration
				return (&durationValue{p: &d, r: v.r}).Set(s) == nil
			}
			// Values the schema might admit: seconds, minutes, hours and their combinations,
			// in and around the range, and what Go's String writes.
			var candidates []string
			for n := range 90_001 {
				candidates = append(candidates, fmt.Sprintf("%ds", n), (time.Duration(n) * time.Second).String())
			}
			for n := range 1_501 {
				candidates = append(candidates, fmt.Sprintf("%dm", n), fmt.Sprintf("%dm0s", n), fmt.Sprintf("%dm59s", n), fmt.Sprintf("%dm60s", n))
			}
			for h := range 30 {
				candidates = append(candidates, fmt.Sprintf("%dh", h))
				for m := range 62 {
					candidates = append(candidates, fmt.Sprintf("%dh%dm", h, m), fmt.Sprintf("%dh%dm59s", h, m), fmt.Sprintf("%dh%ds", h, m))
				}
			}
			candidates = append(candidates, "0.0001ns", "99999999h", "1.5h", "600000ms", "1h90m", "24h0m1s", "1440m1s", "86401s", "-1h", "10m ", " 10m")
			admitted := 0
			for _, s := range candidates {
				if re.MatchString(s) {
					admitted++
					assert.True(t, takes(s), "the chart admits %s: %q, which serve --%s refuses", key, s, flag)
				}
			}
			assert.Positive(t, admitted)
			for sec := v.r.min / time.Second; sec <= v.r.max/time.Second; sec++ {
				d := sec * time.Second
				for _, s := range []string{fmt.Sprintf("%ds", sec), d.String(), formatDuration(d)} {
					if !re.MatchString(s) {
						t.Fatalf("the chart refuses %s: %q, in serve --%s's range", key, s, flag)
					}
				}
			}
		})
	}
}

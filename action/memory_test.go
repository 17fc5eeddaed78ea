package action

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCgroupMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	for _, tc := range []struct {
		name    string
		files   []string
		want    int64
		limited bool
	}{
		{"v2 limit", []string{write("v2", "536870912\n")}, 536870912, true},
		{"v2 unlimited", []string{write("v2max", "max\n")}, 0, false},
		{"v1 after a missing v2", []string{filepath.Join(dir, "absent"), write("v1", "268435456\n")}, 268435456, true},
		{"v1 unlimited", []string{write("v1max", "9223372036854771712\n")}, 0, false},
		{"garbage", []string{write("bad", "lots\n")}, 0, false},
		{"no cgroup files", []string{filepath.Join(dir, "absent")}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, ok := cgroupMemoryLimit(tc.files)
			assert.Equal(t, tc.limited, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestSetMemoryLimit: an explicit limit sets the soft limit to its softMemoryPercent (the
// chart's 256Mi gives 102 MiB); GOMEMLIMIT in the environment wins.
func TestSetMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	t.Setenv("GOMEMLIMIT", "")
	setMemoryLimit(logr.Discard(), 256<<20)
	assert.Equal(t, int64(256<<20)/100*softMemoryPercent, debug.SetMemoryLimit(-1))

	debug.SetMemoryLimit(prev)
	t.Setenv("GOMEMLIMIT", "1GiB")
	setMemoryLimit(logr.Discard(), 256<<20)
	assert.Equal(t, prev, debug.SetMemoryLimit(-1), "GOMEMLIMIT from the environment wins")
}

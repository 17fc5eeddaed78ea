//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/test/controlplane"
)

// The driverguard binary, built once for the package's tests as the image builds it (or
// DRIVERGUARD_BIN, which make test builds once for every package): signals, exit codes and
// memory are a process's.
var binary string

func TestMain(m *testing.M) {
	root, err := controlplane.RepoRoot()
	if err == nil {
		binary, err = controlplane.DriverguardBinary(root, "cli")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if os.Getenv("DRIVERGUARD_BIN") == "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

const exampleValues = "../../examples/multi-driver.yaml"

// proc is a running driverguard.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
	// parentHWM is this test process's peak RSS when it started the process; sampledHWM the
	// process's own, read from /proc while it ran (see wait).
	parentHWM  int64
	sampledHWM atomic.Int64
}

func start(t *testing.T, stdin io.Reader, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), done: make(chan struct{}), parentHWM: vmHWM(os.Getpid())}
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = stdin, &p.stdout, &p.stderr
	require.NoError(t, p.cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(exited)
	}()
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if hwm := vmHWM(p.cmd.Process.Pid); hwm > p.sampledHWM.Load() {
				p.sampledHWM.Store(hwm)
			}
			select {
			case <-exited:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits at most d for the process to exit and returns its exit code and peak RSS: the
// rusage of the process, unless that is not above this test process's own peak — Linux counts
// the memory of the process that forked it until exec, so the rusage of a child of a large
// test process says only "at most this much" — then the peak read from /proc while it ran.
func (p *proc) wait(t *testing.T, d time.Duration) (int, int64) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("still running after %s; stderr: %.500s", d, p.stderr.String())
	}
	ru, _ := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	require.NotNil(t, ru)
	rss := ru.Maxrss * 1024
	if rss <= p.parentHWM {
		rss = p.sampledHWM.Load()
	}
	return p.cmd.ProcessState.ExitCode(), rss
}

// vmHWM is a process's peak RSS in bytes (0 once it is gone).
func vmHWM(pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			_, _ = fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return kb * 1024
		}
	}
	return 0
}

// blockedIn waits until one of the process's threads sits in the system call nr (from
// /proc/PID/task/*/syscall): the command has reached the point where it blocks.
func (p *proc) blockedIn(t *testing.T, nr int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", p.cmd.Process.Pid))
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			if f := strings.Fields(string(b)); len(f) > 0 && f[0] == fmt.Sprint(nr) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the process never blocked in system call %d; stderr: %s", nr, p.stderr.String())
}

// TestSignalsStopReading: SIGTERM and SIGINT stop a command blocked on input — a FIFO without
// a writer (blocked in open(2)), a standard input nobody writes (in read(2)) — within two
// seconds, exit 143 and 130.
func TestSignalsStopReading(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	noDrivers := filepath.Join(t.TempDir(), "drivers.yaml")
	require.NoError(t, os.WriteFile(noDrivers, nil, 0o600))
	tests := []struct {
		name    string
		args    []string
		stdin   bool // a pipe nobody writes, else none
		blocked int  // the system call it waits in
		sig     syscall.Signal
		code    int
	}{
		{"render -f FIFO, SIGTERM", []string{"render", "-f", fifo}, false, syscall.SYS_OPENAT, syscall.SIGTERM, 143},
		{"render -f FIFO, SIGINT", []string{"render", "-f", fifo}, false, syscall.SYS_OPENAT, syscall.SIGINT, 130},
		{"render --set-file FIFO", []string{"render", "--set-file", "driver.image.tag=" + fifo}, false, syscall.SYS_OPENAT, syscall.SIGTERM, 143},
		{"check --nodes FIFO", []string{"check", "-f", exampleValues, "--nodes", fifo}, false, syscall.SYS_OPENAT, syscall.SIGTERM, 143},
		{"plan --pods FIFO", []string{"plan", "--nodes", "../../examples/nodes.yaml", "--pods", fifo}, false, syscall.SYS_OPENAT, syscall.SIGINT, 130},
		{"review -f FIFO", []string{"review", "-f", fifo}, false, syscall.SYS_OPENAT, syscall.SIGTERM, 143},
		{"render -f - with a stalled stdin", []string{"render", "-f", "-"}, true, syscall.SYS_READ, syscall.SIGTERM, 143},
		{"route --nodes - with a stalled stdin", []string{"route", "--drivers", noDrivers, "--nodes", "-"}, true, syscall.SYS_READ, syscall.SIGINT, 130},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdin io.Reader
			if tt.stdin {
				// An operating-system pipe, handed to the process as its standard input, whose
				// write end stays open and silent.
				r, w, err := os.Pipe()
				require.NoError(t, err)
				t.Cleanup(func() { r.Close(); w.Close() })
				stdin = r
			}
			p := start(t, stdin, tt.args...)
			p.blockedIn(t, tt.blocked)
			require.NoError(t, p.cmd.Process.Signal(tt.sig))
			code, _ := p.wait(t, 2*time.Second)
			assert.Equal(t, tt.code, code, p.stderr.String())
			assert.Contains(t, p.stderr.String(), "interrupted by SIG")
			assert.Empty(t, p.stdout.String())
		})
	}
}

// TestEndlessInputs: an input that never ends is read up to its limit: exit 2 (in about a
// second on an idle machine; the deadline leaves room for a loaded one), naming the file, the
// limit and the flag, in bounded memory.
func TestEndlessInputs(t *testing.T) {
	noDrivers := filepath.Join(t.TempDir(), "drivers.yaml")
	require.NoError(t, os.WriteFile(noDrivers, nil, 0o600))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--set-file /dev/zero", []string{"render", "--set-file", "driver.image.tag=/dev/zero"},
			"/dev/zero is larger than the limit of 16Mi (16777216 bytes); raise the limit with --max-values-size"},
		// The YAML parser reads as the file is read, and stops at the first NUL.
		{"-f /dev/zero", []string{"render", "-f", "/dev/zero"}, "failed to parse /dev/zero: error converting YAML to JSON: yaml: control characters are not allowed"},
		{"review -f /dev/zero", []string{"review", "-f", "/dev/zero"}, "/dev/zero is larger than the limit of 7Mi (7340032 bytes), the webhook's"},
		{"--nodes /dev/zero", []string{"route", "--drivers", noDrivers, "--nodes", "/dev/zero"},
			"reading nodes: /dev/zero: a NUL byte at offset 0: not a YAML or JSON file"},
		{"--nodes - without end", []string{"route", "--drivers", noDrivers, "--nodes", "-", "--max-inventory-size", "64Mi"},
			"reading nodes: <stdin> is larger than the limit of 64Mi (67108864 bytes); raise the limit with --max-inventory-size"},
		{"-f - without end", []string{"render", "-f", "-"},
			"reading values: <stdin> is larger than the limit of 16Mi (16777216 bytes); raise the limit with --max-values-size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Standard input: comments without end, written as fast as they are read.
			r, w, err := os.Pipe()
			require.NoError(t, err)
			t.Cleanup(func() { r.Close(); w.Close() })
			go func() {
				line := []byte(strings.Repeat("# endless\n", 1000))
				for {
					if _, err := w.Write(line); err != nil {
						return
					}
				}
			}()
			p := start(t, r, tt.args...)
			code, rss := p.wait(t, 30*time.Second)
			assert.Equal(t, 2, code, p.stderr.String())
			assert.Contains(t, p.stderr.String(), tt.want)
			assert.LessOrEqual(t, rss, int64(300<<20), "peak RSS")
		})
	}
}

// TestLargeValuesFile: a 100 MB values file holding one string is refused at the default
// limit before it is read, and judged in at most five times its size when the limit is raised.
func TestLargeValuesFile(t *testing.T) {
	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse.yaml")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(100<<20))
	require.NoError(t, f.Close())
	p := start(t, nil, "render", "-f", sparse)
	code, rss := p.wait(t, 10*time.Second)
	assert.Equal(t, 2, code)
	assert.Contains(t, p.stderr.String(), sparse+" is larger than the limit of 16Mi")
	assert.LessOrEqual(t, rss, int64(100<<20), "nothing is read")

	if testing.Short() {
		t.Skip("-short: writes and reads a 100 MB file")
	}
	big := filepath.Join(dir, "big.yaml")
	f, err = os.Create(big)
	require.NoError(t, err)
	_, err = f.WriteString("driver:\n  image:\n    tag: \"")
	require.NoError(t, err)
	chunk := []byte(strings.Repeat("a", 1<<20))
	for range 100 {
		_, err = f.Write(chunk)
		require.NoError(t, err)
	}
	_, err = f.WriteString("\"\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	p = start(t, nil, "render", "-f", big, "--max-values-size", "128Mi")
	code, rss = p.wait(t, 2*time.Minute)
	assert.Equal(t, 1, code, p.stderr.String())
	assert.Contains(t, p.stderr.String(), "(104857600 bytes)\": cannot start an OCI image tag")
	assert.Less(t, p.stderr.Len(), 1000)
	assert.LessOrEqual(t, rss, int64(5*(100<<20)), "peak RSS of a 100 MB values file")
	t.Logf("a 100 MB values file: peak RSS %d MiB", rss>>20)
}

// TestHardStopAfterTheGrace: a step that cannot watch the context (parsing a large values
// file) is ended by main one second after the signal, with the signal's exit code.
func TestHardStopAfterTheGrace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: parses a large values file")
	}
	var b strings.Builder
	b.WriteString("driver:\n  annotations:\n")
	for i := range 1_000_000 {
		fmt.Fprintf(&b, "    k%d: v\n", i)
	}
	file := filepath.Join(t.TempDir(), "keys.yaml")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := start(t, nil, "render", "-f", file, "-o", "json")
	// Wait until the parse is under way (its memory grows), then interrupt it.
	for ctx.Err() == nil {
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
		var rss int64
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				_, _ = fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &rss)
			}
		}
		if rss > 100<<10 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := p.wait(t, 2*time.Second)
	assert.Equal(t, 143, code, p.stderr.String())
	assert.Empty(t, p.stdout.String(), "no partial output")
}

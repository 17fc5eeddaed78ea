// Package hostile attacks `driverguard serve` as a separate process behind a real
// kube-apiserver: objects built to exhaust memory, slow and stalled clients. It measures the
// server's memory from /proc (the process's own, not the test's) and asserts the bounds of
// docs/webhook.md. The driverguard binary is built once for the package (DRIVERGUARD_BIN
// names another one, e.g. to measure an older build; its failures are then expected).
package hostile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/test/controlplane"
)

var suite struct {
	plane    *controlplane.Plane
	setupErr error
	log      *syncBuffer
	bin      string
}

func TestMain(m *testing.M) {
	flag.Parse()
	suite.setupErr = setup()
	code := m.Run()
	if suite.plane != nil {
		if err := suite.plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	if code != 0 && suite.log != nil {
		fmt.Fprintf(os.Stderr, "serve's log:\n%s\n", suite.log.Tail(200))
	}
	os.Exit(code)
}

func setup() error {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	suite.bin = os.Getenv("DRIVERGUARD_BIN")
	if suite.bin == "" {
		dir, err := os.MkdirTemp("", "driverguard-hostile-")
		if err != nil {
			return err
		}
		suite.bin = filepath.Join(dir, "driverguard")
		// Without -race: the bounds are the product's, not the race detector's.
		build := exec.Command("go", "build", "-o", suite.bin, "./cmd/driverguard")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building driverguard: %w\n%s", err, out)
		}
	}
	suite.log = &syncBuffer{}
	suite.plane, err = controlplane.Start(controlplane.Options{
		ServeBinary: suite.bin,
		ServeLog:    suite.log,
		// GOGC and the memory limit as in the chart's pod: serve sets them itself.
		ServeArgs: []string{"--log-level", "info"},
	})
	return err
}

func requireEnv(t *testing.T) {
	t.Helper()
	if suite.setupErr == nil {
		return
	}
	if testing.Short() && errors.Is(suite.setupErr, controlplane.ErrNoAssets) {
		t.Skip(suite.setupErr)
	}
	t.Fatal(suite.setupErr)
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := suite.plane.Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// memory reads a field of /proc/<serve>/status in bytes (VmRSS: now, VmHWM: the peak).
func memory(t *testing.T, field string) int64 {
	t.Helper()
	n, err := readMemory(field)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func readMemory(field string) (int64, error) {
	pid := suite.plane.Serve.Pid
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading serve's memory: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", field, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// peakWatcher samples serve's resident memory every 20 ms until stopped (or the test ends) and
// returns the peak: VmHWM holds the peak since start, which a test that runs after another
// cannot use.
func peakWatcher(t *testing.T) (stop func() int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var peak int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := readMemory("VmRSS"); err == nil && rss > peak {
				peak = rss
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	stop = func() int64 {
		cancel()
		<-done
		return peak
	}
	t.Cleanup(func() { stop() })
	return stop
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// syncBuffer is a goroutine-safe log buffer.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// Tail returns the last n lines.
func (s *syncBuffer) Tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := strings.Split(s.buf.String(), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

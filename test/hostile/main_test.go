// Package hostile attacks `driverguard serve` as a separate process behind a real
// kube-apiserver: objects built to exhaust memory, slow and stalled clients. It measures the
// server's memory from /proc (the process's own, not the test's) and asserts the bounds of
// docs/webhook.md. The driverguard binary is built once for the package (DRIVERGUARD_BIN
// names another one, e.g. to measure an older build; its failures are then expected).
//
// The tests share one API server, but every test that measures memory starts a serve
// process of its own (freshServe): a Go heap grown by one attack is not returned to the
// operating system at once, so a test measured on the process the previous one attacked
// would measure both.
package hostile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/test/controlplane"
)

var suite struct {
	plane    *controlplane.Plane
	setupErr error
	log      *controlplane.LogBuffer
	bin      string
	// serve is the serve process the tests attack: the control plane's until freshServe
	// replaces it.
	serve *serveProcess
}

func TestMain(m *testing.M) {
	flag.Parse()
	suite.setupErr = setup()
	code := m.Run()
	if err := suite.serve.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping serve:", err)
	}
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
	if suite.bin, err = controlplane.DriverguardBinary(root, "hostile"); err != nil {
		return err
	}
	suite.log = &controlplane.LogBuffer{}
	suite.plane, err = controlplane.Start(controlplane.Options{
		ServeBinary: suite.bin,
		ServeLog:    suite.log,
		// GOGC and the memory limit as in the chart's pod: serve sets them itself.
		ServeArgs: serveArgs,
	})
	if err != nil {
		return err
	}
	suite.serve = &serveProcess{proc: suite.plane.Serve}
	return nil
}

// serveArgs are serve's own flags besides those that point it at the control plane.
var serveArgs = []string{"--log-level", "info"}

// serveProcess is one `driverguard serve` process.
type serveProcess struct {
	proc *os.Process
	// exited is closed when the process has exited; nil when the control plane started it
	// (and waits for it).
	exited chan struct{}
	dir    string // its kubeconfig's directory, removed once it exited
}

// stop ends the process with SIGTERM (SIGKILL after 30 s) and waits until it has exited.
func (s *serveProcess) stop() error {
	if s == nil || s.proc == nil {
		return nil
	}
	defer os.RemoveAll(s.dir)
	if err := s.proc.Signal(syscall.SIGTERM); errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for !s.done() {
		if time.Now().After(deadline) {
			_ = s.proc.Kill()
			deadline = time.Now().Add(30 * time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// done reports whether the process has exited (and was reaped, by whoever started it).
func (s *serveProcess) done() bool {
	if s.exited != nil {
		select {
		case <-s.exited:
			return true
		default:
			return false
		}
	}
	return errors.Is(s.proc.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// freshServe replaces the serve process by a new one on the same addresses, certificates
// and flags as the control plane's, and waits until it is ready: a test that measures
// serve's memory measures a process no other test has grown. The API server is the suite's.
func freshServe(t *testing.T) {
	t.Helper()
	if err := suite.serve.stop(); err != nil {
		t.Fatal(err)
	}
	s, err := startServe()
	if err != nil {
		t.Fatal(err)
	}
	suite.serve = s
}

// startServe starts `driverguard serve` as the control plane does (test/controlplane) and
// waits up to 60 s for it to be ready.
func startServe() (*serveProcess, error) {
	p := suite.plane
	dir, err := os.MkdirTemp("", "driverguard-hostile-serve-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(p.Env, envtest.User{Name: "driverguard-hostile-serve", Groups: []string{"system:masters"}}, kubeconfig); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	wio := &p.Env.WebhookInstallOptions
	args := append([]string{"serve", "--kubeconfig", kubeconfig,
		"--host", wio.LocalServingHost, "--port", strconv.Itoa(wio.LocalServingPort), "--cert-dir", wio.LocalServingCertDir,
		"--health-addr", p.HealthAddr, "--metrics-addr", p.MetricsAddr, "--shutdown-delay", "0s", "--log-format", "text"},
		serveArgs...)
	cmd := exec.Command(suite.bin, args...)
	cmd.Stdout, cmd.Stderr = suite.log, suite.log
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", suite.bin, err), os.RemoveAll(dir))
	}
	s := &serveProcess{proc: cmd.Process, exited: make(chan struct{}), dir: dir}
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(s.exited)
	}()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if s.done() {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("serve exited before it was ready: %w", waitErr)
		}
		if resp, err := http.Get("http://" + p.HealthAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(errors.New("serve was not ready within 60s"), s.stop())
		}
	}
}

func requireEnv(t *testing.T) { controlplane.RequireSetup(t, suite.setupErr) }

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
	pid := suite.serve.proc.Pid
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

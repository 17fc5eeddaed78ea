package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RequireSetup fails the test when the suite's control plane did not start (setupErr), or
// skips it under -short when the binaries are missing (ErrNoAssets).
func RequireSetup(t testing.TB, setupErr error) {
	t.Helper()
	if setupErr == nil {
		return
	}
	if testing.Short() && errors.Is(setupErr, ErrNoAssets) {
		t.Skip(setupErr)
	}
	t.Fatal(setupErr)
}

// FreePort returns a free TCP port on ip (nil: loopback).
func FreePort(t testing.TB, ip net.IP) int {
	t.Helper()
	if ip == nil {
		ip = net.IPv4(127, 0, 0, 1)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// LogBuffer is a goroutine-safe buffer for a process's output.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// String returns everything written so far.
func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Tail returns the last n lines.
func (s *LogBuffer) Tail(n int) string {
	lines := strings.Split(s.String(), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// DriverguardBinary builds cmd/driverguard of the module at root into a new temporary
// directory named after suite, as the image builds it (no -race: what the tests measure and
// run is the product, not the race detector; cgo off and -trimpath: the compiled packages are
// shared with test/image's and test/plugin's builds), and returns its path; DRIVERGUARD_BIN,
// when set (make test builds it once), names a binary to use instead.
func DriverguardBinary(root, suite string) (string, error) {
	if bin := os.Getenv("DRIVERGUARD_BIN"); bin != "" {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "driverguard-"+suite+"-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "driverguard")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/driverguard")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building driverguard: %w\n%s", err, out)
	}
	return bin, nil
}

// WriteKubeconfig adds the user u to env (a client certificate the API server trusts) and
// writes its kubeconfig to path.
func WriteKubeconfig(env *envtest.Environment, u envtest.User, path string) error {
	user, err := env.AddUser(u, nil)
	if err != nil {
		return fmt.Errorf("adding user %s: %w", u.Name, err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("the kubeconfig of user %s: %w", u.Name, err)
	}
	return os.WriteFile(path, kc, 0o600)
}

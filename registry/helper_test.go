package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/registry/registrytest"
)

// helper writes docker-credential-<name> into dir: a shell script.
func helper(t *testing.T, dir, name, script string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docker-credential-"+name), []byte("#!/bin/sh\n"+script), 0o755))
}

// TestCredentialHelpers: a credential helper a Docker config names runs within the check's
// deadline — one that hangs is killed with what it started, and the check goes on — is asked
// once per key however many images need it, and what it prints never reaches a message.
func TestCredentialHelpers(t *testing.T) {
	reg := registrytest.New(t, "robot", "s3cret-pa55", true)
	present := reg.Push(t, "rebellions/atom/rbln-driver:1.0")
	other := reg.Push(t, "rebellions/atom/rbln-driver:2.0")
	bin := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	calls := filepath.Join(t.TempDir(), "calls")
	pids := filepath.Join(t.TempDir(), "pids")
	helper(t, bin, "good", fmt.Sprintf("echo call >> %s\nread url\necho '{\"ServerURL\":\"'$url'\",\"Username\":\"robot\",\"Secret\":\"s3cret-pa55\"}'\n", calls))
	helper(t, bin, "hang", fmt.Sprintf("echo $$ >> %s\nsleep 60 &\necho $! >> %s\nwait\n", pids, pids))
	helper(t, bin, "leak", "echo '{\"Secret\":\"LEAKED-SECRET-1\"} oops'\nexit 1\n")
	helper(t, bin, "garbage", "echo 'not json LEAKED-SECRET-2'\n")
	config := func(helpers string) string {
		f := filepath.Join(t.TempDir(), "config.json")
		require.NoError(t, os.WriteFile(f, []byte(helpers), 0o600))
		return f
	}

	k := Keyring{FileSource("--registry-config", config(fmt.Sprintf(`{"credHelpers":{%q:"good"}}`, reg.Host)))}
	got := NewChecker(Options{Timeout: 10 * time.Second}).Check(t.Context(), []string{present, other}, Fixed(k))
	assert.Equal(t, Found, got[present].Status, got[present].Message)
	assert.Equal(t, Found, got[other].Status, got[other].Message)
	n, err := os.ReadFile(calls)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(n), "call"), "asked once for the host (the helper of the file's credHelpers), not per image")

	start := time.Now()
	k = Keyring{FileSource("--registry-config", config(fmt.Sprintf(`{"credHelpers":{%q:"hang"}}`, reg.Host)))}
	got = NewChecker(Options{Timeout: time.Second}).Check(t.Context(), []string{present}, Fixed(k))
	assert.Less(t, time.Since(start), 5*time.Second, "the deadline holds")
	assert.Equal(t, Warning, got[present].Status)
	assert.Contains(t, got[present].Message, "docker-credential-hang did not answer within the check's deadline")
	data, err := os.ReadFile(pids)
	require.NoError(t, err)
	for _, line := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(line)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 5*time.Second, 50*time.Millisecond,
			"process %d of the helper outlived the check", pid)
	}

	for _, name := range []string{"leak", "garbage", "missing"} {
		k = Keyring{FileSource("--registry-config", config(fmt.Sprintf(`{"credsStore":%q}`, name)))}
		got = NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{present}, Fixed(k))
		assert.Equal(t, Warning, got[present].Status, name)
		assert.Contains(t, got[present].Message, "docker-credential-"+name, name)
		leaks(t, got, "LEAKED-SECRET-1", "LEAKED-SECRET-2")
	}
}

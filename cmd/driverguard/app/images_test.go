package app

import (
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestPreviewCheckImages runs `preview --check-images` against an in-process OCI registry on
// loopback that serves the image of one pool and not the other: only the missing one fails,
// naming the exact path.
func TestPreviewCheckImages(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	present := host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"
	push(t, present)

	dir := t.TempDir()
	values := filepath.Join(dir, "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte("driver:\n  image:\n    registry: "+host+"\n"), 0o600))
	nodes := filepath.Join(dir, "nodes.yaml")
	require.NoError(t, os.WriteFile(nodes, []byte(twoPoolNodes), 0o600))

	r := run(t, "", "preview", "-f", values, "--nodes", nodes, "--check-images", "-o", "json")
	require.Equal(t, ExitInvalid, r.code, "a missing image fails the pool: exit 1; %s", r.stderr)
	var rep struct {
		Nodes struct {
			Routing struct {
				Pools []struct{ Name, Image, Reason, Detail string }
			}
			Images []struct{ Image, Status string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	status := map[string]string{}
	for _, i := range rep.Nodes.Images {
		status[i.Image] = i.Status
	}
	missing := host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-45-generic-ubuntu24.04"
	assert.Equal(t, map[string]string{present: "Found", missing: "NotFound"}, status)
	reasons := map[string]string{}
	for _, p := range rep.Nodes.Routing.Pools {
		reasons[p.Name] = p.Reason
		if p.Reason != "" {
			assert.Contains(t, p.Detail, missing, "the failure names the exact path")
		}
	}
	assert.Equal(t, map[string]string{"atom-ubuntu22.04-6.8.0-90-generic": "", "atom-ubuntu24.04-6.8.0-45-generic": "DriverImageNotFound"}, reasons)

	assert.Contains(t, r.stdout, `"passed": false`, "the preview's own verdict agrees with its exit code")
	table := run(t, "", "preview", "-f", values, "--nodes", nodes, "--check-images")
	require.Equal(t, ExitInvalid, table.code, table.stderr)
	assert.Contains(t, table.stdout, "FAILED: 1 image missing from its registry")
	assert.Contains(t, table.stdout, "DriverImageNotFound")
	assert.Contains(t, table.stdout, missing+": NotFound")
}

// notVerifiedRE is the statement every text output makes of images no registry answered for.
var notVerifiedRE = regexp.MustCompile(`(\d+) images? checked: 0 found, 0 missing, (\d+) NOT VERIFIED \((\d+) (unreachable|timeout)\)`)

// imageCheckIn finds the "imageCheck" object anywhere in a JSON document.
func imageCheckIn(doc any) (map[string]any, bool) {
	switch v := doc.(type) {
	case map[string]any:
		if ic, ok := v["imageCheck"].(map[string]any); ok {
			return ic, true
		}
		for _, e := range v {
			if ic, ok := imageCheckIn(e); ok {
				return ic, true
			}
		}
	case []any:
		for _, e := range v {
			if ic, ok := imageCheckIn(e); ok {
				return ic, true
			}
		}
	}
	return nil, false
}

// assertNotVerified asserts that out says that every image was not verified, for why: in
// JSON (or YAML) an imageCheck object, in text the one-line statement.
func assertNotVerified(t *testing.T, out, why string) {
	t.Helper()
	var doc any
	if err := yaml.Unmarshal([]byte(out), &doc); err == nil {
		if ic, ok := imageCheckIn(doc); ok {
			assert.Equal(t, true, ic["checked"])
			assert.EqualValues(t, 0, ic["found"])
			assert.EqualValues(t, 0, ic["missing"])
			assert.Positive(t, ic["notVerified"])
			assert.Equal(t, ic["images"], ic["notVerified"])
			assert.Equal(t, map[string]any{why: ic["notVerified"]}, ic["notVerifiedBy"])
			return
		}
	}
	m := notVerifiedRE.FindStringSubmatch(out)
	require.NotNil(t, m, "no statement that the images were not verified in:\n%s", out)
	assert.Equal(t, m[1], m[2], "every image")
	assert.Equal(t, m[2], m[3], "all %s", why)
	assert.Equal(t, why, m[4])
	assert.NotContains(t, out, "all found")
}

// TestImagesNotVerified: with the registry unreachable (a closed port on loopback) or silent (a
// listener that never answers), every command with --check-images says, in every output
// format, how many images it checked and that none was verified, and why — never the output
// of "all present". The deadline holds for the silent registry.
func TestImagesNotVerified(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		return addr
	}()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { silent.Close() })
	go func() { // accept, never answer
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()

	for _, reg := range []struct{ why, host string }{{"unreachable", closed}, {"timeout", silent.Addr().String()}} {
		t.Run(reg.why, func(t *testing.T) {
			dir := t.TempDir()
			values := filepath.Join(dir, "registry.yaml")
			require.NoError(t, os.WriteFile(values, []byte("driver:\n  image:\n    registry: "+reg.host+"\n  smd:\n    image:\n      registry: "+reg.host+"\n"), 0o600))
			rendered := run(t, "", "render", "-f", exampleValues, "-f", values)
			require.Equal(t, ExitOK, rendered.code, rendered.stderr)
			drivers := filepath.Join(dir, "drivers.yaml")
			require.NoError(t, os.WriteFile(drivers, []byte(rendered.stdout), 0o600))
			check := []string{"--check-images", "--image-timeout", "300ms"}

			for _, cmd := range []struct {
				args    []string
				formats []string
			}{
				{[]string{"route", "--drivers", drivers, "--nodes", exampleNodes}, []string{"table", "json", "yaml"}},
				{[]string{"preview", "-f", exampleValues, "-f", values, "--nodes", exampleNodes, "--allow-driver-loss"}, []string{"table", "json", "yaml"}},
				{[]string{"plan", "-f", exampleValues, "-f", values, "--nodes", exampleNodes, "--drivers", drivers}, []string{"table", "json", "markdown"}},
				{[]string{"audit", "--nodes", exampleNodes, "--drivers", drivers}, []string{"table", "json", "yaml", "junit", "sarif"}},
			} {
				for _, format := range cmd.formats {
					t.Run(cmd.args[0]+"/"+format, func(t *testing.T) {
						start := time.Now()
						r := run(t, "", slices.Concat(cmd.args, check, []string{"-o", format})...)
						assert.Less(t, time.Since(start), 20*time.Second, "the deadline holds")
						require.Contains(t, []int{ExitOK, ExitInvalid}, r.code, r.stderr)
						assertNotVerified(t, r.stdout, reg.why)
					})
				}
			}
		})
	}
}

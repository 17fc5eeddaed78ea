package app

import (
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, os.WriteFile(nodes, []byte(`apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: present
    labels: {rebellions.ai/npu.deploy.driver: "true", rebellions.ai/npu.family: atom, feature.node.kubernetes.io/system-os_release.ID: ubuntu, feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04", feature.node.kubernetes.io/kernel-version.full: 6.8.0-90-generic}
- apiVersion: v1
  kind: Node
  metadata:
    name: missing
    labels: {rebellions.ai/npu.deploy.driver: "true", rebellions.ai/npu.family: atom, feature.node.kubernetes.io/system-os_release.ID: ubuntu, feature.node.kubernetes.io/system-os_release.VERSION_ID: "24.04", feature.node.kubernetes.io/kernel-version.full: 6.8.0-45-generic}
`), 0o600))

	r := run(t, "", "preview", "-f", values, "--nodes", nodes, "--check-images", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
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

	table := run(t, "", "preview", "-f", values, "--nodes", nodes, "--check-images")
	require.Equal(t, ExitOK, table.code, table.stderr)
	assert.Contains(t, table.stdout, "DriverImageNotFound")
	assert.Contains(t, table.stdout, missing+": NotFound")
}

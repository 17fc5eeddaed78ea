package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/driverguard/driverguard/cluster"
)

const (
	exampleValues    = "../examples/multi-driver.yaml"
	exampleNodes     = "../examples/nodes.yaml"
	exampleDrivers   = "../examples/drivers.yaml"
	exampleWorkloads = "../examples/workloads.yaml"
)

func write(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestFromFiles(t *testing.T) {
	renderedWithoutDrivers := write(t, "apiVersion: rebellions.ai/v1alpha1\nkind: RBLNClusterPolicy\nmetadata: {name: rbln-cluster-policy}\n")
	for name, tc := range map[string]struct {
		files     cluster.Files
		stdin     string
		opts      cluster.ReadOptions
		nodes     int
		drivers   int
		policy    string
		workloads bool
		err       string
	}{
		"nothing": {},
		"the examples": {
			files: cluster.Files{Nodes: exampleNodes, Drivers: exampleDrivers, Workloads: exampleWorkloads},
			nodes: 12, drivers: 2, workloads: true,
		},
		"nodes from stdin": {files: cluster.Files{Nodes: "-"}, stdin: mustRead(t, exampleNodes), nodes: 12},
		"a cluster policy": {files: cluster.Files{ClusterPolicy: renderedWithoutDrivers}, policy: "rbln-cluster-policy"},
		"render's output without drivers holds none": {
			files: cluster.Files{Drivers: renderedWithoutDrivers},
		},
		"an empty file holds none": {files: cluster.Files{Nodes: write(t, "")}},
		"the wrong kind": {
			files: cluster.Files{Nodes: exampleDrivers},
			err:   "--nodes ../examples/drivers.yaml holds",
		},
		"the wrong kind, with the command that writes one": {
			files: cluster.Files{Workloads: exampleNodes},
			err:   "give it 'kubectl get pods,pdb,rs,deploy,sts -A -o json' output",
		},
		"not a document": {files: cluster.Files{Nodes: exampleValues}, err: "reading nodes: "},
		"a missing file": {files: cluster.Files{Drivers: "/nonexistent.yaml"}, err: "reading drivers: "},
		"over the limit, with the flag that raises it": {
			files: cluster.Files{Nodes: exampleNodes}, opts: cluster.ReadOptions{MaxBytes: 100, LimitFlag: "max-inventory-size"},
			err: "; raise the limit with --max-inventory-size",
		},
	} {
		t.Run(name, func(t *testing.T) {
			tc.opts.Stdin = strings.NewReader(tc.stdin)
			s, err := cluster.FromFiles(t.Context(), tc.files, tc.opts)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, s.Nodes(), tc.nodes)
			assert.Len(t, s.Drivers(), tc.drivers)
			got := ""
			if cp := s.ClusterPolicy(); cp != nil {
				got = cp.Name
			}
			assert.Equal(t, tc.policy, got)
			assert.Equal(t, tc.workloads, s.Workloads() != nil)
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestReadLiveUnreachable: a cluster that does not answer is a *LiveError naming the first
// list.
func TestReadLiveUnreachable(t *testing.T) {
	_, err := cluster.ReadLive(t.Context(), &rest.Config{Host: "https://127.0.0.1:1"}, cluster.LiveOptions{UserAgent: "test", Timeout: 5 * time.Second})
	var le *cluster.LiveError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "listing", le.Op)
	assert.Equal(t, "RBLNDrivers", le.Resource)
	assert.Equal(t, "*v1alpha1.RBLNDriverList", le.ListType)
	assert.True(t, strings.HasPrefix(err.Error(), "listing RBLNDrivers: "), err.Error())
	assert.False(t, errors.Is(err, context.DeadlineExceeded), "refused at once: %v", err)
}

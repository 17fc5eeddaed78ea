package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/test/controlplane"
	"github.com/driverguard/driverguard/webhook"
)

var env struct {
	root, bin string
	err       error
}

func TestMain(m *testing.M) {
	env.root, env.err = controlplane.RepoRoot()
	if env.err == nil {
		env.bin, env.err = controlplane.DriverguardBinary(env.root, "conformance")
	}
	os.Exit(m.Run())
}

// expected is a cluster's expected.yaml (hack/opcorpus).
type expected struct {
	RDS      bool     `json:"rds"`
	Excluded []string `json:"excluded"`
	Nodes    []struct {
		Name, Owner, Pool, DaemonSet, Image, Reason string
	} `json:"nodes"`
	Pools []struct {
		Name, Owner, DaemonSet, Image string
		Nodes                         []string
	} `json:"pools"`
	SMD []struct {
		Resource, DaemonSet, Image string
	} `json:"smd"`
}

type corpusCluster struct {
	name, dir string
	exp       expected
}

func clusters(t *testing.T) []corpusCluster {
	t.Helper()
	require.NoError(t, env.err, "setting up: building driverguard (or set DRIVERGUARD_BIN)")
	dirs, err := filepath.Glob(filepath.Join(env.root, "test", "conformance", "testdata", "clusters", "*"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(dirs), 10, "the corpus: go run ./hack/opcorpus")
	var out []corpusCluster
	total := 0
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "expected.yaml"))
		require.NoError(t, err)
		c := corpusCluster{name: filepath.Base(d), dir: d}
		require.NoError(t, yaml.Unmarshal(bytes.TrimPrefix(raw[bytes.IndexByte(raw, '\n')+1:], []byte("---\n")), &c.exp))
		total += len(c.exp.Nodes)
		out = append(out, c)
	}
	require.GreaterOrEqual(t, total, 600, "the corpus covers at least 600 nodes")
	return out
}

func (c corpusCluster) file(name string) string { return filepath.Join(c.dir, name) }

// run runs the driverguard binary and decodes its JSON standard output into v.
func run(t *testing.T, v any, args ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); err != nil {
		require.ErrorAs(t, err, &ee, "%s: %s", strings.Join(args, " "), stderr.String())
		code = ee.ExitCode()
	}
	require.Less(t, code, 2, "%s: %s", strings.Join(args, " "), stderr.String())
	require.NoError(t, json.Unmarshal(stdout.Bytes(), v), "%s: %s", strings.Join(args, " "), stdout.String())
	return code
}

// routed is the part of a routing result (route -o json, preview's nodes.routing) compared.
type routed struct {
	Nodes []struct {
		Name, Owner, Pool, Image, Reason string
	} `json:"nodes"`
	Invalid []struct{ Resource, Reason string } `json:"invalid"`
	Pools   []struct {
		Name, DaemonSet, Owner, Image string
		Nodes                         []string
	} `json:"pools"`
}

func (c corpusCluster) requireRouting(t *testing.T, front string, got routed) {
	t.Helper()
	require.Len(t, got.Nodes, len(c.exp.Nodes), "%s %s", front, c.name)
	for i, want := range c.exp.Nodes {
		n := got.Nodes[i]
		require.Equal(t, want.Name, n.Name)
		assert.Equal(t, []string{want.Owner, want.Pool, want.Image, want.Reason}, []string{n.Owner, n.Pool, n.Image, n.Reason},
			"%s, cluster %s, node %s: owner, pool, image, reason", front, c.name, n.Name)
	}
	require.Len(t, got.Pools, len(c.exp.Pools), "%s %s: pools", front, c.name)
	for i, want := range c.exp.Pools {
		p := got.Pools[i]
		assert.Equal(t, want.Name, p.Name, "%s %s", front, c.name)
		assert.Equal(t, want.DaemonSet, p.DaemonSet, "%s %s: the DaemonSet of pool %s is <CR>-<pool>", front, c.name, p.Name)
		assert.Equal(t, operator.DriverDaemonSet(p.Owner, p.Name), p.DaemonSet)
		assert.Equal(t, []string{want.Owner, want.Image}, []string{p.Owner, p.Image}, "%s %s pool %s", front, c.name, p.Name)
		assert.Equal(t, want.Nodes, p.Nodes, "%s %s pool %s", front, c.name, p.Name)
	}
	var excluded []string
	for _, inv := range got.Invalid {
		excluded = append(excluded, inv.Resource)
	}
	assert.ElementsMatch(t, c.exp.Excluded, excluded, "%s %s: the drivers the operator leaves out", front, c.name)
}

// TestRoute: `route -o json` gives every node the operator's owner, pool, image and reason, and
// every pool the operator's DaemonSet.
func TestRoute(t *testing.T) {
	for _, c := range clusters(t) {
		var got routed
		run(t, &got, "route", "--drivers", c.file("drivers.yaml"), "--nodes", c.file("nodes.yaml"), "--cluster-policy", c.file("cluster-policy.yaml"), "-o", "json")
		c.requireRouting(t, "route", got)
	}
}

// TestPreview: `preview` of values that render the same drivers routes the cluster as the
// operator does (the chart renders no spec.rds: Helm keeps the cluster's).
func TestPreview(t *testing.T) {
	for _, c := range clusters(t) {
		var got struct {
			Nodes struct {
				Routing routed `json:"routing"`
			} `json:"nodes"`
		}
		run(t, &got, "preview", "-f", c.file("values.yaml"), "--drivers", c.file("drivers.yaml"), "--nodes", c.file("nodes.yaml"),
			"--cluster-policy", c.file("cluster-policy.yaml"), "--allow-driver-loss", "-o", "json")
		c.requireRouting(t, "preview", got.Nodes.Routing)
	}
}

// TestPlan: `plan` without values is the operator's next reconcile: every node's owner and
// pool, and the nodes that left its scope with an owner label lose their driver.
func TestPlan(t *testing.T) {
	for _, c := range clusters(t) {
		var got struct {
			Nodes []struct {
				Name, Action, OldOwner, NewOwner, Pool, Reason string
			} `json:"nodes"`
		}
		run(t, &got, "plan", "--drivers", c.file("drivers.yaml"), "--nodes", c.file("nodes.yaml"), "--cluster-policy", c.file("cluster-policy.yaml"), "-o", "json")
		labels := nodeLabels(t, c)
		require.Len(t, got.Nodes, len(c.exp.Nodes))
		for i, want := range c.exp.Nodes {
			n := got.Nodes[i]
			require.Equal(t, want.Name, n.Name)
			assert.Equal(t, []string{want.Owner, want.Pool}, []string{n.NewOwner, n.Pool}, "plan, cluster %s, node %s", c.name, n.Name)
			leftScope := want.Reason == "OutOfScope" && labels[n.Name][operator.LabelOwner] != ""
			if leftScope {
				assert.Equal(t, "lose-driver", n.Action, "plan, cluster %s, node %s left the scope with an owner label", c.name, n.Name)
				assert.Equal(t, labels[n.Name][operator.LabelOwner], n.OldOwner)
			} else {
				assert.Equal(t, "none", n.Action, "plan, cluster %s, node %s", c.name, n.Name)
				if want.Reason != "OutOfScope" {
					assert.Equal(t, want.Reason, n.Reason, "plan, cluster %s, node %s", c.name, n.Name)
				}
			}
		}
	}
}

// TestAudit: the audit's drift names, per RBLNDriver, the nodes the operator puts in no pool
// (NFDLabelMissing, DriverFamilyLabelMissing), those its pool's DaemonSet skips
// (PoolNameCollision), and every node whose owner label the operator rewrites.
func TestAudit(t *testing.T) {
	for _, c := range clusters(t) {
		var got struct {
			Findings []struct {
				Rule   string
				Object struct{ Kind, Name string }
				Nodes  []string
				Count  int
			} `json:"findings"`
		}
		run(t, &got, "audit", "--drivers", c.file("drivers.yaml"), "--nodes", c.file("nodes.yaml"), "--cluster-policy", c.file("cluster-policy.yaml"), "-o", "json")
		labels := nodeLabels(t, c)
		want := map[[2]string][]string{} // (rule, driver) -> nodes
		for _, n := range c.exp.Nodes {
			switch n.Reason {
			case "NFDLabelMissing", "DriverFamilyLabelMissing", "PoolNameCollision":
				want[[2]string{n.Reason, n.Owner}] = append(want[[2]string{n.Reason, n.Owner}], n.Name)
			}
			if cur := labels[n.Name][operator.LabelOwner]; cur != n.Owner {
				driver := n.Owner
				if driver == "" {
					driver = cur
				}
				want[[2]string{"StaleOwnerLabel", driver}] = append(want[[2]string{"StaleOwnerLabel", driver}], n.Name)
			}
		}
		seen := map[[2]string]bool{}
		for _, f := range got.Findings {
			k := [2]string{f.Rule, f.Object.Name}
			nodes, ok := want[k]
			if !ok {
				if slices.Contains([]string{"NFDLabelMissing", "DriverFamilyLabelMissing", "PoolNameCollision"}, f.Rule) {
					t.Errorf("audit, cluster %s: %s on %s %s, which the operator does not do", c.name, f.Rule, f.Object.Kind, f.Object.Name)
				}
				continue
			}
			if f.Object.Kind != "RBLNDriver" {
				// drift no driver owns goes to the cluster report
				continue
			}
			seen[k] = true
			count := f.Count
			if count == 0 {
				count = len(f.Nodes)
			}
			assert.Equal(t, len(nodes), count, "audit, cluster %s: %s of %s", c.name, f.Rule, f.Object.Name)
			assert.Subset(t, nodes, f.Nodes, "audit, cluster %s: %s of %s", c.name, f.Rule, f.Object.Name)
		}
		for k := range want {
			if k[0] != "StaleOwnerLabel" || k[1] != "" {
				if _, known := driverNames(c)[k[1]]; known {
					assert.True(t, seen[k], "audit, cluster %s: no %s finding on RBLNDriver %s (nodes %v)", c.name, k[0], k[1], want[k])
				}
			}
		}
	}
}

// TestWebhookLeavesOperatorDaemonSetsAlone: every DaemonSet the operator renders for the
// cluster (driver pools, RDS pools with their anti-affinity twins, RSMD) is admitted unpatched
// and without a warning; one whose image lost its family path, or an RSMD image of another tag,
// gets exactly the operator's image back, with a warning.
func TestWebhookLeavesOperatorDaemonSetsAlone(t *testing.T) {
	for _, c := range clusters(t) {
		hooks := webhookFor(t, c)
		dss := daemonSets(t, c)
		require.NotEmpty(t, dss, c.name)
		for _, ds := range dss {
			kind, cr, pool := operator.Recognize(ds.Labels)
			require.NotEqual(t, operator.NotOperator, kind, "%s: %s is recognised as the operator's", c.name, ds.Name)
			if kind == operator.DriverKind {
				require.Equal(t, operator.DriverDaemonSet(cr, pool), ds.Name)
			}
			resp := review(t, hooks, ds)
			require.True(t, resp.Allowed, "%s %s: %+v", c.name, ds.Name, resp.Result)
			assert.Nil(t, resp.Patch, "%s %s: an operator-rendered DaemonSet is not patched", c.name, ds.Name)
			assert.Empty(t, resp.Warnings, "%s %s", c.name, ds.Name)

			want := ds.Spec.Template.Spec.Containers[0].Image
			drifted := ds.DeepCopy()
			if kind == operator.DriverKind {
				// an operator that predates family paths: <registry>/<org>/<name>:<tag>
				drifted.Spec.Template.Spec.Containers[0].Image = strings.Replace(want, "/"+ds.Spec.Template.Spec.NodeSelector[operator.LabelFamily]+"/", "/", 1)
			} else {
				drifted.Spec.Template.Spec.Containers[0].Image = want[:strings.LastIndexByte(want, ':')] + ":0.0.1"
			}
			resp = review(t, hooks, drifted)
			require.True(t, resp.Allowed, "%s %s", c.name, ds.Name)
			require.Len(t, resp.Warnings, 1, "%s %s: %q", c.name, ds.Name, resp.Warnings)
			assert.Contains(t, resp.Warnings[0], fmt.Sprintf("set the image of container %s to %q", ds.Spec.Template.Spec.Containers[0].Name, want))
			var ops []struct{ Op, Path, Value string }
			require.NoError(t, json.Unmarshal(resp.Patch, &ops))
			assert.Equal(t, []struct{ Op, Path, Value string }{{"replace", "/spec/template/spec/containers/0/image", want}}, ops, "%s %s", c.name, ds.Name)
		}
	}
}

func review(t *testing.T, hooks *webhook.Webhooks, ds *appsv1.DaemonSet) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, err := json.Marshal(ds)
	require.NoError(t, err)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "00000000-0000-4000-8000-000000000001", Kind: metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"},
			Resource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
			Name:     ds.Name, Namespace: ds.Namespace, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
		},
	})
	require.NoError(t, err)
	got, err := hooks.Review(t.Context(), body)
	require.NoError(t, err)
	return got.Response
}

func webhookFor(t *testing.T, c corpusCluster) *webhook.Webhooks {
	t.Helper()
	st, err := cluster.FromFiles(t.Context(), cluster.Files{Nodes: c.file("nodes.yaml"), Drivers: c.file("drivers.yaml"), ClusterPolicy: c.file("cluster-policy.yaml")}, cluster.ReadOptions{})
	require.NoError(t, err)
	return webhook.New(cluster.NewStatic(st), webhook.Options{})
}

func daemonSets(t *testing.T, c corpusCluster) []*appsv1.DaemonSet {
	t.Helper()
	raw, err := os.ReadFile(c.file("daemonsets.yaml"))
	require.NoError(t, err)
	var out []*appsv1.DaemonSet
	for _, doc := range strings.Split(string(raw), "\n---\n")[1:] {
		var ds appsv1.DaemonSet
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &ds))
		out = append(out, &ds)
	}
	return out
}

func nodeLabels(t *testing.T, c corpusCluster) map[string]map[string]string {
	t.Helper()
	nodes, err := cluster.ReadNodes(t.Context(), c.file("nodes.yaml"), cluster.ReadOptions{})
	require.NoError(t, err)
	out := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		out[n.Name] = n.Labels
	}
	return out
}

func driverNames(c corpusCluster) map[string]bool {
	names := map[string]bool{}
	for _, p := range c.exp.Pools {
		names[p.Owner] = true
	}
	for _, n := range c.exp.Nodes {
		if n.Owner != "" {
			names[n.Owner] = true
		}
	}
	return names
}

// TestCorpusIsTheGeneratorsOutput: the committed corpus is what hack/opcorpus writes, so the
// rules the script states are the rules the corpus holds.
func TestCorpusIsTheGeneratorsOutput(t *testing.T) {
	require.NoError(t, env.err)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/opcorpus", "-out", out)
	cmd.Dir = env.root
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	committed := filepath.Join(env.root, "test", "conformance", "testdata", "clusters")
	files, err := filepath.Glob(filepath.Join(out, "clusters", "*", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		rel, err := filepath.Rel(filepath.Join(out, "clusters"), f)
		require.NoError(t, err)
		want, err := os.ReadFile(f)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(committed, rel))
		require.NoError(t, err, "run: go run ./hack/opcorpus")
		require.Equal(t, string(want), string(got), "%s differs from hack/opcorpus's output; run: go run ./hack/opcorpus", rel)
	}
	have, err := filepath.Glob(filepath.Join(committed, "*", "*.yaml"))
	require.NoError(t, err)
	assert.Len(t, have, len(files), "files in the corpus that hack/opcorpus does not write")
}

package action_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/finding"
)

const (
	exampleValues    = "../examples/multi-driver.yaml"
	exampleRollout   = "../examples/rollout.yaml"
	exampleNodes     = "../examples/nodes.yaml"
	exampleDrivers   = "../examples/drivers.yaml"
	exampleWorkloads = "../examples/workloads.yaml"
	examplePolicy    = "../docs/examples/policy"
)

// config is a Configuration whose standard input holds stdin.
func config(stdin string) *action.Configuration {
	return &action.Configuration{Stdin: strings.NewReader(stdin)}
}

// writeFile writes content to a file of t's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// tieValues render a canary that ties with the atom instance on the canary nodes.
const tieValues = `driver:
  image: {tag: "3.2.2"}
  instances:
    atom:
      nodeSelector: {rebellions.ai/npu.family: atom}
    canary:
      nodeSelector: {env: canary}
`

func TestRender(t *testing.T) {
	for name, tc := range map[string]struct {
		values  []string
		set     []string
		release string
		drivers []string
		invalid bool   // an *InvalidError (exit 1)
		err     string // another error (exit 2)
	}{
		"the example": {values: []string{exampleValues}, drivers: []string{"rbln-driver", "rbln-driver-atom-canary", "rbln-driver-rebel"}},
		"--set":       {set: []string{"driver.image.tag=3.2.2"}, drivers: []string{"rbln-driver"}},
		"invalid values are rejected, not unusable": {
			set: []string{"driver.image.pullPolicy=Sometimes"}, invalid: true,
		},
		"a release name Helm refuses": {values: []string{exampleValues}, release: "BAD_NAME", err: `--release-name "BAD_NAME"`},
		"a missing file":              {values: []string{"/nonexistent.yaml"}, err: "/nonexistent.yaml"},
		"two inputs on stdin":         {values: []string{"-", "-"}, err: "-f, -f all read standard input"},
	} {
		t.Run(name, func(t *testing.T) {
			job := action.NewRender(config(""))
			job.ValueFiles, job.Values = tc.values, tc.set
			if tc.release != "" {
				job.ReleaseName = tc.release
			}
			r, err := job.Run(t.Context())
			var invalid *action.InvalidError
			switch {
			case tc.invalid:
				require.ErrorAs(t, err, &invalid)
				return
			case tc.err != "":
				require.ErrorContains(t, err, tc.err)
				assert.NotErrorAs(t, err, &invalid)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, d := range r.Drivers {
				names = append(names, d.Name)
			}
			assert.Equal(t, tc.drivers, names)
			manifest, err := action.Manifest(r)
			require.NoError(t, err)
			assert.Contains(t, string(manifest), "kind: RBLNClusterPolicy")
		})
	}
}

func TestCheck(t *testing.T) {
	tie := writeFile(t, "tie.yaml", tieValues)
	for name, tc := range map[string]struct {
		values     []string
		files      cluster.Files
		failOnWarn bool
		policies   []string
		passed     bool
		resources  int
		deleted    []string
		denied     string // a rule that denies some object
		err        string
	}{
		"the example on its nodes":      {values: []string{exampleValues}, files: cluster.Files{Nodes: exampleNodes}, passed: true, resources: 4},
		"an upgrade of the drivers now": {values: []string{exampleValues}, files: cluster.Files{Nodes: exampleNodes, Drivers: exampleDrivers}, passed: true, resources: 4},
		"an instance removed is deleted": {
			values: []string{exampleRollout}, files: cluster.Files{Nodes: exampleNodes, Drivers: exampleDrivers},
			passed: true, resources: 2, deleted: []string{"rbln-driver-rebel"},
		},
		"--fail-on-warn fails on the loss warning": {
			values: []string{exampleRollout}, files: cluster.Files{Nodes: exampleNodes, Drivers: exampleDrivers}, failOnWarn: true,
			resources: 2, deleted: []string{"rbln-driver-rebel"},
		},
		"a tie on existing nodes is denied":  {values: []string{tie}, files: cluster.Files{Nodes: exampleNodes}, resources: 4, denied: "ConflictingNodeSelector"},
		"nodes that are not nodes":           {values: []string{exampleValues}, files: cluster.Files{Nodes: exampleValues}, err: "reading nodes"},
		"a policy directory that is missing": {values: []string{exampleValues}, policies: []string{"/nonexistent"}, err: "loading policies"},
	} {
		t.Run(name, func(t *testing.T) {
			job := action.NewCheck(config(""))
			job.ValueFiles, job.Cluster, job.FailOnWarn = tc.values, tc.files, tc.failOnWarn
			job.Policy.Dirs = tc.policies
			rep, err := job.Run(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.passed, rep.Passed)
			assert.Len(t, rep.Resources, tc.resources)
			if tc.deleted == nil {
				tc.deleted = []string{}
			}
			assert.Equal(t, tc.deleted, rep.Deleted)
			var denied []string
			for _, f := range rep.Findings {
				if f.Level == finding.Deny {
					denied = append(denied, f.Rule)
				}
			}
			if tc.denied != "" {
				assert.Contains(t, denied, tc.denied)
			} else {
				assert.Empty(t, denied)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes       string
		checkImages bool
		withNodes   bool
		err         string
	}{
		"values alone":                   {},
		"with nodes":                     {nodes: exampleNodes, withNodes: true},
		"--check-images needs the nodes": {checkImages: true, err: "--check-images needs the nodes (--nodes or --live)"},
	} {
		t.Run(name, func(t *testing.T) {
			job := action.NewPreview(config(""))
			job.ValueFiles, job.Cluster.Nodes, job.CheckImages = []string{exampleValues}, tc.nodes, tc.checkImages
			rep, err := job.Run(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, rep.Resources, 3)
			assert.Equal(t, "atom-canary", rep.Resources[1].InstanceKey)
			assert.NotEmpty(t, rep.Resources[1].Inherited, "provenance is kept: the canary inherits fields")
			assert.True(t, rep.Verdict.Passed)
			assert.Equal(t, tc.withNodes, rep.Nodes != nil)
		})
	}
}

func TestRoute(t *testing.T) {
	for name, tc := range map[string]struct {
		drivers, nodes, stdin string
		owners                map[string]string
		err                   string
	}{
		"files":           {drivers: exampleDrivers, nodes: exampleNodes, owners: map[string]string{"npu-rebel-02": "rbln-driver-rebel"}},
		"nodes on stdin":  {drivers: exampleDrivers, nodes: "-", stdin: mustRead(t, exampleNodes), owners: map[string]string{"npu-rebel-02": "rbln-driver-rebel"}},
		"both are needed": {drivers: exampleDrivers, err: "both --drivers and --nodes are required"},
		"one stdin":       {drivers: "-", nodes: "-", err: "--drivers, --nodes all read standard input"},
		"files swapped":   {drivers: exampleNodes, nodes: exampleDrivers, err: "--drivers"},
		"a missing file":  {drivers: "/nonexistent.yaml", nodes: exampleNodes, err: "reading drivers"},
	} {
		t.Run(name, func(t *testing.T) {
			job := action.NewRoute(config(tc.stdin))
			job.Drivers, job.Nodes = tc.drivers, tc.nodes
			res, err := job.Run(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			owners := map[string]string{}
			for _, n := range res.Routing.Nodes {
				owners[n.Name] = n.Owner
			}
			for node, owner := range tc.owners {
				assert.Equal(t, owner, owners[node], node)
			}
			assert.Nil(t, res.Images, "images are checked only when asked")
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestPlan(t *testing.T) {
	files := cluster.Files{Nodes: exampleNodes, Drivers: exampleDrivers, Workloads: exampleWorkloads}
	for name, tc := range map[string]struct {
		values  []string
		files   cluster.Files
		live    bool
		release string
		proceed bool
		drivers map[string]string // name: action
		err     string
	}{
		"no values: no change, the drift": {
			files: files, proceed: true,
			drivers: map[string]string{"rbln-driver": "unchanged", "rbln-driver-rebel": "unchanged"},
		},
		"the canary rollout": {
			values: []string{exampleValues, exampleRollout}, files: files,
			drivers: map[string]string{"rbln-driver": "unchanged", "rbln-driver-atom-canary": "create", "rbln-driver-rebel": "update"},
			proceed: false,
		},
		"live and files":             {files: files, live: true, err: "--live/--kubeconfig reads the cluster"},
		"a release and driver files": {files: files, release: "driverguard", err: "--release reads the release's RBLNDrivers"},
		"workloads that are not":     {files: cluster.Files{Nodes: exampleNodes, Workloads: exampleNodes}, err: "--pods"},
		"no nodes":                   {values: []string{exampleValues}, files: cluster.Files{Drivers: exampleDrivers}, err: "no nodes to plan for"},
	} {
		t.Run(name, func(t *testing.T) {
			job := action.NewPlan(config(""))
			job.ValueFiles, job.Cluster, job.Live.Live, job.Release = tc.values, tc.files, tc.live, tc.release
			res, err := job.Run(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, action.DefaultReleaseName, res.ReleaseName)
			got := map[string]string{}
			for _, d := range res.Plan.Drivers {
				got[d.Name] = d.Action
			}
			assert.Equal(t, tc.drivers, got)
			assert.Equal(t, tc.proceed, res.Plan.Proceed, res.Plan.Reasons)
		})
	}
}

// TestPlanReleaseName: with --release, a --release-name given must name the same release.
func TestPlanReleaseName(t *testing.T) {
	job := action.NewPlan(config(""))
	job.Release, job.ReleaseName, job.ExplicitReleaseName = "one", "two", true
	job.Cluster.Nodes = exampleNodes
	_, err := job.Run(t.Context())
	require.ErrorContains(t, err, `--release-name "two" and --release "one" differ`)
}

func TestPolicyInput(t *testing.T) {
	for name, tc := range map[string]struct {
		name   string
		stream bool
		inputs []string // the objects of the inputs returned (or streamed)
		err    string
	}{
		"every input, collected": {inputs: []string{"rbln-cluster-policy", "rbln-driver", "rbln-driver-atom-canary", "rbln-driver-rebel"}},
		"every input, streamed":  {stream: true, inputs: []string{"rbln-cluster-policy", "rbln-driver", "rbln-driver-atom-canary", "rbln-driver-rebel"}},
		"one object's":           {name: "rbln-driver-atom-canary", inputs: []string{"rbln-driver-atom-canary"}},
		"no such object": {
			name: "nope",
			err:  `no rendered object is named "nope"; the objects are rbln-cluster-policy, rbln-driver, rbln-driver-atom-canary, rbln-driver-rebel`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			job := action.NewPolicyInput(config(""))
			job.ValueFiles, job.Cluster.Nodes, job.Name = []string{exampleValues}, exampleNodes, tc.name
			var streamed []string
			if tc.stream {
				job.OnInput = func(in *action.Input) error {
					streamed = append(streamed, action.InputName(in))
					return nil
				}
			}
			var warned bool
			job.OnRenderWarnings = func([]action.Warning) { warned = true }
			inputs, err := job.Run(t.Context())
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.True(t, warned, "the render warnings are handed over")
			got := streamed
			if !tc.stream {
				for _, in := range inputs {
					got = append(got, action.InputName(in))
				}
			} else {
				assert.Empty(t, inputs)
			}
			assert.Equal(t, tc.inputs, got)
		})
	}
}

// TestPolicyInputStopsAtTheObject: the object asked for is not evaluated, nor anything after
// it — a policy that fails on it still lets its input be printed.
func TestPolicyInputStopsAtTheObject(t *testing.T) {
	failing := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(failing, "p.rego"), []byte(`package driverguard.failing

deny contains msg if {
	input.object.metadata.name == "rbln-driver-atom-canary"
	msg := sprintf("%d", [1 / 0])
}
`), 0o600))
	job := action.NewPolicyInput(config(""))
	job.ValueFiles, job.Policy.Dirs, job.Name = []string{exampleValues}, []string{failing}, "rbln-driver-atom-canary"
	inputs, err := job.Run(t.Context())
	require.NoError(t, err)
	require.Len(t, inputs, 1)
	assert.Equal(t, "rbln-driver-atom-canary", action.InputName(inputs[0]))
}

func TestPolicyData(t *testing.T) {
	for name, tc := range map[string]struct {
		name    string
		drivers int
		err     string
	}{
		"after the release":     {drivers: 3},
		"as the default saw it": {name: "rbln-driver", drivers: 0},
		"as the canary saw it":  {name: "rbln-driver-atom-canary", drivers: 1},
		"no such object":        {name: "nope", err: `no rendered object is named "nope"`},
	} {
		t.Run(name, func(t *testing.T) {
			job := action.NewPolicyData(config(""))
			job.ValueFiles, job.Cluster.Nodes, job.Name = []string{exampleValues}, exampleNodes, tc.name
			doc, err := job.Run(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			view, ok := doc[action.ClusterKey].(map[string]any)
			require.True(t, ok, "the view is under %s: %v", action.ClusterKey, doc)
			assert.Len(t, view["drivers"], tc.drivers)
		})
	}
}

func TestPolicyTestAndList(t *testing.T) {
	run := action.NewPolicyTest(config(""))
	run.Dirs = []string{examplePolicy}
	res, err := run.Run(t.Context())
	require.NoError(t, err)
	assert.Positive(t, res.Yours())
	assert.Zero(t, res.Failed)

	list := action.NewPolicyList(config(""))
	list.Policy = action.Policy{Dirs: []string{examplePolicy}, Disable: []string{"lib.drain_empty_dir"}}
	listed, err := list.Run(t.Context())
	require.NoError(t, err)
	disabled := map[string]bool{}
	for _, p := range listed.Policies {
		disabled[p.Name] = p.Disabled
	}
	assert.True(t, disabled["lib.drain_empty_dir"])
	for _, r := range listed.Rules {
		disabled[r.ID] = r.Disabled
	}
	assert.True(t, disabled["driverguard.lib.drain_empty_dir.warn"])
	assert.Contains(t, disabled, "driverguard.platform.deny")
	assert.Contains(t, disabled, "IdenticalNodeSelector")

	broken := writeFile(t, "x.rego", "package driverguard.x\n\ndeny contains msg if {\n")
	run.Dirs = []string{filepath.Dir(broken)}
	_, err = run.Run(t.Context())
	require.ErrorContains(t, err, "x.rego")
}

func TestReview(t *testing.T) {
	const requests = "../test/testdata/review/requests/"
	for name, tc := range map[string]struct {
		file    string
		allowed bool
		err     string
	}{
		"a driver is allowed":         {file: requests + "driver-create-allowed.json", allowed: true},
		"an empty selector is denied": {file: requests + "driver-create-empty-selector.json"},
		"a new tie is denied":         {file: requests + "driver-update-introduces-tie.json"},
		"-f is required":              {err: "-f is required"},
		"not a file":                  {file: "/nonexistent.json", err: "reading the AdmissionReview"},
	} {
		t.Run(name, func(t *testing.T) {
			job := action.NewReview(config(""))
			job.File = tc.file
			job.Cluster = cluster.Files{Nodes: "../test/testdata/review/nodes.yaml", Drivers: "../test/testdata/review/drivers.yaml",
				ClusterPolicy: "../test/testdata/review/cluster-policy.yaml"}
			review, err := job.Run(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.allowed, review.Response.Allowed)
		})
	}
}

func TestPostRender(t *testing.T) {
	r := action.NewRender(config(""))
	r.ValueFiles = []string{exampleValues}
	rendered, err := r.Run(t.Context())
	require.NoError(t, err)
	manifest, err := action.Manifest(rendered)
	require.NoError(t, err)
	tie := action.NewRender(config(""))
	tie.ValueFiles = []string{writeFile(t, "tie.yaml", strings.ReplaceAll(tieValues, "{env: canary}", "{rebellions.ai/npu.family: atom}"))}
	tied, err := tie.Run(t.Context())
	require.NoError(t, err)
	tieManifest, err := action.Manifest(tied)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		in      string
		live    action.LiveMode
		passed  bool
		against string
		err     string
	}{
		"the example passes":        {in: string(manifest), live: action.LiveFalse, passed: true, against: "the rendered objects alone (--live=false)"},
		"identical selectors fail":  {in: string(tieManifest), live: action.LiveFalse, against: "the rendered objects alone (--live=false)"},
		"another chart's manifests": {in: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", live: action.LiveFalse, passed: true, against: "nothing"},
		"no cluster, auto":          {in: string(manifest), live: action.LiveAuto, passed: true, against: "the rendered objects alone (no cluster configured)"},
		"no cluster, --live true":   {in: string(manifest), live: action.LiveTrue, err: "--live: no cluster to read"},
		"not YAML":                  {in: "{", live: action.LiveFalse, err: "the rendered manifests"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			job := action.NewPostRender(config(tc.in))
			job.Live = tc.live
			res, err := job.Run(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.passed, res.Report.Passed)
			assert.Equal(t, tc.against, res.Against)
			assert.Equal(t, tc.in, string(res.Manifests), "the manifests are passed on as read")
		})
	}
}

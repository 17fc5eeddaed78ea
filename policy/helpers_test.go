package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/webhook/webhooktest"
)

const (
	exampleValues = "../examples/multi-driver.yaml"
	exampleNodes  = "../examples/nodes.yaml"
)

// writeFile writes content to dir/name, creating directories.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// newEngine builds an engine with its own metrics registry.
func newEngine(t *testing.T, opts policy.Options) *policy.Engine {
	t.Helper()
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	e, err := policy.New(t.Context(), opts)
	require.NoError(t, err)
	return e
}

// renderFile renders a values file with the embedded chart.
func renderFile(t testing.TB, values string) *render.Result {
	t.Helper()
	vals, err := render.LoadValues(render.ValuesOptions{ValueFiles: []string{values}})
	require.NoError(t, err)
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	r, err := render.Render(ch, vals, render.Options{})
	require.NoError(t, err)
	return r
}

func readNodes(t testing.TB, path string) []routing.Node {
	t.Helper()
	docs, err := decode.File(path, nil)
	require.NoError(t, err)
	nodes, err := decode.Nodes(docs)
	require.NoError(t, err)
	return routing.NodesFromCore(nodes)
}

// renderInputs are the inputs check evaluates for a values file (and a nodes file, when not
// ""), recorded from a replay of the release with the bundled library.
func renderInputs(t testing.TB, values, nodesFile string) []*policy.Input {
	t.Helper()
	r := renderFile(t, values)
	var nodes []routing.Node
	if nodesFile != "" {
		nodes = readNodes(t, nodesFile)
	}
	e, err := policy.New(t.Context(), policy.Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	rec := &webhooktest.Evaluator{Fn: e.Evaluate}
	_, err = release.Apply(t.Context(), release.FromRender(r, render.DefaultReleaseName), cluster.FromLists(nodes, nil, nil, nil),
		release.Options{Decider: &decision.Decider{Policy: rec}, Data: e})
	require.NoError(t, err)
	return rec.Inputs()
}

// evaluate evaluates the input for the object named name with e. Rules that read the cluster
// view see e's (empty unless the test synced one).
func evaluate(t *testing.T, e policy.Evaluator, inputs []*policy.Input, name string) *policy.Decision {
	t.Helper()
	for _, in := range inputs {
		if objectName(in) == name {
			d, err := e.Evaluate(context.WithoutCancel(t.Context()), in)
			require.NoError(t, err)
			return d
		}
	}
	t.Fatalf("no input for %s", name)
	return nil
}

func objectName(in *policy.Input) string {
	switch o := in.Object.(type) {
	case interface{ GetName() string }:
		return o.GetName()
	case map[string]any:
		md, _ := o["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		return name
	}
	return ""
}

func msgs(ms []policy.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Package + ": " + m.Msg
	}
	return out
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.WithoutCancel(t.Context()))
}

package action_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/action"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// writeLargeSuite writes a suite of cases values cases over the bundled library, against
// nodes nodes of four families (each a quarter of them), and returns its folder.
func writeLargeSuite(tb testing.TB, nodes, cases int) string {
	tb.Helper()
	dir := tb.TempDir()
	var stream strings.Builder
	families := []string{"atom", "rebel", "ca22", "ca25"}
	for i := range nodes {
		n := wt.Node(fmt.Sprintf("npu-%05d", i), wt.CandidateLabels("rebellions.ai/npu.family", families[i%len(families)],
			"env", []string{"prod", "canary"}[i%2]))
		n.APIVersion, n.Kind = "v1", "Node"
		data, err := yaml.Marshal(n)
		require.NoError(tb, err)
		stream.WriteString("---\n")
		stream.Write(data)
	}
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "nodes.yaml"), []byte(stream.String()), 0o600))
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(`driver:
  image: {tag: "3.2.2"}
  instances:
    atom:
      nodeSelector: {rebellions.ai/npu.family: atom}
    rebel:
      nodeSelector: {rebellions.ai/npu.family: rebel}
`), 0o600))
	var suite strings.Builder
	suite.WriteString("apiVersion: driverguard.rebellions.ai/v1alpha1\nkind: TestSuite\ninventory:\n  nodes: nodes.yaml\ntests:\n")
	for i := range cases {
		// Every other case adds a canary on one family's canary nodes; the rest change a tag.
		fmt.Fprintf(&suite, "  - name: case %d\n    values: [values.yaml]\n", i)
		if i%2 == 0 {
			fmt.Fprintf(&suite, "    set: [\"driver.instances.canary.nodeSelector.env=canary\", \"driver.instances.canary.nodeSelector.rebellions\\\\.ai/npu\\\\.family=%s\"]\n", families[i%len(families)])
		} else {
			fmt.Fprintf(&suite, "    set: [\"driver.instances.atom.image.tag=3.2.%d\"]\n", i%10)
		}
		suite.WriteString("    expect: {verdict: allowed}\n")
	}
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "large.dgtest.yaml"), []byte(suite.String()), 0o600))
	return dir
}

func TestLargeSuitePasses(t *testing.T) {
	dir := writeLargeSuite(t, 100, 20)
	job := action.NewTest(config(""))
	job.Paths = []string{dir}
	res, err := job.Run(context.Background())
	require.NoError(t, err)
	for _, c := range res.Cases {
		require.True(t, c.Passed, "%s: %+v %s", c.Name, c.Mismatch, c.Error)
	}
	require.Len(t, res.Cases, 20)
}

// BenchmarkTestSuite: a 200-case suite over the bundled library at 1,000 nodes (docs/policy-authoring.md "Test suites":
// ≤ 2 s); the policies are compiled once per suite and the inventory read once. cases=1 is
// the baseline: a suite of one case pays the compile and the inventory for that case alone.
func BenchmarkTestSuite(b *testing.B) {
	for _, cases := range []int{1, 200} {
		b.Run(fmt.Sprintf("nodes=1000/cases=%d", cases), func(b *testing.B) {
			dir := writeLargeSuite(b, 1000, cases)
			job := action.NewTest(config(""))
			job.Paths = []string{dir}
			b.ReportAllocs()
			for b.Loop() {
				res, err := job.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if res.Failed > 0 {
					b.Fatalf("%d cases failed: %+v", res.Failed, res.Cases[0])
				}
			}
		})
	}
}

// TestLibrarySuite: the bundled library's own suite passes with 100% coverage: every rule
// body of the library (a policy's deny and its warn each) and every built-in rule fires in
// one of its cases and passes in another.
func TestLibrarySuite(t *testing.T) {
	job := action.NewTest(config(""))
	job.Paths = []string{"../policy/library/suites"}
	job.MinCoverage = 100
	res, err := job.Run(context.Background())
	require.NoError(t, err)
	for _, c := range res.Cases {
		require.True(t, c.Passed, "%s: %+v %s", c.Name, c.Mismatch, c.Error)
	}
	lib := 0
	for _, r := range res.Coverage {
		require.NotEmpty(t, r.Fired, "%s never fired", r.Rule)
		require.NotEmpty(t, r.Passed, "%s never passed", r.Rule)
		if strings.HasPrefix(r.Rule, "driverguard.lib.") {
			lib++
		}
	}
	assert.Equal(t, len(action.BuiltInRules)+9, len(res.Coverage), "the 9 rule bodies of the 8 library policies and the built-in rules")
	assert.Equal(t, 9, lib)
	assert.True(t, res.Passed)
}

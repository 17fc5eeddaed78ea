package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
)

// TestAuditExample: the example inventory against the example drivers — stale owner labels
// and a node without a family label, each in its driver's report — fails the audit.
func TestAuditExample(t *testing.T) {
	drivers := filepath.Join(t.TempDir(), "drivers.yaml")
	rendered := run(t, "", "render", "-f", exampleValues)
	require.Equal(t, ExitOK, rendered.code, rendered.stderr)
	require.NoError(t, os.WriteFile(drivers, []byte(rendered.stdout), 0o600))

	r := run(t, "", "audit", "--nodes", exampleNodes, "--drivers", drivers)
	assert.Equal(t, ExitInvalid, r.code, r.stderr)
	// The finding that covers more nodes first.
	assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver\n  FAIL   StaleOwnerLabel: 4 nodes whose rebellions.ai/npu.driver.owner label is not the driver rbln-npu-operator gives")
	assert.Contains(t, r.stdout, "writes \"rbln-driver\" on its next reconcile)\n  FAIL   DriverFamilyLabelMissing: node npu-nofamily-01: no rebellions.ai/npu.family label: rbln-npu-operator maps the node to no pool")
	assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver-rebel\n  FAIL   StaleOwnerLabel: 3 nodes whose rebellions.ai/npu.driver.owner label is not the driver rbln-npu-operator gives: npu-rebel-01, npu-rebel-02, npu-rebel-03")
	assert.Contains(t, r.stdout, "\n4 reports: 4 fail (4 enforced), 0 warn, 27 pass; FAILED\n")
	assert.Empty(t, r.stderr)

	t.Run("yaml is the ClusterReports", func(t *testing.T) {
		y := run(t, "", "audit", "--nodes", exampleNodes, "--drivers", drivers, "-o", "yaml")
		assert.Equal(t, ExitInvalid, y.code, y.stderr)
		var names []string
		fails := 0
		for _, doc := range strings.Split(y.stdout, "---\n")[1:] {
			var cr openreports.ClusterReport
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &cr))
			assert.Equal(t, "ClusterReport", cr.Kind)
			assert.Equal(t, "driverguard", cr.Labels["app.kubernetes.io/managed-by"])
			names = append(names, cr.Name)
			fails += cr.Summary.Fail
			if cr.Name != "driverguard-cluster" {
				require.NotNil(t, cr.Scope)
				assert.Equal(t, cr.Name, cr.Scope.Name)
			}
		}
		assert.Equal(t, []string{"rbln-driver", "rbln-driver-atom-canary", "rbln-driver-rebel", "driverguard-cluster"}, names)
		assert.Equal(t, 4, fails)
	})
}

// TestAuditEnforcement: a policy on trial reports on stored drivers without failing the
// audit; enforced, the same finding fails it.
func TestAuditEnforcement(t *testing.T) {
	dir := t.TempDir()
	nodes := filepath.Join(dir, "nodes.yaml")
	require.NoError(t, os.WriteFile(nodes, []byte(`apiVersion: v1
kind: Node
metadata:
  name: n1
  labels:
    rebellions.ai/npu.deploy.driver: "true"
    rebellions.ai/npu.driver.owner: rbln-driver
    rebellions.ai/npu.family: atom
    feature.node.kubernetes.io/system-os_release.ID: ubuntu
    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
    feature.node.kubernetes.io/kernel-version.full: 6.8.0-90-generic
`), 0o600))
	drivers := filepath.Join(dir, "drivers.yaml")
	rendered := run(t, "", "render")
	require.Equal(t, ExitOK, rendered.code, rendered.stderr)
	require.NoError(t, os.WriteFile(drivers, []byte(rendered.stdout), 0o600))
	policies := filepath.Join(dir, "policies")
	require.NoError(t, os.MkdirAll(policies, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(policies, "trial.rego"), []byte(`# METADATA
# custom:
#   enforcement: audit
package driverguard.trial

deny contains "drivers need the team annotation" if {
	input.object.kind == "RBLNDriver"
	not input.object.metadata.annotations["team.example/owner"]
}
`), 0o600))
	args := []string{"audit", "--nodes", nodes, "--drivers", drivers, "--cluster-policy", drivers, "--policy", policies}

	r := run(t, "", args...)
	assert.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver\n  AUDIT  driverguard.trial: drivers need the team annotation\n")
	assert.Contains(t, r.stdout, "2 reports: 1 fail (0 enforced)")

	r = run(t, "", append(args, "--enforcement", "trial=deny")...)
	assert.Equal(t, ExitInvalid, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver\n  FAIL   driverguard.trial: drivers need the team annotation\n")
	assert.Contains(t, r.stdout, "2 reports: 1 fail (1 enforced)")
}

func TestAuditUnusableInput(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to audit", []string{"audit"}, "nothing to audit: read the cluster with --live or --kubeconfig, or give it as files with --nodes and --drivers"},
		{"live and files", []string{"audit", "--live", "--nodes", exampleNodes}, "--live/--kubeconfig reads the cluster, and --nodes read files of it: use one or the other"},
		{"a bad -o", []string{"audit", "--nodes", exampleNodes, "-o", "xml"}, `unsupported output format "xml": use one of table, json, yaml, junit, sarif, markdown, github`},
		{"a missing file", []string{"audit", "--nodes", "nope.yaml"}, "nope.yaml"},
		{"no results", []string{"audit", "--nodes", exampleNodes, "--max-results", "0"}, "--max-results 0: a report lists at least one result (its summary counts every one); give 1 or more (default 100)"},
		{"negative results", []string{"audit", "--nodes", exampleNodes, "--max-results", "-1"}, "--max-results -1: a report lists at least one result"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.args...)
			assert.Equal(t, ExitUsage, r.code, r.stdout)
			assert.Contains(t, r.stderr, tt.want)
			assert.Empty(t, r.stdout)
		})
	}
}

// TestServeAuditFlags: serve --audit refuses, before it connects anywhere, a
// --audit-max-results below 1 (a negative one made every audit pass panic), intervals out of
// their range (when parsed: TestTimingFlagsRefuseOutOfRange) and a Lease timing leader election
// would refuse.
func TestServeAuditFlags(t *testing.T) {
	t.Cleanup(func() { stopGrace.Store(0) }) // serve sets the process's stop grace
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--audit-max-results", "0"}, "--audit-max-results 0: a report lists at least one result"},
		{[]string{"--audit-max-results", "-5"}, "--audit-max-results -5: a report lists at least one result"},
		{[]string{"--audit-interval", "0s"}, `invalid argument "0s" for "--audit-interval" flag: 0 is not accepted: give a duration from 10s to 24h`},
		{[]string{"--audit-image-interval", "-1h"}, `invalid argument "-1h" for "--audit-image-interval" flag: negative`},
		{[]string{"--leader-elect-renew-deadline", "20s"}, "the lease duration must be longer than the renew deadline"},
		{[]string{"--leader-elect-retry-period", "9s"}, "the renew deadline longer than 1.2 times the retry period"},
		{[]string{"--leader-elect-lease-duration", "0s"}, `invalid argument "0s" for "--leader-elect-lease-duration" flag: 0 is not accepted`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := run(t, "", append([]string{"serve", "--audit", "--namespace", "dg"}, tt.args...)...)
			assert.Equal(t, ExitUsage, r.code, r.stdout+r.stderr)
			assert.Contains(t, r.stderr, tt.want)
		})
	}
	// The defaults and --audit-max-results 1 pass the checks.
	o := &serveOptions{tlsMinVersion: "1.3", audit: true, auditOpts: action.AuditOptions{MaxResults: 1,
		Interval: time.Minute, ImageInterval: time.Hour, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}}
	o.rotation.Namespace = "dg"
	assert.NoError(t, o.complete(&action.ServerOptions{}))
}

func TestServeMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		err  string
	}{
		{"", 0, ""},
		{"256Mi", 256 << 20, ""},
		{"1Gi", 1 << 30, ""},
		{"10Mi", 0, `--memory-limit "10Mi": give a quantity of at least 64Mi`},
		{"-1Gi", 0, "at least 64Mi"},
		{"lots", 0, `--memory-limit "lots"`},
	} {
		got, err := memoryLimit(tt.in)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
	}
}

// TestAuditTableEscapes: names and labels from the cluster or its files reach the table
// escaped: an escape sequence in a node name, a driver name or an instance label does not
// reach the terminal.
func TestAuditTableEscapes(t *testing.T) {
	dir := t.TempDir()
	nodes, drivers := filepath.Join(dir, "nodes.yaml"), filepath.Join(dir, "drivers.yaml")
	require.NoError(t, os.WriteFile(nodes, []byte(`apiVersion: v1
kind: Node
metadata:
  name: "evil\e]0;title\a\e[2J"
  labels:
    feature.node.kubernetes.io/pci-1eff.present: "true"
    rebellions.ai/npu.deploy.driver: "true"
`), 0o600))
	require.NoError(t, os.WriteFile(drivers, []byte(`apiVersion: rebellions.ai/v1alpha1
kind: RBLNDriver
metadata:
  name: "rbln-driver-\e[5m"
  labels:
    driverguard.rebellions.ai/instance: "i\u202e\xff"
spec:
  image: rebellions/rbln-driver
  registry: repo.example.invalid
  version: "3.2.2"
  nodeSelector:
    team: a
`), 0o600))
	r := run(t, "", "audit", "--nodes", nodes, "--drivers", drivers)
	assert.Equal(t, ExitInvalid, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "\x1b")
	assert.NotContains(t, r.stdout, "\a")
	assert.NotContains(t, r.stdout, "\u202e")
	assert.Contains(t, r.stdout, `RBLNDriver/rbln-driver-\x1b[5m (instance i\u202e`)
	assert.Contains(t, r.stdout, `node evil\x1b]0;title\a\x1b[2J`)

	for _, tt := range []struct{ in, want string }{
		{"plain, ünïcode", "plain, ünïcode"},
		{"a\x1b[31mb\tc\n", `a\x1b[31mb\tc\n`},
		{"bad \xff utf-8", `bad \xff utf-8`},
		{"bidi \u202e", `bidi \u202e`},
	} {
		assert.Equal(t, tt.want, output.Escape(tt.in), "%q", tt.in)
	}
}

// TestAuditPolicyFailOpen: a policy whose evaluation fails stops the audit (exit 2) with the
// hint to --policy-fail-open, which audit takes: the object is then judged without its
// policies, with a warning.
func TestAuditPolicyFailOpen(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.rego"), []byte(`package driverguard.broken

kind := input.object.kind

kind := "other" if input.object.kind

deny contains "never" if kind == "none"
`), 0o600))
	args := []string{"audit", "--nodes", exampleNodes, "--drivers", "../../../examples/drivers.yaml", "--policy", dir}
	for _, tt := range []struct {
		name     string
		extra    []string
		code     int
		stdout   string
		stderrIn string
	}{
		{"fail-closed", nil, ExitUsage, "", "--policy-fail-open admits such objects"},
		{"fail-open", []string{"--policy-fail-open"}, ExitInvalid, "WARN   PolicyUnavailable: policy evaluation failed, admitted without policies (fail-open)", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", append(args, tt.extra...)...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.stderrIn)
			if tt.stdout == "" {
				assert.Empty(t, r.stdout)
			} else {
				assert.Contains(t, r.stdout, tt.stdout)
			}
		})
	}
}

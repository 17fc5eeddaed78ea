package app

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// suiteFiles are the files every suite of these tests reads: values with a potential tie
// (PotentialConflict, a warning), values with identical selectors (IdenticalNodeSelector, a
// denial) and a team policy that denies drivers named *-legacy.
var suiteFiles = map[string]string{
	"values/tie.yaml": `driver:
  nodeSelector: {env: prod}
  instances:
    atom:
      nodeSelector: {rebellions.ai/npu.family: atom}
`,
	"values/identical.yaml": `driver:
  nodeSelector: {env: prod}
  instances:
    twin:
      nodeSelector: {env: prod}
`,
	"values/legacy.yaml": `driver:
  instances:
    legacy:
      nodeSelector: {env: legacy}
`,
	"policies/names.rego": `package driverguard.team.names

deny contains msg if {
	input.object.kind == "RBLNDriver"
	endswith(input.object.metadata.name, "-legacy")
	msg := sprintf("driver %s: legacy drivers are retired", [input.object.metadata.name])
}
`,
}

// writeSuite writes suiteFiles and the suite (its tests) into a new folder and returns the
// suite's path.
func writeSuite(t *testing.T, tests string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range suiteFiles {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	path := filepath.Join(dir, "team.dgtest.yaml")
	suite := `apiVersion: driverguard.rebellions.ai/v1alpha1
kind: TestSuite
policies: [policies]
tests:
` + tests
	require.NoError(t, os.WriteFile(path, []byte(suite), 0o644))
	return path
}

// passingCases hold one case per kind of expectation, each true.
const passingCases = `  - name: a potential tie warns
    values: [values/tie.yaml]
    expect:
      verdict: allowed
      results:
        - object: RBLNDriver/rbln-driver-atom
          rule: PotentialConflict
          result: warn
          message: "tie"
        - object: RBLNDriver/rbln-driver-atom
          rule: driverguard.team.names
          result: pass
  - name: identical selectors are denied
    values: [values/identical.yaml]
    expect:
      verdict: denied
      results:
        - object: RBLNDriver/rbln-driver-twin
          rule: IdenticalNodeSelector
          result: fail
  - name: legacy drivers are retired
    values: [values/legacy.yaml]
    set: ["driver.image.tag=3.2.2"]
    expect:
      verdict: denied
      exhaustive: true
      results:
        - object: RBLNDriver/rbln-driver-legacy
          rule: driverguard.team.names
          result: fail
          message: "legacy drivers are retired"
`

func TestSuitePasses(t *testing.T) {
	res := run(t, "", "test", writeSuite(t, passingCases))
	assert.Equal(t, 0, res.code, res.stdout+res.stderr)
	for _, name := range []string{"a potential tie warns", "identical selectors are denied", "legacy drivers are retired"} {
		assert.Contains(t, res.stdout, "PASS  ")
		assert.Contains(t, res.stdout, name)
	}
	assert.Contains(t, res.stdout, "3 cases, 0 failed")
	// The team policy fired in one case and passed in the two others.
	assert.Regexp(t, `driverguard\.team\.names\.deny\s+1\s+2`, res.stdout)

	// policies may name Rego files as well as folders.
	path := writeSuite(t, passingCases)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), "policies: [policies]", "policies: [policies/names.rego]", 1)), 0o644))
	res = run(t, "", "test", path)
	assert.Equal(t, 0, res.code, res.stdout+res.stderr)
	assert.Regexp(t, `driverguard\.team\.names\.deny\s+1\s+2`, res.stdout)
}

// TestSuiteMutations: each expectation made false fails its case, named, with what was
// expected and what came instead; the other cases still pass.
func TestSuiteMutations(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		case_, want    string
	}{
		{"wrong verdict", "verdict: denied\n      results:\n        - object: RBLNDriver/rbln-driver-twin",
			"verdict: allowed\n      results:\n        - object: RBLNDriver/rbln-driver-twin",
			"identical selectors are denied", "expected verdict allowed"},
		{"message that does not match", `message: "legacy drivers are retired"`, `message: "legacy drivers are welcome"`,
			"legacy drivers are retired", "matching /legacy drivers are welcome/"},
		{"missing result", "rule: IdenticalNodeSelector", "rule: ConflictingNodeSelector",
			"identical selectors are denied", "expected fail RBLNDriver/rbln-driver-twin ConflictingNodeSelector"},
		{"unexpected result under exhaustive", "values: [values/legacy.yaml]", "values: [values/legacy.yaml, values/tie.yaml]",
			"legacy drivers are retired", "expected nothing else (exhaustive)"},
		{"pass that fired", "rule: driverguard.team.names\n          result: pass", "rule: PotentialConflict\n          result: pass",
			"a potential tie warns", "expected pass RBLNDriver/rbln-driver-atom PotentialConflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, passingCases, tc.from)
			res := run(t, "", "test", writeSuite(t, strings.Replace(passingCases, tc.from, tc.to, 1)))
			assert.Equal(t, 1, res.code, res.stdout+res.stderr)
			assert.Regexp(t, `FAIL  \S+team\.dgtest\.yaml:\d+ `+tc.case_, res.stdout)
			assert.Contains(t, res.stdout, tc.want)
			assert.Contains(t, res.stdout, "3 cases, 1 failed")
		})
	}
}

// TestSuiteUnreadable: a suite that cannot be read is exit 2 naming the file and line, before
// any case runs.
func TestSuiteUnreadable(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"unknown field in a case", "    values: [values/tie.yaml]", "    valuse: [values/tie.yaml]",
			`team.dgtest.yaml:6: unknown field "valuse" in a test; it takes: name, values, set`},
		{"unknown field in a result", "          rule: IdenticalNodeSelector", "          rul: IdenticalNodeSelector",
			`team.dgtest.yaml:23: unknown field "rul" in an expected result`},
		{"missing values file", "values: [values/identical.yaml]", "values: [values/identicle.yaml]",
			"team.dgtest.yaml:18: values/identicle.yaml does not exist"},
		{"impossible result", "result: warn", "result: warning", `team.dgtest.yaml:10: test "a potential tie warns": result "warning": want fail, warn, audit or pass`},
		{"bad regular expression", `message: "tie"`, `message: "tie("`, "message is not a regular expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, passingCases, tc.from)
			res := run(t, "", "test", writeSuite(t, strings.Replace(passingCases, tc.from, tc.to, 1)))
			assert.Equal(t, 2, res.code, res.stdout+res.stderr)
			assert.Contains(t, res.stderr, tc.want)
			assert.Empty(t, res.stdout, "no case runs when a suite cannot be read")
		})
	}
}

func TestSuiteRunSelects(t *testing.T) {
	res := run(t, "", "test", "--run", "legacy", writeSuite(t, passingCases))
	assert.Equal(t, 0, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "1 cases, 0 failed")
	assert.NotContains(t, res.stdout, "identical selectors")
}

func TestSuiteMinCoverage(t *testing.T) {
	path := writeSuite(t, passingCases)
	res := run(t, "", "test", "--min-coverage", "100", path)
	assert.Equal(t, 1, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "coverage below --min-coverage 100%")
	assert.Contains(t, res.stdout, "never fired: ")
	assert.Contains(t, res.stdout, "driverguard.lib.pinned_version")
	res = run(t, "", "test", "--min-coverage", "1", path)
	assert.Equal(t, 0, res.code, res.stdout+res.stderr)
}

// TestSuiteJUnit: one testcase per case, the failed one with its mismatch.
// junitDoc is what the tests read back of a JUnit report.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func parseJUnit(t *testing.T, out string) junitDoc {
	t.Helper()
	var doc junitDoc
	require.NoError(t, xml.Unmarshal([]byte(out), &doc), out)
	return doc
}

func TestSuiteJUnit(t *testing.T) {
	res := run(t, "", "test", "-o", "junit", writeSuite(t, strings.Replace(passingCases, "rule: IdenticalNodeSelector", "rule: ConflictingNodeSelector", 1)))
	assert.Equal(t, 1, res.code, res.stderr)
	doc := parseJUnit(t, res.stdout)
	assert.Equal(t, 3, doc.Tests)
	assert.Equal(t, 1, doc.Failures)
	require.Len(t, doc.Suites, 1)
	require.Len(t, doc.Suites[0].Cases, 3)
	failed := doc.Suites[0].Cases[1]
	assert.Equal(t, "identical selectors are denied", failed.Name)
	require.NotNil(t, failed.Failure)
	assert.Contains(t, failed.Failure.Message, "ConflictingNodeSelector")
	assert.Nil(t, doc.Suites[0].Cases[0].Failure)
}

// TestSuitePlan: a case's plan expectations, met and missed, against the example cluster
// with its workloads (the rollout example changes the owner of the rebel nodes and one of
// them is blocked by a drain).
func TestSuitePlan(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	suite := func(actions string) string {
		dir := t.TempDir()
		path := filepath.Join(dir, "plan.dgtest.yaml")
		require.NoError(t, os.WriteFile(path, []byte(`apiVersion: driverguard.rebellions.ai/v1alpha1
kind: TestSuite
inventory:
  nodes: `+root+`/examples/nodes.yaml
  drivers: `+root+`/examples/drivers.yaml
  pods: `+root+`/examples/workloads.yaml
tests:
  - name: the rollout
    values: [`+root+`/examples/rollout.yaml]
    expect:
      plan:
        nodes: {`+actions+`}
`), 0o644))
		return path
	}
	res := run(t, "", "test", suite("npu-rebel-01: change-owner, npu-rebel-02: blocked, npu-atom-01: none"))
	assert.Equal(t, 0, res.code, res.stdout+res.stderr)
	res = run(t, "", "test", suite("npu-rebel-02: upgrade, npu-gone: none"))
	assert.Equal(t, 1, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "expected plan node npu-rebel-02: upgrade\n          got blocked")
	assert.Contains(t, res.stdout, "expected plan node npu-gone: none\n          got no such node in the plan")
	res = run(t, "", "test", suite("npu-rebel-02: upgraded"))
	assert.Equal(t, 2, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stderr, `expect.plan.nodes.npu-rebel-02: "upgraded" is not a node action`)
}

// TestCheckJUnit: one test case per object and rule, failed by that rule's denials.
func TestCheckJUnit(t *testing.T) {
	dir := t.TempDir()
	values := filepath.Join(dir, "identical.yaml")
	require.NoError(t, os.WriteFile(values, []byte(suiteFiles["values/identical.yaml"]), 0o644))
	res := run(t, "", "check", "-f", values, "-o", "junit")
	assert.Equal(t, 1, res.code, res.stderr)
	doc := parseJUnit(t, res.stdout)
	require.Len(t, doc.Suites, 1)
	failed := map[string]string{}
	names := map[string]bool{}
	for _, c := range doc.Suites[0].Cases {
		names[c.Name] = true
		if c.Failure != nil {
			failed[c.Name] = c.Failure.Message
		}
	}
	assert.Len(t, names, doc.Tests, "test case names are unique")
	assert.Equal(t, len(failed), doc.Failures)
	assert.Contains(t, failed["RBLNDriver/rbln-driver-twin IdenticalNodeSelector"], "identical")
	assert.True(t, names["RBLNDriver/rbln-driver driverguard.lib.pinned_version"])
	assert.True(t, names["RBLNClusterPolicy/rbln-cluster-policy IdenticalNodeSelector"])
}

// TestSuiteDaemonSets: driver DaemonSets among a case's objects are answered as the webhook
// answers the operator: the image the mutation sets is expected with expect.images (a wrong
// one fails the case with the image it got); one naming no stored driver is denied.
func TestSuiteDaemonSets(t *testing.T) {
	ds := func(name, driver string) string {
		return `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ` + name + `
  labels: {app.kubernetes.io/name: rbln-npu-operator, app.kubernetes.io/component: rbln-driver, rebellions.ai/driver-instance: ` + driver + `}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: rbln-npu-operator, app.kubernetes.io/component: rbln-driver, rebellions.ai/driver-instance: ` + driver + `}}
  template:
    metadata: {labels: {app.kubernetes.io/name: rbln-npu-operator, app.kubernetes.io/component: rbln-driver, rebellions.ai/driver-instance: ` + driver + `}}
    spec:
      nodeSelector:
        rebellions.ai/npu.family: atom
        feature.node.kubernetes.io/system-os_release.ID: ubuntu
        feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
        feature.node.kubernetes.io/kernel-version.full: 6.8.0-custom_1
      containers: [{name: rbln-driver-container, image: placeholder}]
`
	}
	driver := `apiVersion: rebellions.ai/v1alpha1
kind: RBLNDriver
metadata: {name: rbln-driver-atom}
spec: {registry: registry.example, image: team/rbln-driver, version: 3.2.2, nodeSelector: {rebellions.ai/npu.family: atom}}
`
	cases := `  - name: the driver and its pool's DaemonSet
    objects: [objects/driver.yaml, objects/ds.yaml]
    expect:
      verdict: allowed
      images: {atom-pool: "registry.example/team/atom/rbln-driver:3.2.2-6.8.0-custom_1-ubuntu22.04"}
  - name: a DaemonSet naming no driver
    objects: objects/orphan.yaml
    expect:
      verdict: denied
      exhaustive: true
      results:
        - object: DaemonSet/orphan
          rule: FieldValueNotFound
          result: fail
          message: RBLNDriver "rbln-driver-gone" does not exist
`
	path := writeSuite(t, cases)
	dir := filepath.Dir(path)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "objects"), 0o755))
	for name, content := range map[string]string{"driver.yaml": driver, "ds.yaml": ds("atom-pool", "rbln-driver-atom"), "orphan.yaml": ds("orphan", "rbln-driver-gone")} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "objects", name), []byte(content), 0o644))
	}
	res := run(t, "", "test", path)
	require.Equal(t, 0, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "2 cases, 0 failed")

	// A wrong image fails the case, with the image the mutation set.
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(mustRead(t, path), "3.2.2-6.8.0", "3.2.3-6.8.0", 1)), 0o644))
	res = run(t, "", "test", path)
	assert.Equal(t, 1, res.code, res.stdout+res.stderr)
	assert.Regexp(t, `FAIL  \S+ the driver and its pool's DaemonSet`, res.stdout)
	assert.Contains(t, res.stdout, "got registry.example/team/atom/rbln-driver:3.2.2-6.8.0-custom_1-ubuntu22.04")

	// Images on a case without objects cannot be expected: exit 2 with its line.
	res = run(t, "", "test", writeSuite(t, `  - name: images of values
    values: [values/tie.yaml]
    expect:
      images: {atom-pool: x}
`))
	assert.Equal(t, 2, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stderr, "team.dgtest.yaml:5: ")
	assert.Contains(t, res.stderr, "only driver DaemonSets (in objects or a review) have images to expect")
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// TestSuiteOperation: a case is held to its operation for an RBLNClusterPolicy as for an
// RBLNDriver: UPDATE needs it stored, CREATE needs it not stored.
func TestSuiteOperation(t *testing.T) {
	policy := `    objects:
      - apiVersion: rebellions.ai/v1alpha1
        kind: RBLNClusterPolicy
        metadata: {name: rbln-cluster-policy}
        spec: {driver: {upgradePolicy: {maxParallelUpgrades: 2}}}
    expect: {verdict: allowed}
`
	res := run(t, "", "test", writeSuite(t, "  - name: update of a policy not stored\n    operation: UPDATE\n"+policy))
	assert.Equal(t, 1, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "operation UPDATE: RBLNClusterPolicy rbln-cluster-policy is not stored")

	stored := "    inventory:\n      clusterPolicy:\n        - apiVersion: rebellions.ai/v1alpha1\n          kind: RBLNClusterPolicy\n          metadata: {name: rbln-cluster-policy}\n"
	res = run(t, "", "test", writeSuite(t, "  - name: create of a policy stored\n"+stored+policy))
	assert.Equal(t, 1, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "operation CREATE: RBLNClusterPolicy rbln-cluster-policy is stored already")

	res = run(t, "", "test", writeSuite(t, "  - name: update of a policy stored\n    operation: UPDATE\n"+stored+policy))
	assert.Equal(t, 0, res.code, res.stdout+res.stderr)
}

// TestSuiteHostileInputs: what a hostile or careless suite gets (found by attacking `test`):
// each is refused with what is wrong, nothing is dropped silently.
func TestSuiteHostileInputs(t *testing.T) {
	t.Run("--run that matches nothing", func(t *testing.T) {
		res := run(t, "", "test", "--run", "no such case", writeSuite(t, passingCases))
		assert.Equal(t, 2, res.code, res.stdout+res.stderr)
		assert.Contains(t, res.stderr, `--run "no such case" matches none of the 3 cases found`)
	})
	t.Run("a policy that does not compile, its cases not selected", func(t *testing.T) {
		path := writeSuite(t, passingCases)
		require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(path), "policies", "broken.rego"), []byte("package driverguard.broken\n\ndeny contains if {\n"), 0o644))
		res := run(t, "", "test", "--run", "no such case", path)
		assert.Equal(t, 2, res.code, res.stdout+res.stderr)
		assert.Contains(t, res.stderr, "broken.rego")
	})
	for _, pct := range []string{"-1", "101", "NaN"} {
		t.Run("--min-coverage "+pct, func(t *testing.T) {
			res := run(t, "", "test", "--min-coverage", pct, writeSuite(t, passingCases))
			assert.Equal(t, 2, res.code, res.stdout+res.stderr)
			assert.Contains(t, res.stderr, "want a percentage from 0 to 100")
			assert.Empty(t, res.stdout)
		})
	}
	t.Run("an object of another kind", func(t *testing.T) {
		res := run(t, "", "test", writeSuite(t, `  - name: a typo'd kind
    objects:
      - {apiVersion: rebellions.ai/v1alpha1, kind: RBLNDrivr, metadata: {name: x}}
      - {apiVersion: rebellions.ai/v1alpha1, kind: RBLNDriver, metadata: {name: rbln-driver-x}, spec: {nodeSelector: {env: x}}}
    expect: {verdict: allowed}
`))
		assert.Equal(t, 1, res.code, res.stdout+res.stderr)
		assert.Contains(t, res.stdout, "a rebellions.ai/v1alpha1 RBLNDrivr among the objects: a case judges RBLNDrivers, the RBLNClusterPolicy and driver DaemonSets (apps/v1) only")
	})
	t.Run("a device as the inventory", func(t *testing.T) {
		res := run(t, "", "test", writeSuite(t, `  - name: zero nodes
    inventory:
      nodes: /dev/zero
    values: [values/tie.yaml]
    expect: {verdict: allowed}
`))
		assert.Equal(t, 2, res.code, res.stdout+res.stderr)
		assert.Contains(t, res.stderr, "/dev/zero is not a regular file")
	})
	t.Run("findings beyond what the decision lists", func(t *testing.T) {
		path := writeSuite(t, `  - name: sixty findings, fifty listed
    values: [values/legacy.yaml]
    expect:
      exhaustive: true
      results:
        - {object: RBLNDriver/rbln-driver-legacy, rule: driverguard.team.many, result: fail}
`)
		require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(path), "policies", "many.rego"), []byte(`package driverguard.team.many

deny contains msg if {
	input.object.kind == "RBLNDriver"
	endswith(input.object.metadata.name, "-legacy")
	some i in numbers.range(1, 60)
	msg := sprintf("finding %d", [i])
}
`), 0o644))
		res := run(t, "", "test", path)
		assert.Equal(t, 1, res.code, res.stdout+res.stderr)
		assert.Contains(t, res.stdout, "expected nothing else (exhaustive)")
		assert.Regexp(t, `OmittedFindings: \d+ more fail findings not listed`, res.stdout)
	})
}

package output_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/output"
	"github.com/driverguard/driverguard/output/sariftest"
)

// sarifSchema compiles the SARIF 2.1.0 schema, formats asserted.
func sarifSchema(t *testing.T) *jsonschema.Schema { return sariftest.Schema(t) }

// sarifLog is what the tests read back of a SARIF log.
type sarifLog struct {
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Name    string `json:"name"`
				Version string `json:"version"`
				Rules   []struct {
					ID               string                 `json:"id"`
					ShortDescription struct{ Text string }  `json:"shortDescription"`
					Default          struct{ Level string } `json:"defaultConfiguration"`
					Properties       map[string]string      `json:"properties"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Results []struct {
			RuleID    string                `json:"ruleId"`
			RuleIndex int                   `json:"ruleIndex"`
			Level     string                `json:"level"`
			Message   struct{ Text string } `json:"message"`
			Locations []struct {
				Physical *struct {
					Artifact struct{ URI string } `json:"artifactLocation"`
					Region   struct {
						StartLine   int `json:"startLine"`
						StartColumn int `json:"startColumn"`
					} `json:"region"`
				} `json:"physicalLocation"`
				Logical []struct {
					FullyQualifiedName string `json:"fullyQualifiedName"`
					Kind               string `json:"kind"`
				} `json:"logicalLocations"`
			} `json:"locations"`
			Properties map[string]string `json:"properties"`
		} `json:"results"`
		Properties map[string]any `json:"properties"`
	} `json:"runs"`
}

// validSARIF writes r as SARIF, validates it against the schema and decodes it.
func validSARIF(t *testing.T, schema *jsonschema.Schema, r *output.Report) sarifLog {
	t.Helper()
	out := write(t, output.SARIF, r)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	require.NoError(t, err)
	require.NoError(t, schema.Validate(inst), "not SARIF 2.1.0:\n%s", out)
	var log sarifLog
	require.NoError(t, json.Unmarshal([]byte(out), &log))
	require.Equal(t, "2.1.0", log.Version)
	require.Len(t, log.Runs, 1)
	return log
}

func TestSARIF(t *testing.T) {
	schema := sarifSchema(t)
	registry := finding.NewRegistry(
		finding.Rule{ID: "team.deny", Level: finding.Deny, Enforcement: finding.Deny, Title: "Team rule", Home: "policies/team.rego:7", Source: finding.SourcePolicy},
		finding.Rule{ID: "team.warn", Level: finding.Warn, Enforcement: finding.Deny, Title: "Team warning", Home: "policies/team.rego:12", Source: finding.SourcePolicy},
		finding.Rule{ID: "trial.deny", Level: finding.Deny, Enforcement: finding.Audit, Title: "On trial", Home: "policies/trial.rego:3", Source: finding.SourcePolicy},
	)
	abs := filepath.Join(t.TempDir(), "my values.yaml")
	fs := []finding.Finding{
		{Rule: "FieldValueInvalid", Level: finding.Deny, Object: driverA, Field: "spec.version", Message: "bad",
			Location: &finding.Location{File: "values/prod.yaml", Line: 3, Column: 5, ValuesPath: "driver.image.tag"}},
		{Rule: "team.warn", Level: finding.Warn, Object: driverA, Message: "careful",
			Location: &finding.Location{File: abs, Line: 9}},
		{Rule: "trial.deny", Level: finding.Audit, Object: driverA, Message: "on trial",
			Location: &finding.Location{ValuesPath: "driver.instances.x.nodeSelector", Unwritten: true}},
		{Rule: "UpgradePolicy", Level: finding.Warn, Object: finding.Object{Kind: "RBLNClusterPolicy", Name: "rbln-cluster-policy"}, Message: "risky",
			Location: &finding.Location{ValuesPath: "driver.upgradePolicy.maxParallelUpgrades", Flag: "--set driver.upgradePolicy.maxParallelUpgrades=0"}},
		{Rule: "InvalidValues", Level: finding.Deny, Object: finding.Object{Kind: finding.KindValues, Name: "values"}, Message: "x: bad",
			Location: &finding.Location{File: "<stdin>", Line: 2, ValuesPath: "x"}},
		{Rule: "StaleOwnerLabel", Level: finding.Audit, Object: nodeN1, Message: "drift", Nodes: []string{"n1", "n2"}, Count: 40},
		{Rule: "InputWarning", Level: finding.Warn, Message: "no nodes"},
		{Rule: "SomethingUnknown", Level: finding.Deny, Object: driverA, Message: "a rule the registry does not know",
			Location: &finding.Location{File: "odd:name.yaml", Line: 1}},
	}
	r := &output.Report{Tool: "driverguard check", Findings: fs, Rules: registry, Omitted: 3,
		Properties: map[string]any{"judgedAgainst": []string{"12 nodes"}},
		Judged:     []output.Subject{{Object: driverA, Rules: []string{"team.deny", "team.warn", "IdenticalNodeSelector"}}}}
	log := validSARIF(t, schema, r)
	run := log.Runs[0]
	assert.Equal(t, "driverguard", run.Tool.Driver.Name)

	// The rules: those judged by first, then those the results cite, each once.
	var ids []string
	for _, rule := range run.Tool.Driver.Rules {
		ids = append(ids, rule.ID)
	}
	assert.Equal(t, []string{"team.deny", "team.warn", "IdenticalNodeSelector", "FieldValueInvalid", "trial.deny", "UpgradePolicy",
		"InvalidValues", "StaleOwnerLabel", "InputWarning", "SomethingUnknown"}, ids)
	rules := run.Tool.Driver.Rules
	assert.Equal(t, "Team rule", rules[0].ShortDescription.Text, "titles from the registry")
	assert.Equal(t, "error", rules[0].Default.Level)
	assert.Equal(t, map[string]string{"home": "policies/team.rego:7", "source": "policy"}, rules[0].Properties)
	assert.Equal(t, "warning", rules[1].Default.Level, "a warn body of an enforced policy warns")
	assert.Equal(t, "note", rules[4].Default.Level, "a policy on trial")
	assert.Equal(t, "warning", rules[5].Default.Level, "UpgradePolicy warns")
	assert.Equal(t, "SomethingUnknown", rules[9].ShortDescription.Text, "an unknown rule: its ID")
	assert.Equal(t, "error", rules[9].Default.Level)

	require.Len(t, run.Results, len(fs))
	for i, res := range run.Results {
		assert.Equal(t, fs[i].Rule, res.RuleID)
		assert.Equal(t, res.RuleID, rules[res.RuleIndex].ID, "ruleIndex points at the rule")
	}
	levels := []string{}
	for _, res := range run.Results {
		levels = append(levels, res.Level)
	}
	assert.Equal(t, []string{"error", "warning", "note", "warning", "error", "note", "warning", "error"}, levels)

	// A values file line is a physical location: relative stays relative, absolute is a file URI.
	p := run.Results[0].Locations[0].Physical
	require.NotNil(t, p)
	assert.Equal(t, "values/prod.yaml", p.Artifact.URI)
	assert.Equal(t, 3, p.Region.StartLine)
	assert.Equal(t, 5, p.Region.StartColumn)
	assert.Equal(t, "RBLNDriver/a: spec.version: bad", run.Results[0].Message.Text)
	assert.Equal(t, "driver.image.tag", run.Results[0].Properties["valuesPath"])
	p = run.Results[1].Locations[0].Physical
	require.NotNil(t, p)
	assert.Equal(t, "file://"+strings.ReplaceAll(filepath.ToSlash(abs), " ", "%20"), p.Artifact.URI)
	assert.Equal(t, 9, p.Region.StartLine)
	assert.Zero(t, p.Region.StartColumn)
	assert.Equal(t, "./odd:name.yaml", run.Results[7].Locations[0].Physical.Artifact.URI, "a relative path is not read as a scheme")

	// A value without a line says why in the message.
	assert.Nil(t, run.Results[2].Locations[0].Physical)
	assert.Equal(t, "RBLNDriver/a: policy trial: on trial [driver.instances.x.nodeSelector: not written in the values given (a chart default): no line to point at]",
		run.Results[2].Message.Text)
	assert.Contains(t, run.Results[3].Message.Text, "[driver.upgradePolicy.maxParallelUpgrades: written on the command line (--set driver.upgradePolicy.maxParallelUpgrades=0): no file line]")
	assert.Equal(t, "--set driver.upgradePolicy.maxParallelUpgrades=0", run.Results[3].Properties["valuesSource"])
	assert.Contains(t, run.Results[4].Message.Text, "[x: standard input line 2, no file to point at]")
	assert.Nil(t, run.Results[4].Locations[0].Physical)

	// The object is a logical location; nodes and counts are properties.
	logical := run.Results[5].Locations[0].Logical
	require.Len(t, logical, 1)
	assert.Equal(t, "Node/n1", logical[0].FullyQualifiedName)
	assert.Equal(t, "resource", logical[0].Kind)
	assert.Equal(t, map[string]string{"nodes": "n1,n2", "count": "40"}, run.Results[5].Properties)
	assert.Empty(t, run.Results[6].Locations, "no object, no location")

	assert.EqualValues(t, 3, run.Properties["omittedResults"])
	assert.Equal(t, []any{"12 nodes"}, run.Properties["judgedAgainst"])

	t.Run("an empty run is valid", func(t *testing.T) {
		log := validSARIF(t, schema, &output.Report{})
		assert.Empty(t, log.Runs[0].Results)
		assert.Empty(t, log.Runs[0].Tool.Driver.Rules)
		assert.Nil(t, log.Runs[0].Properties)
	})
	t.Run("the schema bites", func(t *testing.T) {
		out := strings.Replace(write(t, output.SARIF, r), `"level": "error"`, `"level": "fatal"`, 1)
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
		require.NoError(t, err)
		require.Error(t, schema.Validate(inst))
	})
}

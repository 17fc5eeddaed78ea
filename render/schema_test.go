package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/driverguard/driverguard/charts"
)

// TestValidateSchemaAgreesWithHelm: the cached schema validation accepts and rejects exactly
// what helm's chartutil.ValidateAgainstSchema does.
func TestValidateSchemaAgreesWithHelm(t *testing.T) {
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	cases := map[string]map[string]any{
		"defaults":          {},
		"bad type":          {"driver": map[string]any{"enabled": "yes"}},
		"unknown root key":  {"drivers": map[string]any{}},
		"reserved selector": {"driver": map[string]any{"nodeSelector": map[string]any{"rebellions.ai/npu.driver.owner": "x"}}},
		"instance":          {"driver": map[string]any{"instances": map[string]any{"a": map[string]any{"nodeSelector": map[string]any{"k": "v"}}}}},
	}
	for name, user := range cases {
		t.Run(name, func(t *testing.T) {
			vals, err := chartutil.CoalesceValues(ch, user)
			require.NoError(t, err)
			helmErr := chartutil.ValidateAgainstSchema(ch, vals)
			ourErr := validateSchema(ch, vals)
			assert.Equal(t, helmErr == nil, ourErr == nil, "helm: %v\nours: %v", helmErr, ourErr)
			ourErr = validateSchema(ch, vals) // cached path
			assert.Equal(t, helmErr == nil, ourErr == nil)
		})
	}
}

// validateSchema validates coalesced values with the compiled schema of ch.
func validateSchema(ch *chart.Chart, vals chartutil.Values) error {
	vs, err := schemaFor(ch)
	if err != nil {
		return err
	}
	verr, err := vs.validate(vals.AsMap())
	if verr != nil {
		return verr
	}
	return err
}

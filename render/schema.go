package render

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// compiledSchemas caches the compiled values.schema.json per chart: helm's
// chartutil.ValidateAgainstSchema compiles it on every call, which costs as much as rendering
// a hundred instances. The chart's own files are self-contained (no remote $refs), so the
// compiled schema is the same one helm uses.
var compiledSchemas sync.Map // *chart.Chart -> *jsonschema.Schema

// validateSchema validates coalesced values against the chart's values.schema.json, exactly
// as `helm template` does before rendering.
func validateSchema(ch *chart.Chart, vals chartutil.Values) error {
	if ch.Schema == nil || len(ch.Dependencies()) > 0 {
		return chartutil.ValidateAgainstSchema(ch, vals)
	}
	s, ok := compiledSchemas.Load(ch)
	if !ok {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ch.Schema))
		if err != nil {
			return fmt.Errorf("reading %s's values.schema.json: %w", ch.Name(), err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("file:///values.schema.json", doc); err != nil {
			return fmt.Errorf("reading %s's values.schema.json: %w", ch.Name(), err)
		}
		compiled, err := c.Compile("file:///values.schema.json")
		if err != nil {
			return fmt.Errorf("compiling %s's values.schema.json: %w", ch.Name(), err)
		}
		s, _ = compiledSchemas.LoadOrStore(ch, compiled)
	}
	if err := s.(*jsonschema.Schema).Validate(vals.AsMap()); err != nil {
		return fmt.Errorf("%s: %s", ch.Name(), strings.TrimPrefix(err.Error(), "jsonschema validation failed with 'file:///values.schema.json#'\n"))
	}
	return nil
}

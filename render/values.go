package render

import (
	"fmt"

	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
)

// ValuesOptions are the user's value sources, combined with Helm's precedence: files in
// order, then --set-json, --set, --set-string, --set-file (later wins).
type ValuesOptions struct {
	ValueFiles   []string // -f/--values
	JSONValues   []string // --set-json
	Values       []string // --set
	StringValues []string // --set-string
	FileValues   []string // --set-file
}

// LoadValues reads and merges the user's values exactly as `helm template` does. Remote value
// files (URLs) are not fetched.
func LoadValues(o ValuesOptions) (map[string]any, error) {
	opts := values.Options{
		ValueFiles:   o.ValueFiles,
		JSONValues:   o.JSONValues,
		Values:       o.Values,
		StringValues: o.StringValues,
		FileValues:   o.FileValues,
	}
	vals, err := opts.MergeValues(getter.Providers{})
	if err != nil {
		return nil, fmt.Errorf("loading values: %w", err)
	}
	return vals, nil
}

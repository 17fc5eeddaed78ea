package render

import (
	"bytes"
	"encoding/json"
	"fmt"

	yaml "go.yaml.in/yaml/v2"
)

// Manifest writes the rendered objects as a YAML stream, in the order `helm template` prints
// them: the RBLNClusterPolicy, then the RBLNDrivers (default first, then instances by key).
// Keys are sorted (the style of helm's toYaml); the output is byte-for-byte stable for the same
// result.
func Manifest(r *Result) ([]byte, error) {
	var buf bytes.Buffer
	docs := []any{&r.ClusterPolicy}
	for i := range r.Drivers {
		docs = append(docs, &r.Drivers[i])
	}
	for _, d := range docs {
		data, err := toYAML(d)
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", d, err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// toYAML encodes an API object as YAML with sorted keys. It goes through JSON, so the object's
// JSON tags (omitempty, omitzero) decide what is written, but decodes that JSON with
// encoding/json: sigs.k8s.io/yaml.Marshal re-parses it with the YAML parser, which made writing
// 500 RBLNDrivers cost three times their rendering.
func toYAML(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		return nil, err
	}
	return yaml.Marshal(tree)
}

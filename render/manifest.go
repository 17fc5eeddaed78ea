package render

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Manifest writes the rendered objects as a YAML stream, in the order `helm template` prints
// them: the RBLNClusterPolicy, then the RBLNDrivers (default first, then instances by key).
// The output is byte-for-byte stable for the same result.
func Manifest(r *Result) ([]byte, error) {
	var buf bytes.Buffer
	docs := []any{&r.ClusterPolicy}
	for i := range r.Drivers {
		docs = append(docs, &r.Drivers[i])
	}
	for _, d := range docs {
		data, err := yaml.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", d, err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

package output

import (
	"bytes"
	"encoding/json"
	"fmt"

	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

// MarshalYAML is v as sigs.k8s.io/yaml writes it (its JSON encoding, then YAML with sorted
// keys), for any string it holds: sigs.k8s.io/yaml re-reads its JSON with a YAML parser, which
// refuses the control characters JSON leaves unescaped (DEL, C1 controls such as U+0085) — a
// node name or a message from the cluster must not make `-o yaml` fail. The YAML emitter
// writes such a string double-quoted with escapes.
func MarshalYAML(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	doc, err = yamlNumbers(doc)
	if err != nil {
		return nil, err
	}
	return goyaml.Marshal(doc)
}

// yamlNumbers replaces JSON numbers by int64 or float64, as a YAML parser reads them.
func yamlNumbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", v, err)
		}
		return f, nil
	case map[string]any:
		for k, e := range v {
			n, err := yamlNumbers(e)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
	case []any:
		for i, e := range v {
			n, err := yamlNumbers(e)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
	}
	return v, nil
}

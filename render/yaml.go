package render

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// unmarshalValues reads a values file exactly as Helm does — sigs.k8s.io/yaml.Unmarshal into a
// map[string]any: YAML 1.1 through go-yaml v2, then the JSON types (numbers are float64) —
// read from a stream instead of a copy of the whole file, and without that function's JSON
// round trip (the document marshalled to JSON and decoded back), which holds several more
// copies of the file at once. TestUnmarshalValuesMatchesSigsYAML compares the two on the
// corpus and the corner cases (number types, invalid UTF-8, key types, NaN, empty documents).
func unmarshalValues(r io.Reader) (map[string]any, error) {
	var doc any
	// The first document, as Unmarshal reads it; a stream without one (empty, comments) is
	// the empty map, as Unmarshal leaves it. go-yaml turns an error of the reader into text:
	// it is returned as it is.
	in := &readErr{r: r}
	dec := yamlv2.NewDecoder(in)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		if in.err != nil {
			return nil, in.err
		}
		return nil, fmt.Errorf("error converting YAML to JSON: %w", err)
	}
	// Helm reads only the first document and drops the others without a word: values the user
	// wrote would be ignored. Empty documents (a trailing "---") are nothing to drop.
	for n := 2; ; n++ {
		var more any
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			break
		}
		if in.err != nil {
			return nil, in.err
		}
		if err != nil || more != nil {
			return nil, fmt.Errorf("the file holds more than one YAML document (document %d after a \"---\" line): Helm reads only the first and would ignore the rest; put all values in one document, or give each document as its own -f file", n)
		}
	}
	v, err := jsonValue(doc)
	if err != nil {
		return nil, fmt.Errorf("error converting YAML to JSON: %w", err)
	}
	switch m := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	}
	return nil, fmt.Errorf("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal %s into Go value of type map[string]interface {}", jsonKind(v))
}

// jsonValue is what a YAML value becomes through JSON: keys as strings (as sigs.k8s.io/yaml
// writes them), numbers as float64, invalid UTF-8 bytes as U+FFFD.
func jsonValue(v any) (any, error) {
	switch t := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			key, err := keyString(k, e)
			if err != nil {
				return nil, err
			}
			if m[key], err = jsonValue(e); err != nil {
				return nil, err
			}
		}
		return m, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			var err error
			if out[i], err = jsonValue(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case string:
		return validJSONString(t), nil
	case int:
		return float64(t), nil
	case int64:
		return float64(t), nil
	case uint64:
		return float64(t), nil
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(t, 'g', -1, 64))
		}
		return t, nil
	case bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("json: unsupported type: %s", reflect.TypeOf(v))
}

// keyString is sigs.k8s.io/yaml's conversion of a YAML map key to a JSON key.
func keyString(k, v any) (string, error) {
	switch t := k.(type) {
	case string:
		return validJSONString(t), nil
	case int:
		return strconv.Itoa(t), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	case float64:
		s := strconv.FormatFloat(t, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, nil
	case bool:
		return strconv.FormatBool(t), nil
	}
	return "", fmt.Errorf("unsupported map key of type: %s, key: %+#v, value: %+#v", reflect.TypeOf(k), k, v)
}

// validJSONString is s after encoding/json's round trip: each byte that is not part of a valid
// UTF-8 sequence becomes U+FFFD.
func validJSONString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

// jsonKind names a JSON value's type as encoding/json's errors do.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	}
	return "object"
}

// readErr remembers the first error of a reader other than io.EOF.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && e.err == nil {
		e.err = err
	}
	return n, err
}

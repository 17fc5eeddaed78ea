// Command crdrules writes the object-local rules of api/validation (DriverCRDValidation,
// ClusterPolicyCRDValidation) into the CRDs controller-gen generated: structural limits and
// x-kubernetes-validations CEL rules, so that the API server enforces them with the webhook
// away (docs/webhook.md "With the webhook away"). `make generate` runs it after controller-gen; test/generated checks that
// the committed CRDs are its output.
//
//	go run ./hack/crdrules config/crd/bases
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/validation"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdrules CRD_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crdrules:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	for file, v := range map[string]validation.CRDValidation{
		"rebellions.ai_rblndrivers.yaml":         validation.DriverCRDValidation(),
		"rebellions.ai_rblnclusterpolicies.yaml": validation.ClusterPolicyCRDValidation(),
	} {
		path := filepath.Join(dir, file)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, err := apply(data, v)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// apply writes v into the schema of every version of the CRD in data.
func apply(data []byte, v validation.CRDValidation) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(bytes.TrimPrefix(data, []byte("---\n")), &crd); err != nil {
		return nil, err
	}
	versions, _ := dig(crd, "spec", "versions").([]any)
	if len(versions) == 0 {
		return nil, errors.New("no versions")
	}
	for _, ver := range versions {
		root, ok := dig(ver, "schema", "openAPIV3Schema").(map[string]any)
		if !ok {
			return nil, errors.New("a version without an openAPIV3Schema")
		}
		for _, l := range v.Limits {
			if l.Declare {
				declare(root, l.Path)
			}
			s, err := schemaAt(root, l.Path)
			if err != nil {
				return nil, err
			}
			for key, n := range map[string]int64{"maxLength": l.MaxLength, "maxItems": l.MaxItems, "maxProperties": l.MaxProperties} {
				if n > 0 {
					s[key] = n
				}
			}
		}
		for _, r := range v.Rules {
			s, err := schemaAt(root, r.Path)
			if err != nil {
				return nil, err
			}
			rule := map[string]any{"rule": r.Rule}
			for key, val := range map[string]string{"message": r.Message, "messageExpression": r.MessageExpression, "reason": r.Reason, "fieldPath": r.FieldPath} {
				if val != "" {
					rule[key] = val
				}
			}
			if r.OptionalOldSelf {
				rule["optionalOldSelf"] = true
			}
			rules, _ := s["x-kubernetes-validations"].([]any)
			s["x-kubernetes-validations"] = append(rules, rule)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), out...), nil
}

// schemaAt is the schema at path below root: properties by name.
func schemaAt(root map[string]any, path []string) (map[string]any, error) {
	s := root
	for i, p := range path {
		next, ok := dig(s, "properties", p).(map[string]any)
		if p == "*" {
			next, ok = dig(s, "additionalProperties").(map[string]any)
			if !ok {
				next, ok = dig(s, "items").(map[string]any)
			}
		}
		if !ok {
			return nil, fmt.Errorf("no property %s in the schema", strings.Join(path[:i+1], "."))
		}
		s = next
	}
	return s, nil
}

// declare adds the string property at path when its parent does not declare it.
func declare(root map[string]any, path []string) {
	parent, err := schemaAt(root, path[:len(path)-1])
	if err != nil {
		return
	}
	props, _ := parent["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		parent["properties"] = props
	}
	if _, ok := props[path[len(path)-1]]; !ok {
		props[path[len(path)-1]] = map[string]any{"type": "string"}
	}
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

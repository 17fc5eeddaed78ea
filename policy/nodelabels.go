package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/util/validation"
)

// nodeLabelsKey is the METADATA custom entry in which a policy declares the node labels it
// reads in data.driverguard_cluster.nodes besides those driverguard keeps anyway (the
// operator's, and every RBLNDriver selector's keys): serve's cluster view keeps a node's
// other labels only when a policy declares them (docs/policy-authoring.md "Node labels").
const nodeLabelsKey = "nodeLabels"

// declaredNodeLabels returns the label keys the modules' METADATA custom.nodeLabels declare,
// sorted and without repeats, and a problem for each declaration that is not a list of label
// keys. Any scope declares them: the cluster view holds nodes for the whole policy set.
func declaredNodeLabels(modules map[string]*ast.Module) ([]string, []Problem) {
	var keys []string
	var problems []Problem
	for _, name := range sortedKeys(modules) {
		for _, a := range modules[name].Annotations {
			v, ok := a.Custom[nodeLabelsKey]
			if !ok {
				continue
			}
			list, ok := v.([]any)
			if !ok {
				problems = append(problems, problemAt(a.Location, "METADATA custom.%s must be a list of node label keys, e.g. `%s: [topology.kubernetes.io/zone]`; got %s", nodeLabelsKey, nodeLabelsKey, describeYAML(v)))
				continue
			}
			for i, item := range list {
				key, ok := item.(string)
				if !ok {
					problems = append(problems, problemAt(a.Location, "METADATA custom.%s[%d] must be a label key (a string), got %s", nodeLabelsKey, i, describeYAML(item)))
					continue
				}
				if errs := validation.IsQualifiedName(key); len(errs) > 0 {
					problems = append(problems, problemAt(a.Location, "METADATA custom.%s[%d] %q is not a label key: %s", nodeLabelsKey, i, key, strings.Join(errs, "; ")))
					continue
				}
				keys = append(keys, key)
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), problems
}

// describeYAML names what a METADATA value is, for a problem.
func describeYAML(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

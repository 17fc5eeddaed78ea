package policy

import (
	"fmt"
	"slices"
	"strings"
)

// configKey is the data document that configures the engine and the bundled library:
//
//	driverguard_config:
//	  disabled: [lib.max_parallel_upgrades]            # policies to turn off, by name
//	  allowed_registries: [repo.rebellions.ai, "*.corp.example"]  # lib.allowed_registries
//	  known_families: [atom, rebel, ca, cr]             # lib.family_in_image
//
// Put it in a data.yaml (or .json) file at the top of a policy directory; `opa test` reads
// the same file the same way.
const configKey = "driverguard_config"

// configFields are the keys driverguard_config may hold, each a list of strings.
var configFields = []string{"allowed_registries", "disabled", "known_families"}

// disabledFromConfig validates data.driverguard_config and returns its disabled list.
func disabledFromConfig(p *parsed) ([]string, []Problem) {
	raw, ok := p.data[configKey]
	if !ok {
		return nil, nil
	}
	at := func(format string, args ...any) Problem {
		return Problem{File: p.dataFiles[configKey], Message: fmt.Sprintf(format, args...)}
	}
	cfg, ok := raw.(map[string]any)
	if !ok {
		return nil, []Problem{at("%s must be an object with the keys %s", configKey, strings.Join(configFields, ", "))}
	}
	var problems []Problem
	var disabled []string
	for _, k := range sortedKeys(cfg) {
		if !slices.Contains(configFields, k) {
			problems = append(problems, at("%s.%s is not a setting: use one of %s (your own policies' settings belong in a data document of their own)", configKey, quoteName(k), strings.Join(configFields, ", ")))
			continue
		}
		list, ok := stringList(cfg[k])
		if !ok {
			problems = append(problems, at("%s.%s must be a list of strings", configKey, k))
			continue
		}
		if k == "disabled" {
			disabled = list
		}
	}
	return disabled, problems
}

func stringList(v any) ([]string, bool) {
	items, ok := v.([]any)
	if !ok {
		return nil, v == nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Origin says where a rendered field's value came from.
type Origin string

const (
	// OriginInstance: set on the instance itself (driver.instances.<key>.…).
	OriginInstance Origin = "instance"
	// OriginCleared: the instance removed an inherited value with null, [] or "".
	OriginCleared Origin = "cleared"
	// OriginValues: inherited from (or, for the default resource, set in) the user's driver.… values.
	OriginValues Origin = "values"
	// OriginChartDefault: inherited from the chart's own values.yaml.
	OriginChartDefault Origin = "chart-default"
)

// FieldOrigin is the provenance of one field of an RBLNDriver spec.
type FieldOrigin struct {
	// Field is the spec field, e.g. "version", "manager.version", "annotations[team]".
	Field string `json:"field"`
	// ValuesPath is the values path the value was read from (or cleared at).
	ValuesPath string `json:"valuesPath"`
	Origin     Origin `json:"origin"`
	// Value is the rendered value, compactly formatted ("" when cleared).
	Value string `json:"value,omitempty"`
}

// Provenance lists the origin of every rendered (or cleared) field of one RBLNDriver,
// sorted by field.
type Provenance []FieldOrigin

// Inherited reports whether the field came from the top-level driver block or the chart's
// defaults rather than from the instance.
func (f FieldOrigin) Inherited() bool {
	return f.Origin == OriginValues || f.Origin == OriginChartDefault
}

// mapFields are the driver fields that deep-merge; their provenance is tracked per leaf.
var mapFields = map[string]bool{"image": true, "manager": true, "smd": true, "resources": true, "annotations": true}

// provenance computes where each field of eff came from. inst is the raw instance block (nil
// for the default resource), user the user's own driver block (before chart defaults).
func provenance(eff, inst, userDriver map[string]any, instPath string) Provenance {
	var out Provenance
	origin := func(path []string) FieldOrigin {
		fo := FieldOrigin{Field: specField(path)}
		if inst != nil {
			if v, ok := lookup(inst, path...); ok {
				fo.ValuesPath = instPath + "." + strings.Join(path, ".")
				fo.Origin = OriginInstance
				if isEmpty(v) {
					fo.Origin = OriginCleared
				}
				return fo
			}
		}
		fo.ValuesPath = "driver." + strings.Join(path, ".")
		if v, ok := lookup(userDriver, path...); ok && v != nil {
			fo.Origin = OriginValues
		} else {
			fo.Origin = OriginChartDefault
		}
		return fo
	}
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		if m, ok := v.(map[string]any); ok && len(path) > 0 && mapFields[path[0]] && !(path[0] == "resources" && len(path) == 2 && path[1] == "claims") {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				walk(m[k], append(append([]string(nil), path...), k))
			}
			return
		}
		if !isEmpty(v) {
			fo := origin(path)
			fo.Value = formatValue(v)
			out = append(out, fo)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(eff)) {
		walk(eff[k], []string{k})
	}
	// Values the instance removed with null, [] or "" that would otherwise be inherited.
	if inst != nil {
		var cleared func(v any, path []string)
		cleared = func(v any, path []string) {
			if m, ok := v.(map[string]any); ok {
				for _, k := range slices.Sorted(maps.Keys(m)) {
					cleared(m[k], append(append([]string(nil), path...), k))
				}
				return
			}
			if !isEmpty(v) {
				return
			}
			out = append(out, FieldOrigin{Field: specField(path), ValuesPath: instPath + "." + strings.Join(path, "."), Origin: OriginCleared})
		}
		for _, k := range slices.Sorted(maps.Keys(inst)) {
			if k != "nodeSelector" {
				cleared(inst[k], []string{k})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return dedupe(out)
}

// formatValue renders a values node compactly: strings as they are, anything else as JSON.
func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func dedupe(p Provenance) Provenance {
	out := p[:0]
	for i, f := range p {
		if i > 0 && f.Field == p[i-1].Field {
			continue
		}
		out = append(out, f)
	}
	return out
}

// specField names the RBLNDriver spec field a values path renders to.
var imageField = map[string]string{"registry": "registry", "repository": "image", "tag": "version", "pullPolicy": "imagePullPolicy"}

func specField(path []string) string {
	switch {
	case path[0] == "image" && len(path) == 2:
		return imageField[path[1]]
	case path[0] == "image":
		return "image"
	case (path[0] == "manager" || path[0] == "smd") && len(path) == 3 && path[1] == "image":
		return path[0] + "." + imageField[path[2]]
	case path[0] == "manager" || path[0] == "smd":
		return path[0]
	case path[0] == "annotations" && len(path) == 2:
		return "annotations[" + path[1] + "]"
	}
	return strings.Join(path, ".")
}

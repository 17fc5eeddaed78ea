package render

import (
	"slices"
	"strings"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// ValuesLocation is where the user wrote the value an object, or one of its fields, was
// rendered from.
type ValuesLocation struct {
	// Path is the values path, e.g. driver.instances.canary.nodeSelector.
	Path string
	// Location is where Path was written; Found is false when no source wrote it (a chart
	// default, values given as a map in Go, or a values file too large to index).
	Location
	Found bool
}

// LocateValues returns where the user wrote the values the named object's field came from:
// the field's own key (on the instance, else the driver block it inherits from), else the
// object's key (driver.instances.<key>, driver for the default RBLNDriver,
// driver.upgradePolicy for the RBLNClusterPolicy). field is the object's field path as
// findings name it ("spec.nodeSelector", "spec.version", "" for the object as a whole). The
// path is that of the object's key, not Found, when the user wrote neither.
func (r *Result) LocateValues(kind, name, field string) ValuesLocation {
	var base []string
	inherits := false
	switch kind {
	case "RBLNClusterPolicy":
		base = []string{"driver", "upgradePolicy"}
		field = strings.TrimPrefix(strings.TrimPrefix(field, "spec.driver.upgradePolicy"), ".")
	case "RBLNDriver":
		key, ok := r.InstanceKeys[name]
		if !ok {
			return ValuesLocation{}
		}
		base = []string{"driver"}
		if key != "" {
			base, inherits = []string{"driver", "instances", key}, true
		}
	default:
		return ValuesLocation{}
	}
	var candidates [][]string
	if sub := valuesSubPath(kind, field); len(sub) > 0 {
		candidates = append(candidates, join(base, sub))
		if inherits && !isNotInherited(sub[0]) {
			candidates = append(candidates, join([]string{"driver"}, sub))
		}
	}
	candidates = append(candidates, base)
	for _, c := range candidates {
		if loc, ok := r.sources.Locate(c...); ok {
			return ValuesLocation{Path: joinPath(c), Location: loc, Found: true}
		}
	}
	return ValuesLocation{Path: joinPath(base)}
}

// LocateWarning returns where the user wrote the values a render warning is about: its
// path, else the object's key.
func (r *Result) LocateWarning(w Warning) ValuesLocation {
	if path := splitPath(w.Path); len(path) > 0 {
		if loc, ok := r.sources.Locate(path...); ok {
			return ValuesLocation{Path: w.Path, Location: loc, Found: true}
		}
	}
	kind := "RBLNDriver"
	if w.Resource == v1alpha1.ClusterPolicyName {
		kind = "RBLNClusterPolicy"
	}
	return r.LocateValues(kind, w.Resource, "")
}

// LocatePath returns where the user wrote the value at a values path as field errors print
// it (driver.instances.canary.nodeSelector[env]), else its nearest written ancestor; for
// values that did not render.
func (s *Sources) LocatePath(path string) ValuesLocation {
	segs := splitPath(path)
	for n := len(segs); n > 0; n-- {
		if loc, ok := s.Locate(segs[:n]...); ok {
			return ValuesLocation{Path: joinPath(segs[:n]), Location: loc, Found: true}
		}
	}
	return ValuesLocation{Path: path}
}

// valuesSubPath is the values path, below the object's key, of an object's field as a
// finding names it: the inverse of specField (spec.version → image.tag,
// spec.nodeSelector[env] → nodeSelector.env).
func valuesSubPath(kind, field string) []string {
	if kind == "RBLNDriver" {
		var ok bool
		if field, ok = strings.CutPrefix(field, "spec."); !ok {
			return nil
		}
	}
	segs := splitPath(field)
	if len(segs) == 0 {
		return nil
	}
	if kind != "RBLNDriver" {
		return segs
	}
	image := func(prefix []string, leaf string) []string {
		for values, spec := range imageField {
			if spec == leaf {
				return append(prefix, "image", values)
			}
		}
		return nil
	}
	switch {
	case len(segs) == 1 && segs[0] == "image":
		return []string{"image", "repository"}
	case len(segs) == 1:
		if p := image(nil, segs[0]); p != nil {
			return p
		}
	case len(segs) == 2 && (segs[0] == "manager" || segs[0] == "smd"):
		if segs[1] == "image" {
			return []string{segs[0], "image", "repository"}
		}
		if p := image([]string{segs[0]}, segs[1]); p != nil {
			return p
		}
	}
	return segs
}

func isNotInherited(key string) bool { return slices.Contains(notInherited, key) }

func join(a, b []string) []string { return append(append([]string(nil), a...), b...) }

// joinPath writes a values path: keys joined with '.', a key holding '.' (a label key) in
// brackets, as field errors print it.
func joinPath(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		switch {
		case strings.ContainsAny(s, ".[]"):
			b.WriteString("[" + s + "]")
		case i > 0:
			b.WriteString("." + s)
		default:
			b.WriteString(s)
		}
	}
	return b.String()
}

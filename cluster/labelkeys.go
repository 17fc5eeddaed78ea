package cluster

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unique"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// LabelKeys are the node label keys the cluster view keeps: those a decision can read. A
// node's other labels (the kubelet's, the cloud's, NFD's CPU and PCI features: most of its
// sixty-odd) are dropped when it is read, so a node costs its name and a handful of labels,
// whatever the fleet labels it with (docs/sizing.md).
//
// The keys are operator.NodeLabels (what rbln-npu-operator reads: scope, family, NFD's OS and
// kernel, RDS, owner), the keys of every RBLNDriver's nodeSelector, and the keys policies
// declare (METADATA custom.nodeLabels, docs/policy-authoring.md). The set only grows: a key
// no driver selects any more stays until the process restarts.
//
// Kept labels are interned: their keys and values are shared strings, and nodes whose kept
// labels are equal share one map (a fleet has a few dozen distinct combinations, however many
// nodes). The maps Keep returns are shared: never modify one.
//
// A LabelKeys is safe for concurrent use.
type LabelKeys struct {
	keys atomic.Pointer[keySet]

	mu   sync.Mutex                   // guards the fields below and serialises Add
	sets map[string]map[string]string // the shared maps, by their encoding
	// live is the number of shared maps in use at the last Sweep: the table is swept once
	// it holds twice that (and a margin).
	live int
	// added[v-1] are the keys version v added.
	added [][]string
}

// keySet is one version of the keys: version counts the Adds that kept new keys.
type keySet struct {
	set     map[string]struct{}
	version int64
}

// NewLabelKeys returns the set of operator.NodeLabels and keys.
func NewLabelKeys(keys ...string) *LabelKeys {
	k := &LabelKeys{sets: map[string]map[string]string{}}
	set := make(map[string]struct{}, len(operator.NodeLabels)+len(keys))
	for _, key := range slices.Concat(operator.NodeLabels, keys) {
		set[unique.Make(key).Value()] = struct{}{}
	}
	k.keys.Store(&keySet{set: set})
	return k
}

// Has reports whether key is kept.
func (k *LabelKeys) Has(key string) bool {
	_, ok := k.keys.Load().set[key]
	return ok
}

// Missing returns the keys of keys that are not kept, in their order, without repeats.
func (k *LabelKeys) Missing(keys []string) []string {
	set := k.keys.Load().set
	var out []string
	for _, key := range keys {
		if _, ok := set[key]; !ok && !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out
}

// Add keeps keys from now on and returns those that were not kept before, sorted. Nodes
// read before keep none of them: the caller reads them again (see Informed).
func (k *LabelKeys) Add(keys ...string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	cur := k.keys.Load()
	old := cur.set
	var added []string
	for _, key := range keys {
		if _, ok := old[key]; !ok && !slices.Contains(added, key) {
			added = append(added, key)
		}
	}
	if len(added) == 0 {
		return nil
	}
	next := maps.Clone(old)
	for _, key := range added {
		next[unique.Make(key).Value()] = struct{}{}
	}
	slices.Sort(added)
	k.added = append(k.added, added)
	k.keys.Store(&keySet{set: next, version: cur.version + 1})
	return added
}

// Version counts the Adds that kept new keys: labels kept at version v lack the keys added
// after it (AddedSince).
func (k *LabelKeys) Version() int64 { return k.keys.Load().version }

// AddedSince returns the keys added after version v.
func (k *LabelKeys) AddedSince(v int64) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if v < 0 {
		v = 0
	}
	var out []string
	for _, keys := range k.added[min(int(v), len(k.added)):] {
		out = append(out, keys...)
	}
	return out
}

// withKeysOf returns labels with the values from holds for keys (the shared map of the
// result): how a node kept before keys were added takes them from a newer read.
func (k *LabelKeys) withKeysOf(labels, from map[string]string, keys []string) map[string]string {
	var merged map[string]string
	for _, key := range keys {
		if v, ok := from[key]; ok {
			if merged == nil {
				merged = maps.Clone(labels)
				if merged == nil {
					merged = map[string]string{}
				}
			}
			merged[key] = v
		}
	}
	if merged == nil {
		return labels
	}
	return k.Keep(merged)
}

// Keep returns the labels whose keys are kept, as a shared map (nil when none is kept).
func (k *LabelKeys) Keep(labels map[string]string) map[string]string {
	m, _ := k.keep(labels)
	return m
}

// keep is Keep, with the version of the keys it kept.
func (k *LabelKeys) keep(labels map[string]string) (map[string]string, int64) {
	ks := k.keys.Load()
	if len(labels) == 0 {
		return nil, ks.version
	}
	var buf [16][2]string
	kept := buf[:0]
	for key, v := range labels {
		if _, ok := ks.set[key]; ok {
			kept = append(kept, [2]string{key, v})
		}
	}
	if len(kept) == 0 {
		return nil, ks.version
	}
	slices.SortFunc(kept, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var enc strings.Builder
	for _, kv := range kept {
		// Label keys and values hold no NUL (the API server validates them).
		enc.WriteString(kv[0])
		enc.WriteByte(0)
		enc.WriteString(kv[1])
		enc.WriteByte(0)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if m, ok := k.sets[enc.String()]; ok {
		return m, ks.version
	}
	m := make(map[string]string, len(kept))
	for _, kv := range kept {
		m[unique.Make(kv[0]).Value()] = unique.Make(kv[1]).Value()
	}
	k.sets[enc.String()] = m
	return m, ks.version
}

// Sweep forgets the shared maps no node uses any more, given every map in use (repeats
// allowed). It does nothing until the table holds twice the maps in use at the last sweep
// (and 1,024 more): it costs one pass over the nodes, not one per change.
func (k *LabelKeys) Sweep(inUse func(yield func(map[string]string) bool)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.sets) < 2*k.live+1024 {
		return
	}
	keep := make(map[string]map[string]string, k.live)
	ids := map[uintptr]bool{}
	for m := range inUse {
		if m != nil {
			ids[mapID(m)] = true
		}
	}
	for enc, m := range k.sets {
		if ids[mapID(m)] {
			keep[enc] = m
		}
	}
	k.sets, k.live = keep, len(keep)
}

// mapID is the identity of a map.
func mapID(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }

// SelectorKeys are the keys of the drivers' nodeSelectors.
func SelectorKeys(drivers []v1alpha1.RBLNDriver) []string {
	var out []string
	for i := range drivers {
		for key := range drivers[i].Spec.NodeSelector {
			out = append(out, key)
		}
	}
	return out
}

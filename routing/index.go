package routing

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"sync"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// Index is a routing snapshot of drivers and nodes, built once by [NewIndex] and queried
// many times ([Index.Route], [Index.Conflicts]). It is immutable after construction and safe
// for concurrent use. It keeps references to the input label maps and driver objects, which
// must not be modified while the Index is in use.
//
// Nodes are grouped by their values for the keys that appear in some valid selector: every
// node of a group matches the same drivers, so the owner is decided once per group, not once
// per node. Matching drivers are found from an inverted index (selector key=value → drivers),
// so building costs O(nodes × relevant labels + groups × matching postings), not
// O(nodes × drivers × selector size).
type Index struct {
	drivers []driver         // valid drivers, sorted by name
	byName  map[string]int32 // valid driver name → index in drivers
	invalid []Invalid        // sorted by name

	keys          []string              // every key used by a valid selector, sorted
	keyIdx        map[string]int        // key → index in keys
	driverPosting map[labelPair][]int32 // selector pair → drivers that contain it, ascending
	emptySel      []int32               // drivers with an empty selector, ascending
	words         int                   // uint64 words of a key bitset
	keyDrivers    [][]uint64            // per key index, the bitset of drivers whose selector has it

	opts Options

	nodes      []Node  // sorted by name
	nodeGroup  []int32 // group of each node, -1 when out of scope
	nodePool   []int32 // index into pools of each candidate node, -1 when out of scope
	pools      []nodePool
	groups     []group
	candidates []int32 // indices of candidate nodes, ascending

	postingsOnce sync.Once
	postings     map[labelPair][]int32 // candidate nodes by label pair, ascending (lazy)
	// groupPostings are the groups by the label pairs of their keys (indexGroups).
	groupPostings map[labelPair][]int32

	// active, when not nil, says which drivers take part in routing (a [Cluster]'s index holds
	// every driver that may ever be applied, most of them inactive at any one time). The
	// groups' owner and tied fields are then not computed; decisions resolve groups live.
	active []bool
}

type labelPair struct{ key, value string }

type driver struct {
	obj  *v1alpha1.RBLNDriver
	name string
	sel  []labelPair // sorted by key
	keys []uint64    // bitset over Index.keys
	n    int         // len(sel)
}

type group struct {
	kvs     []keyValue // the relevant labels every node of the group carries, by key index
	matches []int32    // matching drivers, ascending
	owner   int32      // unique most specific driver, -1 when none or tied
	tied    []int32    // maximal matching drivers when tied, ascending
	tiedKey string     // canonical encoding of tied
	members groupMembers
}

// NewIndex builds an Index. The drivers rbln-npu-operator leaves out of routing are recorded
// (see [Result.Invalid]) and ignored.
func NewIndex(drivers []v1alpha1.RBLNDriver, nodes []Node, opts Options) *Index {
	return newIndex(drivers, slices.Clone(nodes), opts)
}

// NewIndexOwning is NewIndex taking ownership of nodes: it sorts the slice in place and keeps
// it (see Nodes) instead of a copy, which at 100,000 nodes is 2.4 MB per index.
func NewIndexOwning(drivers []v1alpha1.RBLNDriver, nodes []Node, opts Options) *Index {
	return newIndex(drivers, nodes, opts)
}

// Nodes returns every node, sorted by name (then labels); read it only.
func (ix *Index) Nodes() []Node { return ix.nodes }

func newIndex(drivers []v1alpha1.RBLNDriver, nodes []Node, opts Options) *Index {
	ix := &Index{opts: opts}
	ix.addDrivers(drivers)
	ix.addNodes(nodes)
	return ix
}

// excluded says why the operator leaves d out of routing (operator.Excluded), nil when d
// takes part. Only the operator's own rules count: a driver driverguard's validation refuses
// (the webhook denies it) still routes if it was stored.
func excluded(d *v1alpha1.RBLNDriver) *Invalid {
	e := operator.Excluded(d.Name, d.Spec.NodeSelector, d.DeletionTimestamp != nil)
	switch {
	case e == nil:
		return nil
	case e.Deleting:
		return &Invalid{Resource: d.Name, Reason: ReasonBeingDeleted, Message: "it is being deleted: rbln-npu-operator routes no node to it"}
	}
	return &Invalid{Resource: d.Name, Reason: ReasonInvalidSpec, Message: e.Message + ": rbln-npu-operator routes no node to it (InvalidSpec)"}
}

func (ix *Index) addDrivers(in []v1alpha1.RBLNDriver) {
	order := make([]*v1alpha1.RBLNDriver, len(in))
	for i := range in {
		order[i] = &in[i]
	}
	slices.SortStableFunc(order, func(a, b *v1alpha1.RBLNDriver) int { return strings.Compare(a.Name, b.Name) })

	ix.byName = make(map[string]int32)
	ix.invalid = []Invalid{}
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && order[j].Name == order[i].Name {
			j++
		}
		d := order[i]
		var inv *Invalid
		if j-i > 1 && !sameSpecs(order[i:j]) {
			// Which copy is first depends on the input order, so report only the duplicate.
			errs := field.ErrorList{field.Duplicate(field.NewPath("metadata", "name"),
				fmt.Sprintf("%s (%d RBLNDrivers share this name with different specs; keep one)", d.Name, j-i))}
			inv = &Invalid{Resource: d.Name, Reason: ReasonInvalidSpec, Message: errs.ToAggregate().Error(), Errors: errs}
		} else {
			inv = excluded(d)
		}
		if inv != nil {
			ix.invalid = append(ix.invalid, *inv)
		} else {
			ix.byName[d.Name] = int32(len(ix.drivers))
			ix.drivers = append(ix.drivers, driver{obj: d, name: d.Name, sel: selectorPairs(d.Spec.NodeSelector)})
		}
		i = j
	}
	ix.indexDrivers()
}

// newSlotIndex indexes nodes and every routable driver of drivers as its own slot, names
// repeating allowed (a stored driver and its update), all inactive: the index of a [Cluster].
// The drivers the operator leaves out are left out; they can never take part in routing.
func newSlotIndex(drivers []*v1alpha1.RBLNDriver, nodes []Node, opts Options) (ix *Index, slotOf map[*v1alpha1.RBLNDriver]int32) {
	order := slices.Clone(drivers)
	slices.SortStableFunc(order, func(a, b *v1alpha1.RBLNDriver) int { return strings.Compare(a.Name, b.Name) })
	ix = &Index{byName: map[string]int32{}, invalid: []Invalid{}, opts: opts}
	slotOf = make(map[*v1alpha1.RBLNDriver]int32, len(order))
	for _, d := range order {
		if excluded(d) != nil {
			continue
		}
		slotOf[d] = int32(len(ix.drivers))
		ix.drivers = append(ix.drivers, driver{obj: d, name: d.Name, sel: selectorPairs(d.Spec.NodeSelector)})
	}
	ix.indexDrivers()
	ix.active = make([]bool, len(ix.drivers))
	ix.addNodes(slices.Clone(nodes))
	ix.ensurePostings()
	return ix, slotOf
}

// indexDrivers builds the key set, the key bitsets and the postings of ix.drivers.
func (ix *Index) indexDrivers() {
	ix.keyIdx = make(map[string]int)
	for _, d := range ix.drivers {
		for _, p := range d.sel {
			ix.keyIdx[p.key] = 0
		}
	}
	ix.keys = make([]string, 0, len(ix.keyIdx))
	for k := range ix.keyIdx {
		ix.keys = append(ix.keys, k)
	}
	slices.Sort(ix.keys)
	for i, k := range ix.keys {
		ix.keyIdx[k] = i
	}
	ix.words = (len(ix.keys) + 63) / 64
	ix.driverPosting = make(map[labelPair][]int32)
	for di := range ix.drivers {
		d := &ix.drivers[di]
		d.n = len(d.sel)
		d.keys = make([]uint64, ix.words)
		for _, p := range d.sel {
			ki := ix.keyIdx[p.key]
			d.keys[ki/64] |= 1 << (ki % 64)
			ix.driverPosting[p] = append(ix.driverPosting[p], int32(di))
		}
		if d.n == 0 {
			ix.emptySel = append(ix.emptySel, int32(di))
		}
	}
	dwords := (len(ix.drivers) + 63) / 64
	ix.keyDrivers = make([][]uint64, len(ix.keys))
	for ki := range ix.keyDrivers {
		ix.keyDrivers[ki] = make([]uint64, dwords)
	}
	for di := range ix.drivers {
		for _, p := range ix.drivers[di].sel {
			ki := ix.keyIdx[p.key]
			ix.keyDrivers[ki][di/64] |= 1 << (di % 64)
		}
	}
}

func sameSpecs(ds []*v1alpha1.RBLNDriver) bool {
	for _, d := range ds[1:] {
		if !apiequality.Semantic.DeepEqual(ds[0].Spec, d.Spec) {
			return false
		}
	}
	return true
}

func selectorPairs(sel map[string]string) []labelPair {
	out := make([]labelPair, 0, len(sel))
	for k, v := range sel {
		out = append(out, labelPair{k, v})
	}
	slices.SortFunc(out, func(a, b labelPair) int { return strings.Compare(a.key, b.key) })
	return out
}

// keyValue is one relevant label of a node: index into Index.keys and value.
type keyValue struct {
	k int
	v string
}

// addNodes indexes nodes, which it takes and sorts.
func (ix *Index) addNodes(in []Node) {
	ix.nodes = in
	slices.SortStableFunc(ix.nodes, compareNodes)
	ix.nodeGroup = make([]int32, len(ix.nodes))

	groupOf := make(map[string]int32)
	counts := make([]int32, len(ix.drivers))
	var (
		buf []byte
		kvs []keyValue
	)
	for i := range ix.nodes {
		labels := ix.nodes[i].Labels
		if !operator.InScope(labels) {
			ix.nodeGroup[i] = -1
			continue
		}
		ix.candidates = append(ix.candidates, int32(i))
		kvs = ix.relevant(labels, kvs[:0])
		buf = buf[:0]
		for _, kv := range kvs {
			buf = binary.AppendUvarint(buf, uint64(kv.k))
			buf = binary.AppendUvarint(buf, uint64(len(kv.v)))
			buf = append(buf, kv.v...)
		}
		gi, ok := groupOf[string(buf)]
		if !ok {
			gi = int32(len(ix.groups))
			groupOf[string(buf)] = gi
			g := ix.newGroup(kvs, counts)
			g.kvs = slices.Clone(kvs)
			ix.groups = append(ix.groups, g)
		}
		ix.nodeGroup[i] = gi
	}
	ix.addNodePools()
	ix.indexGroups()
}

// addNodePools composes every candidate node's pool once (routing a node then reads an array,
// not four labels of its map); equal pools share an entry. Nodes with the same pool labels
// share one composition: a fleet has a few dozen distinct combinations, however many nodes.
func (ix *Index) addNodePools() {
	ix.nodePool = make([]int32, len(ix.nodes))
	byLabels := map[poolLabels]int32{}
	for i := range ix.nodePool {
		ix.nodePool[i] = -1
	}
	for _, n := range ix.candidates {
		key := poolLabelsOf(ix.nodes[n].Labels, ix.opts.RDS)
		if pi, ok := byLabels[key]; ok {
			ix.nodePool[n] = pi
			continue
		}
		pl, err := operator.PoolOf(ix.nodes[n].Labels, ix.opts.RDS)
		pi := int32(len(ix.pools))
		byLabels[key] = pi
		ix.nodePool[n] = pi
		ix.pools = append(ix.pools, nodePool{pool: pl, err: err})
	}
}

// poolLabels are the labels operator.PoolOf reads, each with whether it is present: nodes
// with equal poolLabels compose the same pool.
type poolLabels struct {
	osID, osVersion, kernel, family string
	present                         uint8 // bit i: label i of osID, osVersion, kernel, family
	rds                             bool
}

func poolLabelsOf(labels map[string]string, rds bool) poolLabels {
	var k poolLabels
	for i, f := range [...]struct {
		key string
		v   *string
	}{{operator.LabelOSID, &k.osID}, {operator.LabelOSVersion, &k.osVersion}, {operator.LabelKernel, &k.kernel}, {operator.LabelFamily, &k.family}} {
		if v, ok := labels[f.key]; ok {
			*f.v, k.present = v, k.present|1<<i
		}
	}
	k.rds = rds && labels[operator.LabelRDSPresent] == operator.DeployDriverTrue
	return k
}

// groupValue is the value of key index ki that every node of g carries.
func (g *group) value(ki int) (string, bool) {
	i, ok := slices.BinarySearchFunc(g.kvs, ki, func(kv keyValue, k int) int { return cmp.Compare(kv.k, k) })
	if !ok {
		return "", false
	}
	return g.kvs[i].v, true
}

// relevant appends the node's labels whose keys appear in some valid selector, ordered by key
// index. It walks whichever is smaller: the node's labels or the relevant keys.
func (ix *Index) relevant(labels map[string]string, kvs []keyValue) []keyValue {
	if len(labels) < len(ix.keys) {
		for k, v := range labels {
			if ki, ok := ix.keyIdx[k]; ok {
				kvs = append(kvs, keyValue{ki, v})
			}
		}
		slices.SortFunc(kvs, func(a, b keyValue) int { return cmp.Compare(a.k, b.k) })
		return kvs
	}
	for ki, k := range ix.keys {
		if v, ok := labels[k]; ok {
			kvs = append(kvs, keyValue{ki, v})
		}
	}
	return kvs
}

// newGroup finds the drivers matching a node with the given relevant labels by counting, per
// driver, how many of its selector pairs the node has. counts is scratch space, left zeroed.
func (ix *Index) newGroup(kvs []keyValue, counts []int32) group {
	matches := slices.Clone(ix.emptySel)
	var touched []int32
	for _, kv := range kvs {
		for _, d := range ix.driverPosting[labelPair{ix.keys[kv.k], kv.v}] {
			if counts[d] == 0 {
				touched = append(touched, d)
			}
			counts[d]++
		}
	}
	for _, d := range touched {
		if int(counts[d]) == ix.drivers[d].n {
			matches = append(matches, d)
		}
		counts[d] = 0
	}
	slices.Sort(matches)
	g := group{matches: matches, owner: -1}
	if ix.active != nil {
		return g // resolved live, against the drivers active at the time
	}
	g.owner, g.tied = ix.resolve(matches)
	if g.tied != nil {
		g.tiedKey = encodeInts(g.tied)
	}
	return g
}

// resolve picks the owner among drivers that all match one node: the one whose selector is a
// strict superset of every other. All of them agree on the node's values, so comparing key
// sets is comparing selectors. Without a unique strict maximum it returns the maximal
// drivers (the tied set).
func (ix *Index) resolve(matches []int32) (owner int32, tied []int32) {
	switch len(matches) {
	case 0:
		return -1, nil
	case 1:
		return matches[0], nil
	}
	union := make([]uint64, ix.words)
	for _, d := range matches {
		for w, x := range ix.drivers[d].keys {
			union[w] |= x
		}
	}
	size := 0
	for _, x := range union {
		size += bits.OnesCount64(x)
	}
	owner, top := int32(-1), 0
	for _, d := range matches {
		if ix.drivers[d].n == size {
			owner, top = d, top+1
		}
	}
	if top == 1 {
		return owner, nil
	}
	for _, d := range matches {
		dd := &ix.drivers[d]
		maximal := true
		for _, e := range matches {
			if ee := &ix.drivers[e]; ee.n > dd.n && subset(dd.keys, ee.keys) {
				maximal = false
				break
			}
		}
		if maximal {
			tied = append(tied, d)
		}
	}
	return -1, tied
}

func subset(a, b []uint64) bool {
	for i, x := range a {
		if x&^b[i] != 0 {
			return false
		}
	}
	return true
}

func encodeInts(xs []int32) string {
	var b []byte
	for _, x := range xs {
		b = binary.AppendUvarint(b, uint64(x))
	}
	return string(b)
}

// live reports whether driver d takes part in routing.
func (ix *Index) live(d int32) bool { return ix.active == nil || ix.active[d] }

func (g *group) has(d int32) bool {
	_, ok := slices.BinarySearch(g.matches, d)
	return ok
}

// ensurePostings indexes candidate nodes by every label pair, for Conflicts.
func (ix *Index) ensurePostings() {
	ix.postingsOnce.Do(func() {
		ix.postings = make(map[labelPair][]int32)
		for _, i := range ix.candidates {
			for k, v := range ix.nodes[i].Labels {
				p := labelPair{k, v}
				ix.postings[p] = append(ix.postings[p], i)
			}
		}
	})
}

// compareNodes orders by name, then (for duplicate names only) by labels, so the order never
// depends on the input order.
func compareNodes(a, b Node) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return compareLabels(a.Labels, b.Labels)
}

func compareLabels(a, b map[string]string) int {
	ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if c := strings.Compare(ka[i], kb[i]); c != 0 {
			return c
		}
		if c := strings.Compare(a[ka[i]], b[kb[i]]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(ka), len(kb))
}

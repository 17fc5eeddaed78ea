package render

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v2"
)

// TestSortedKeysMatchesYAML: a tree with its keys sorted ahead is written byte for byte as
// go-yaml writes the tree, which sorts them itself.
func TestSortedKeysMatchesYAML(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// go-yaml's comparator is not transitive when digits meet other characters at the first
	// difference ("2npu" < "110" < "2210" < "2npu"): its own order then depends on the map's
	// iteration order, run to run. Keys here are a name and an optional number, as
	// annotation and label keys are.
	parts := []string{"a", "b", "Z", "k", "-", ".", "/", "_", "é", "Ω", "rebellions.ai/", "npu", " ", "ä"}
	key := func() string {
		var s string
		for range 1 + rng.IntN(4) {
			s += parts[rng.IntN(len(parts))]
		}
		if rng.IntN(2) == 0 {
			s += fmt.Sprint(rng.IntN(1000))
		}
		return s
	}
	var tree func(depth int) any
	tree = func(depth int) any {
		switch n := rng.IntN(6); {
		case depth > 3 || n == 0:
			return fmt.Sprint(rng.IntN(100))
		case n == 1:
			return nil
		case n == 2:
			l := make([]any, rng.IntN(4))
			for i := range l {
				l[i] = tree(depth + 1)
			}
			return l
		}
		m := map[string]any{}
		for range rng.IntN(12) {
			m[key()] = tree(depth + 1)
		}
		return m
	}
	compared := 0
	for range 200 {
		v := tree(0)
		want, err := yaml.Marshal(v)
		require.NoError(t, err)
		stable := true
		for range 5 {
			again, err := yaml.Marshal(v)
			require.NoError(t, err)
			stable = stable && string(again) == string(want)
		}
		if !stable {
			continue
		}
		got, err := yaml.Marshal(sortedKeys(v))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		compared++
	}
	t.Logf("%d trees compared", compared)
	require.Greater(t, compared, 50, "trees compared")
}

// TestMarshalYAMLInParts: large maps and lists written in parts give go-yaml's bytes for the
// whole: indentation, quoting, folding of long values, explicit keys.
func TestMarshalYAMLInParts(t *testing.T) {
	defer func(n int) { chunkEntries = n }(chunkEntries)
	chunkEntries = 3
	long := strings.Repeat("word ", 40)
	values := []any{"v", "3.10", "true", "", "multi\nline\n", long, "x: y", "- a", float64(7), true, nil, "é", "#c", strings.Repeat("k", 200)}
	rng := rand.New(rand.NewPCG(5, 6))
	var tree func(depth int) any
	tree = func(depth int) any {
		switch n := rng.IntN(5); {
		case depth > 3 || n == 0:
			return values[rng.IntN(len(values))]
		case n == 1:
			l := make([]any, rng.IntN(9))
			for i := range l {
				l[i] = tree(depth + 1)
			}
			return l
		}
		m := map[string]any{}
		keys := []string{"spec", "annotations", "tolerations", "a", "b", "on", "y", "null", "Key", "rebellions.ai/x", strings.Repeat("q", 130), "k1", "k10", "k2"}
		for range rng.IntN(10) {
			m[keys[rng.IntN(len(keys))]] = tree(depth + 1)
		}
		return m
	}
	parted := 0
	for range 500 {
		v := sortedKeys(tree(0))
		want, err := yaml.Marshal(v)
		require.NoError(t, err)
		got, err := marshalYAML(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		if _, changed, _ := writeLarge(v, nil, map[string][]byte{}); changed {
			parted++
		}
	}
	require.Greater(t, parted, 100, "trees written in parts")
}

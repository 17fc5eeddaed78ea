package decode

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const nodeList = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a, labels: {x: "1"}}
- apiVersion: v1
  kind: Node
  metadata: {name: b}
`

const nodeStream = `apiVersion: v1
kind: Node
metadata: {name: a}
---
# a comment-only document is skipped
---
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "b"}}
`

func TestNodes(t *testing.T) {
	for name, in := range map[string]string{
		"v1 List":  nodeList,
		"stream":   nodeStream,
		"NodeList": "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: a}\n- metadata: {name: b}\n",
		"JSON List (kubectl -o json)": `{
    "apiVersion": "v1",
    "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", "labels": {"x": "1"}}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "b"}}
    ],
    "kind": "List"
}`,
		"JSON that is YAML too": "{apiVersion: v1, kind: List, items: [{kind: Node, metadata: {name: a}}, {kind: Node, metadata: {name: b}}]}",
	} {
		t.Run(name, func(t *testing.T) {
			docs, err := Documents(strings.NewReader(in), "nodes.yaml")
			require.NoError(t, err)
			nodes, err := Nodes(docs)
			require.NoError(t, err)
			require.Len(t, nodes, 2)
			assert.Equal(t, "a", nodes[0].Name)
			assert.Equal(t, "b", nodes[1].Name)
		})
	}
}

func TestNodesRejectsOtherKinds(t *testing.T) {
	docs, err := Documents(strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"), "nodes.yaml")
	require.NoError(t, err)
	_, err = Nodes(docs)
	require.ErrorContains(t, err, `nodes.yaml#1: expected a Node, got kind "Pod"`)
}

func TestDriversSkipsOtherKinds(t *testing.T) {
	in := `apiVersion: rebellions.ai/v1alpha1
kind: RBLNClusterPolicy
metadata: {name: rbln-cluster-policy}
---
apiVersion: rebellions.ai/v1alpha1
kind: RBLNDriver
metadata: {name: rbln-driver}
spec: {registry: r, image: i, version: "1"}
`
	docs, err := Documents(strings.NewReader(in), "d.yaml")
	require.NoError(t, err)
	drivers, err := Drivers(docs)
	require.NoError(t, err)
	require.Len(t, drivers, 1)
	assert.Equal(t, "1", drivers[0].Spec.Version)
	cps, err := ClusterPolicies(docs)
	require.NoError(t, err)
	require.Len(t, cps, 1)
}

func TestDocumentsErrors(t *testing.T) {
	_, err := Documents(strings.NewReader("kind: [unclosed"), "bad.yaml")
	require.ErrorContains(t, err, "bad.yaml")
	_, err = Documents(strings.NewReader("metadata: {name: x}\n"), "nokind.yaml")
	require.ErrorContains(t, err, "has no kind")
	docs, err := Documents(strings.NewReader("apiVersion: v2\nkind: RBLNDriver\nmetadata: {name: x}\n"), "v.yaml")
	require.NoError(t, err)
	_, err = Drivers(docs)
	require.ErrorContains(t, err, "expected apiVersion rebellions.ai/v1alpha1")
}

// TestListsAreExpandedByTheirItems: what Helm and kubectl apply one by one is every item of
// an object whose items field is an array, whatever its kind, and lists inside lists: each
// such item is a document (an RBLNDriver inside a ConfigMap with items escaped judging).
func TestListsAreExpandedByTheirItems(t *testing.T) {
	driver := `{apiVersion: rebellions.ai/v1alpha1, kind: RBLNDriver, metadata: {name: b}}`
	tests := []struct {
		name    string
		stream  string
		kinds   []string
		wantErr string
	}{
		{"a v1 List", "apiVersion: v1\nkind: List\nitems: [" + driver + "]\n", []string{"RBLNDriver"}, ""},
		{"any kind with items", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nitems: [" + driver + "]\n", []string{"RBLNDriver"}, ""},
		{"a List in a List", "apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: List, items: [" + driver + "]}, {apiVersion: v1, kind: Node, metadata: {name: n}}]\n", []string{"RBLNDriver", "Node"}, ""},
		{"items that are not a list", "apiVersion: example.com/v1\nkind: Shelf\nmetadata: {name: x}\nitems: {a: 1}\n", []string{"Shelf"}, ""},
		{"a NodeList's kindless items", "apiVersion: v1\nkind: NodeList\nitems: [{metadata: {name: a}}]\n", []string{"Node"}, ""},
		{"kindless items of another kind", "apiVersion: v1\nkind: ConfigMap\nitems: [{metadata: {name: a}}]\n", nil, "s.yaml#1 item 0: the item has no kind"},
		{"lists nested too deep", strings.Repeat("{kind: List, items: [", 10) + driver + strings.Repeat("]}", 10) + "\n", nil, "lists nested more than 8 deep"},
		{"JSON objects without ---", `{"kind": "Node", "metadata": {"name": "a"}}{"kind": "Node", "metadata": {"name": "b"}}`, nil, "several JSON objects follow one another"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Documents(strings.NewReader(tt.stream), "s.yaml")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			var kinds []string
			for _, d := range docs {
				kinds = append(kinds, d.Kind)
			}
			assert.Equal(t, tt.kinds, kinds)
		})
	}
}

// TestMaxObjects: millions of tiny documents or items are refused, not held.
func TestMaxObjects(t *testing.T) {
	_, err := Documents(strings.NewReader(strings.Repeat("kind: A\n---\n", MaxObjects+1)), "s.yaml")
	require.ErrorContains(t, err, "s.yaml holds more than 200000 objects")
	_, err = Documents(strings.NewReader("kind: List\nitems: ["+strings.Repeat("{kind: A},", MaxObjects)+"{kind: A}]\n"), "l.yaml")
	require.ErrorContains(t, err, "holds more than 200000 objects")
	docs, err := Documents(strings.NewReader(strings.Repeat("kind: A\n---\n", 1000)), "s.yaml")
	require.NoError(t, err)
	assert.Len(t, docs, 1000)
}

// TestNodesYAMLScalarsAsStrings: a label value YAML 1.1 reads as a boolean or a number is
// read as a string, as kubectl reads it (y is "true", 1.10 is "1.1"), not refused.
func TestNodesYAMLScalarsAsStrings(t *testing.T) {
	for name, in := range map[string]string{
		"a document": "apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {x: y, v: 1.10}}\n",
		"a List":     "apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata: {name: a, labels: {x: y, v: 1.10}}\n",
		"JSON":       `{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", "labels": {"x": true, "v": 1.1}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			docs, err := Documents(strings.NewReader(in), "nodes.yaml")
			require.NoError(t, err)
			nodes, err := Nodes(docs)
			require.NoError(t, err)
			require.Len(t, nodes, 1)
			assert.Equal(t, map[string]string{"x": "true", "v": "1.1"}, nodes[0].Labels)
		})
	}
}

func TestRequireKinds(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		kinds  []string
		want   string
	}{
		{"an empty file holds none", "", []string{"RBLNDriver"}, ""},
		{"an empty List holds none", "apiVersion: v1\nkind: List\nitems: []\n", []string{"RBLNDriver"}, ""},
		{"a ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", []string{"RBLNDriver"}, "cm.yaml holds 1 ConfigMap and no RBLNDriver"},
		{"nodes", nodeList, []string{"RBLNClusterPolicy"}, "cm.yaml holds 2 Nodes and no RBLNClusterPolicy"},
		{"several kinds", "kind: Service\nmetadata: {name: a}\n---\nkind: NetworkPolicy\nmetadata: {name: a}\n---\nkind: NetworkPolicy\nmetadata: {name: b}\n",
			[]string{"Pod", "Deployment"}, "cm.yaml holds 2 NetworkPolicies, 1 Service and no Pod or Deployment"},
		{"one of the kinds among others", "kind: ConfigMap\nmetadata: {name: a}\n---\nkind: RBLNDriver\nmetadata: {name: a}\n", []string{"RBLNDriver"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Documents(strings.NewReader(tt.stream), "cm.yaml")
			require.NoError(t, err)
			err = RequireKinds(docs, "cm.yaml", tt.kinds...)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			var ke *KindsError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, tt.want, err.Error())
		})
	}
}

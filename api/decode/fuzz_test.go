package decode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxErrorBytes bounds the text of an error about an inventory read from standard input,
// whatever it holds: the source and the document ("<stdin>#12 item 3"), what was expected,
// and the quoted kind, apiVersion and name (each cut to validation.MaxQuotedValue) or a
// parser's message (cut to maxParserError), each with its full length.
const maxErrorBytes = 200 + maxParserError + 3*(80+32)

// inventoryKinds are the kinds each inventory flag of the CLI must hold (cmd/driverguard/app).
var inventoryKinds = [][]string{{"Node"}, {"RBLNDriver"}, {"RBLNClusterPolicy"}, WorkloadKinds}

// fuzzSeeds are the examples, every YAML file of test/testdata, and small pathological
// streams.
func fuzzSeeds(f *testing.F) {
	var files []string
	examples, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	files = append(files, examples...)
	_ = filepath.WalkDir(filepath.Join("..", "..", "test", "testdata"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ".yaml" {
			files = append(files, path)
		}
		return nil
	})
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	long := strings.Repeat("x", 3000)
	for _, s := range []string{
		"", "---", "---\n---\n---\n", "\x00", "kind: Node\x00\n", "kind: Node\n---\n\x00",
		nodeList, nodeStream,
		"apiVersion: v1\nkind: List\nitems:\n- kind: List\n  items:\n  - kind: Node\n    metadata: {name: a}\n",
		"apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: a}\n- metadata: {name: a}\n",
		"kind: List\nitems: [{}, {kind: Node}, 1, null, [a]]\n",
		"kind: List\nitems: {a: b}\n",
		`{"apiVersion":"v1","kind":"List","items":[{"kind":"Pod","metadata":{"name":"p","namespace":"n"}},{"kind":"PodDisruptionBudget","metadata":{"name":"p","namespace":"n"}}]}`,
		`{"kind": "Node", "metadata": {"name": "a", "labels": {"x": 1}}}`,
		`{"kind": "Node", "metadata": {"name": "a", "labels": {"x": 1}}`,
		"{kind: Node, metadata: {name: a, labels: {x: y, v: 1.10}}}\n",
		strings.Repeat("kind: Node\nmetadata: {name: a}\n---\n", 100),
		strings.Repeat("---\n", 1000),
		"kind: Node\r\nmetadata: {name: a}\r\n---\r\nkind: Node\r\nmetadata: {name: b}\r\n",
		"--- x\nkind: Node\n",
		"kind: " + long + "\n",
		"apiVersion: " + long + "\nkind: Node\nmetadata: {name: a}\n",
		"kind: Node\nmetadata: {name: " + long + "}\n---\nkind: Node\nmetadata: {name: " + long + "}\n",
		"kind: Node\nmetadata:\n  name: a\n  " + long + ": 1\n  " + long + ": 2\n",
		"kind: Node\nmetadata:\n  name: a\n  creationTimestamp: " + long + "\n",
		"kind: Node\nmetadata:\n  name: a\n  labels: {" + long + ": [1]}\n",
		`{"kind": "Node", "metadata": {"name": "a", "labels": {"` + long + `": [1]}}}`,
		"kind: RBLNDriver\napiVersion: rebellions.ai/v1alpha1\nmetadata: {name: d}\nspec: {nodeSelector: {a: b}, tolerations: [{key: k, tolerationSeconds: x}]}\n",
		"kind: RBLNClusterPolicy\nmetadata: {name: rbln-cluster-policy}\nspec: {driver: {upgradePolicy: {maxParallelUpgrades: 1.5}}}\n",
		"kind: Pod\nmetadata: {name: p, namespace: n}\nspec: {containers: [{name: c, resources: {limits: {cpu: " + long + "}}}]}\n",
		"kind: Deployment\napiVersion: apps/v1\nmetadata: {name: d}\nspec: {replicas: y}\n",
		"a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nkind: [*b, *b, *b, *b]\n",
	} {
		f.Add([]byte(s))
	}
}

// FuzzInventory reads arbitrary bytes as an inventory from standard input through the calls
// the CLI makes for --nodes, --drivers, --cluster-policy and --pods (ReadDocuments within a
// limit, RequireKinds, then Nodes, Drivers, ClusterPolicies or ReadWorkloads): whatever the
// stream, there is no panic; the answer is documents or an error, never both; a NUL byte is
// always an error; every document is JSON and names its source; every error names the source
// and is at most maxErrorBytes; what decodes has a name, one per object.
// `make fuzz` runs it for a fixed time; `go test` runs the seeds.
func FuzzInventory(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := ReadDocuments(context.Background(), "-", bytes.NewReader(data), 1<<20)
		if bytes.IndexByte(data, 0) >= 0 && err == nil {
			t.Fatal("a stream with a NUL byte was read")
		}
		if err != nil {
			if docs != nil {
				t.Fatalf("documents and an error: %v", err)
			}
			checkError(t, "ReadDocuments", err)
			return
		}
		for _, d := range docs {
			if !strings.HasPrefix(d.Source, StdinName+"#") || len(d.Source) > 64 {
				t.Fatalf("a document from %q", d.Source)
			}
			if !json.Valid(d.Data) {
				t.Fatalf("%s: not JSON: %.300q", d.Source, d.Data)
			}
		}
		for _, kinds := range inventoryKinds {
			if err := RequireKinds(docs, StdinName, kinds...); err != nil {
				var ke *KindsError
				if !errors.As(err, &ke) {
					t.Fatalf("RequireKinds(%v): %T %v", kinds, err, err)
				}
				checkError(t, "RequireKinds", err)
			}
		}
		nodes, err := Nodes(docs)
		checkDecoded(t, "Nodes", len(nodes), err)
		drivers, err := Drivers(docs)
		checkDecoded(t, "Drivers", len(drivers), err)
		for _, d := range drivers {
			if d.Name == "" {
				t.Fatal("Drivers: a nameless RBLNDriver")
			}
		}
		policies, err := ClusterPolicies(docs)
		checkDecoded(t, "ClusterPolicies", len(policies), err)
		wl, err := ReadWorkloads(docs)
		if err != nil && wl != nil {
			t.Fatalf("ReadWorkloads: workloads and an error: %v", err)
		}
		checkDecoded(t, "ReadWorkloads", 0, err)
		if err == nil && len(wl.Pods)+len(wl.PDBs)+len(wl.ReplicaSets)+len(wl.Deployments)+len(wl.StatefulSets) != len(docs) {
			t.Fatalf("ReadWorkloads: %d documents, %+v", len(docs), wl)
		}
	})
}

// checkDecoded fails when a decoder returned objects with an error, or an error that is
// unbounded or does not name its source.
func checkDecoded(t *testing.T, what string, n int, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if n > 0 {
		t.Fatalf("%s: %d objects and an error: %v", what, n, err)
	}
	checkError(t, what, err)
}

func checkError(t *testing.T, what string, err error) {
	t.Helper()
	msg := err.Error()
	if !strings.Contains(msg, StdinName) {
		t.Fatalf("%s: an error that does not name its source: %.500s", what, msg)
	}
	if len(msg) > maxErrorBytes {
		t.Fatalf("%s: a %d-byte error: %.500s", what, len(msg), msg)
	}
}

// FuzzSplitDocuments compares splitDocuments with apimachinery's YAMLReader, which it
// mirrors over bytes read (TestSplitDocumentsMatchesYAMLReader on generated streams): the same
// documents, or an error from both (splitDocuments' cut to a bounded length).
func FuzzSplitDocuments(f *testing.F) {
	fuzzSeeds(f)
	for _, s := range []string{"a: 1\r\nb: 2\r\n---\r\nc: 3\r\n", "--- # first\na: 1\n---   \n\n---\t#x\nb: 2\n", "---x\n", "a\rb\n", "\r\n\r\n", " ---\na: 1\n", "a: 1\n---", "-- \n---\n----\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := yamlReaderDocs(data)
		got, err := splitDocuments(data)
		if wantErr != nil {
			if err == nil {
				t.Fatalf("YAMLReader: %v; splitDocuments: no error", wantErr)
			}
			if len(err.Error()) > 200 {
				t.Fatalf("a %d-byte error", len(err.Error()))
			}
			return
		}
		if err != nil {
			t.Fatalf("splitDocuments: %v; YAMLReader: no error", err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d documents, YAMLReader %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("document %d: %q, YAMLReader %q", i, got[i], want[i])
			}
		}
	})
}

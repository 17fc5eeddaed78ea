// Package decode reads Kubernetes objects from files the way kubectl writes them: YAML or JSON,
// one object, a stream of documents, or a v1 List (`kubectl get nodes -o yaml`). It is the one
// place the CLI turns node inventories, RBLNDrivers and cluster policies into typed objects.
package decode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
)

// typeMeta is the part of every object that says what it is.
type typeMeta struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Items      json.RawMessage `json:"items"`
}

// MaxObjects bounds the objects of one stream: documents and the items of Lists together. A
// cluster's nodes, drivers and pods are tens of thousands at most; millions of tiny documents
// in a few MiB would cost gigabytes of memory to hold.
const MaxObjects = 200_000

// maxListDepth bounds Lists inside Lists (kubectl flattens them; one level is what anyone
// writes).
const maxListDepth = 8

// rawDoc keeps a document's bytes (JSON) for a second, typed decode.
type rawDoc []byte

func (r *rawDoc) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// Document is one object read from a stream, with where it came from for error messages.
type Document struct {
	Kind       string
	APIVersion string
	Data       []byte // JSON
	Source     string // file[#n]
	// yaml is the document as written, when it was YAML (not for the items of a List).
	yaml []byte
}

// Documents splits a YAML/JSON stream into objects, expanding v1 Lists. Empty documents are
// skipped. It reads all of r: ReadDocuments reads a file within a limit.
func Documents(r io.Reader, source string) ([]Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return parseDocuments(data, source)
}

// parseDocuments is Documents on bytes read: each document is a slice of data where it can be.
func parseDocuments(data []byte, source string) ([]Document, error) {
	raws, err := splitDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(raws) > MaxObjects { // before any is parsed (empty ones included: a bound)
		nonEmpty := 0
		for _, raw := range raws {
			if len(bytes.TrimSpace(raw)) > 0 {
				nonEmpty++
			}
		}
		if nonEmpty > MaxObjects {
			return nil, tooManyObjects(source)
		}
	}
	var docs []Document
	for i, raw := range raws {
		n := i + 1
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		data, err := toJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d is not valid YAML: %w", source, n, capError(err))
		}
		if string(bytes.TrimSpace(data)) == "null" {
			continue
		}
		var tm typeMeta
		if err := json.Unmarshal(data, &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, n, capError(err))
		}
		src := fmt.Sprintf("%s#%d", source, n)
		if tm.Kind == "" {
			return nil, fmt.Errorf("%s: the document has no kind", src)
		}
		if isListObject(tm) {
			var err error
			if docs, err = appendItems(docs, tm, src, 1); err != nil {
				return nil, err
			}
			continue
		}
		if len(docs) >= MaxObjects {
			return nil, tooManyObjects(source)
		}
		d := Document{Kind: tm.Kind, APIVersion: tm.APIVersion, Data: data, Source: src}
		if !bytes.Equal(data, bytes.TrimSpace(raw)) {
			d.yaml = raw
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// isListObject reports whether an object is a list whose items Helm and kubectl apply one by
// one: any object whose items field is an array, whatever its kind (Helm's builder and
// kubectl flatten by the field, not by a "List" kind).
func isListObject(tm typeMeta) bool {
	t := bytes.TrimSpace(tm.Items)
	return len(t) > 0 && t[0] == '['
}

// appendItems appends the items of list (from src) to docs, expanding lists inside it.
func appendItems(docs []Document, list typeMeta, src string, depth int) ([]Document, error) {
	if depth > maxListDepth {
		return nil, fmt.Errorf("%s: lists nested more than %d deep", src, maxListDepth)
	}
	var items []rawDoc
	if err := json.Unmarshal(list.Items, &items); err != nil {
		return nil, fmt.Errorf("%s: items: %w", src, capError(err))
	}
	itemKind, isKindList := strings.CutSuffix(list.Kind, "List")
	for i, item := range items {
		itemSrc := fmt.Sprintf("%s item %d", src, i)
		var itm typeMeta
		if err := json.Unmarshal(item, &itm); err != nil {
			return nil, fmt.Errorf("%s: %w", itemSrc, capError(err))
		}
		if isListObject(itm) {
			var err error
			if docs, err = appendItems(docs, itm, itemSrc, depth+1); err != nil {
				return nil, err
			}
			continue
		}
		kind := itm.Kind
		if kind == "" {
			if !isKindList {
				return nil, fmt.Errorf("%s: the item has no kind (the items of a %s are applied one by one)", itemSrc, validation.Truncate(list.Kind, validation.MaxQuotedValue))
			}
			kind = itemKind // the items of a NodeList carry no kind
		}
		if len(docs) >= MaxObjects {
			return nil, tooManyObjects(src)
		}
		docs = append(docs, Document{Kind: kind, APIVersion: itm.APIVersion, Data: item, Source: itemSrc})
	}
	return docs, nil
}

func tooManyObjects(source string) error {
	return fmt.Errorf("%s holds more than %d objects (documents and list items); split it", source, MaxObjects)
}

// toJSON converts a YAML document to JSON, once: a JSON document (`kubectl get -o json`) is
// kept as it is, without the YAML parser's cost (seconds for 10,000 nodes).
func toJSON(raw []byte) ([]byte, error) {
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		if json.Valid(t) {
			return t, nil
		}
		// Several JSON objects one after another: kubectl applies each, the YAML parser would
		// read the first and drop the rest silently.
		dec := json.NewDecoder(bytes.NewReader(t))
		var first json.RawMessage
		if dec.Decode(&first) == nil && dec.More() {
			return nil, errors.New("several JSON objects follow one another in one document; separate them with a line \"---\" or wrap them in a List")
		}
	}
	return yaml.YAMLToJSON(raw)
}

// File returns the documents of path ("-" for standard input), read through
// DefaultMaxInventoryBytes. The CLI calls ReadDocuments, with its limits and its context.
func File(path string, stdin io.Reader) ([]Document, error) {
	return ReadDocuments(context.Background(), path, stdin, DefaultMaxInventoryBytes)
}

// Nodes decodes every Node document; any other kind is an error.
func Nodes(docs []Document) ([]corev1.Node, error) {
	return typed[corev1.Node](docs, "Node", "v1")
}

// Drivers decodes every RBLNDriver document; other kinds (an RBLNClusterPolicy, CRDs in the
// output of `render`) are skipped.
func Drivers(docs []Document) ([]v1alpha1.RBLNDriver, error) {
	return typed[v1alpha1.RBLNDriver](OnlyKind(docs, "RBLNDriver"), "RBLNDriver", v1alpha1.GroupVersion.String())
}

// ClusterPolicies decodes every RBLNClusterPolicy document, skipping other kinds.
func ClusterPolicies(docs []Document) ([]v1alpha1.RBLNClusterPolicy, error) {
	return typed[v1alpha1.RBLNClusterPolicy](OnlyKind(docs, "RBLNClusterPolicy"), "RBLNClusterPolicy", v1alpha1.GroupVersion.String())
}

// Workloads are the objects `plan --pods` reads from one stream ('kubectl get
// pods,pdb,replicasets,deployments,statefulsets -A -o yaml').
type Workloads struct {
	Pods         []corev1.Pod
	PDBs         []policyv1.PodDisruptionBudget
	ReplicaSets  []appsv1.ReplicaSet
	Deployments  []appsv1.Deployment
	StatefulSets []appsv1.StatefulSet
}

// WorkloadKinds are the kinds Workloads holds.
var WorkloadKinds = []string{"Pod", "PodDisruptionBudget", "ReplicaSet", "Deployment", "StatefulSet"}

// ReadWorkloads decodes a stream of Pods, PodDisruptionBudgets, ReplicaSets, Deployments and
// StatefulSets; any other kind is an error (nothing is silently dropped).
func ReadWorkloads(docs []Document) (*Workloads, error) {
	for _, d := range docs {
		if !slices.Contains(WorkloadKinds, d.Kind) {
			return nil, fmt.Errorf("%s: a %s is not one of %s; leave it out of the stream", d.Source, validation.Truncate(d.Kind, validation.MaxQuotedValue), strings.Join(WorkloadKinds, ", "))
		}
	}
	var (
		w   Workloads
		err error
	)
	if w.Pods, err = typed[corev1.Pod](OnlyKind(docs, "Pod"), "Pod", "v1"); err != nil {
		return nil, err
	}
	if w.PDBs, err = typed[policyv1.PodDisruptionBudget](OnlyKind(docs, "PodDisruptionBudget"), "PodDisruptionBudget", "policy/v1"); err != nil {
		return nil, err
	}
	if w.ReplicaSets, err = typed[appsv1.ReplicaSet](OnlyKind(docs, "ReplicaSet"), "ReplicaSet", "apps/v1"); err != nil {
		return nil, err
	}
	if w.Deployments, err = typed[appsv1.Deployment](OnlyKind(docs, "Deployment"), "Deployment", "apps/v1"); err != nil {
		return nil, err
	}
	if w.StatefulSets, err = typed[appsv1.StatefulSet](OnlyKind(docs, "StatefulSet"), "StatefulSet", "apps/v1"); err != nil {
		return nil, err
	}
	return &w, nil
}

// OnlyKind are the documents of kind, in order.
func OnlyKind(docs []Document, kind string) []Document {
	var out []Document
	for _, d := range docs {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// unmarshal decodes a document's JSON; where a value does not have the field's type, it decodes
// it as YAML against the type, as kubectl does (a label `x: y` is the string "y", not YAML 1.1's
// true).
func unmarshal[T any](d Document) (T, error) {
	var obj T
	err := json.Unmarshal(d.Data, &obj)
	if typeErr := (*json.UnmarshalTypeError)(nil); errors.As(err, &typeErr) {
		src := d.yaml
		if src == nil {
			src = d.Data
		}
		obj = *new(T)
		err = yaml.Unmarshal(src, &obj)
	}
	return obj, err
}

func typed[T any](docs []Document, kind, apiVersion string) ([]T, error) {
	out := make([]T, 0, len(docs))
	for _, d := range docs {
		if d.Kind != kind {
			return nil, fmt.Errorf("%s: expected a %s, got kind %s", d.Source, kind, quote(d.Kind))
		}
		if d.APIVersion != "" && d.APIVersion != apiVersion {
			return nil, fmt.Errorf("%s: expected apiVersion %s for %s, got %s", d.Source, apiVersion, kind, quote(d.APIVersion))
		}
		obj, err := unmarshal[T](d)
		if err != nil {
			return nil, fmt.Errorf("%s: decoding the %s: %w", d.Source, kind, capError(err))
		}
		out = append(out, obj)
	}
	// Names identify objects: a nameless or repeated one cannot be what a cluster holds.
	seen := make(map[string]string, len(out))
	for i := range out {
		meta := any(&out[i]).(interface {
			GetName() string
			GetNamespace() string
		})
		name := meta.GetName()
		if ns := meta.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		switch first, dup := seen[name]; {
		case meta.GetName() == "":
			return nil, fmt.Errorf("%s: the %s has no metadata.name; every object needs one", docs[i].Source, kind)
		case dup:
			return nil, fmt.Errorf("%s: a second %s named %s (the first is %s); a cluster holds one object per name: remove one", docs[i].Source, kind, quote(name), first)
		}
		seen[name] = docs[i].Source
	}
	return out, nil
}

// KindsError reports a file that holds objects, but none of the kinds it must hold: a node
// inventory given as --drivers, a ConfigMap as --cluster-policy.
type KindsError struct {
	// Source is the file as given.
	Source string
	// Want are the kinds it must hold (any of them).
	Want []string
	// Found counts the objects it holds by kind.
	Found map[string]int
}

func (e *KindsError) Error() string {
	kinds := slices.Sorted(maps.Keys(e.Found))
	found := make([]string, 0, len(kinds))
	for _, k := range kinds[:min(len(kinds), 10)] {
		n := e.Found[k]
		found = append(found, fmt.Sprintf("%d %s", n, plural(k, n)))
	}
	if len(kinds) > 10 {
		found = append(found, fmt.Sprintf("%d more kinds", len(kinds)-10))
	}
	return fmt.Sprintf("%s holds %s and no %s", e.Source, strings.Join(found, ", "), orList(e.Want))
}

// RequireKinds fails with a *KindsError when docs hold objects but none of kinds. An empty
// file (or an empty List, as kubectl prints when there is nothing) holds no object at all,
// which is no error: it means none.
func RequireKinds(docs []Document, source string, kinds ...string) error {
	if len(docs) == 0 {
		return nil
	}
	found := map[string]int{}
	for _, d := range docs {
		if slices.Contains(kinds, d.Kind) {
			return nil
		}
		found[validation.Truncate(d.Kind, validation.MaxQuotedValue)]++
	}
	return &KindsError{Source: source, Want: kinds, Found: found}
}

// plural is a kind's plural for a count, as kubectl names resources (Policy → Policies).
func plural(kind string, n int) string {
	switch {
	case n == 1:
		return kind
	case strings.HasSuffix(kind, "y") && !strings.HasSuffix(kind, "ay") && !strings.HasSuffix(kind, "ey"):
		return kind[:len(kind)-1] + "ies"
	case strings.HasSuffix(kind, "s"):
		return kind + "es"
	}
	return kind + "s"
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// quote quotes a name read from a file for a message, cut to validation.MaxQuotedValue.
func quote(s string) string {
	return strconv.Quote(validation.Truncate(s, validation.MaxQuotedValue))
}

// maxParserError bounds the text of a parser's error in a message: the YAML and JSON parsers
// and the types' own decoders may quote what they read whole (a timestamp, a key).
const maxParserError = 1000

// cappedError keeps a parser's error for errors.Is and errors.As, with its text cut.
type cappedError struct{ err error }

func (e *cappedError) Error() string { return validation.Truncate(e.err.Error(), maxParserError) }
func (e *cappedError) Unwrap() error { return e.err }

// capError shortens err's text when it is longer than maxParserError.
func capError(err error) error {
	if len(err.Error()) <= maxParserError {
		return err
	}
	return &cappedError{err: err}
}

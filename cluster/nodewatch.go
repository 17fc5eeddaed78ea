package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/driverguard/driverguard/routing"
)

// The Nodes reach the cluster view through a reflector of their own, not an informer: an
// informer keeps every object it is sent (at 100,000 nodes, even reduced to their names and
// kept labels, a quarter of the chart's memory limit for a second copy), and the State
// already holds what is kept of each node. The reflector lists and watches Nodes as metadata
// and writes into nodeStore, which applies each change to the State and keeps nothing else.

// NodeWatch lists and watches the Nodes of cfg as metadata (PartialObjectMetadata): what
// InformedOptions.Nodes takes. The API server streams the first list (watch-list) where it
// can, so no response holds every node.
func NodeWatch(cfg *rest.Config) (toolscache.ListerWatcher, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("the Nodes' metadata client: %w", err)
	}
	nodes := mc.Resource(corev1.SchemeGroupVersion.WithResource("nodes"))
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return nodes.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return nodes.Watch(ctx, o)
		},
	}
	return toolscache.ToListWatcherWithWatchListSemantics(lw, mc), nil
}

// keptNode is a Node as nodeStore's transform leaves it in the reflector's first list: its
// name and the labels kept with version of the LabelKeys.
type keptNode struct {
	metav1.PartialObjectMetadata
	version int64
}

// nodeStore is the reflector's store: it applies the Nodes' changes to an Informed's State
// (toolscache.ReflectorStore).
type nodeStore struct{ s *Informed }

// Transformer reduces the nodes of the reflector's first list as they stream in (the
// reflector holds them until the list ends): toolscache.TransformingStore.
func (n nodeStore) Transformer() toolscache.TransformFunc {
	return func(obj any) (any, error) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return obj, nil
		}
		k := &keptNode{}
		k.Name, k.ResourceVersion = m.Name, m.ResourceVersion
		if n.s.keys != nil {
			k.Labels, k.version = n.s.keys.keep(m.Labels)
		} else {
			k.Labels = m.Labels
		}
		return k, nil
	}
}

// kept is obj's name and labels, with the version of the keys the labels were kept with.
func (n nodeStore) kept(obj any) (name string, labels map[string]string, version int64, err error) {
	switch m := obj.(type) {
	case *keptNode:
		return m.Name, m.Labels, m.version, nil
	case *metav1.PartialObjectMetadata:
		if n.s.keys == nil {
			return m.Name, m.Labels, 0, nil
		}
		labels, version := n.s.keys.keep(m.Labels)
		return m.Name, labels, version, nil
	case toolscache.DeletedFinalStateUnknown:
		return n.kept(m.Obj)
	}
	return "", nil, 0, fmt.Errorf("the Nodes' watch sent a %T", obj)
}

func (n nodeStore) Add(obj any) error { return n.Update(obj) }

func (n nodeStore) Update(obj any) error {
	name, labels, version, err := n.kept(obj)
	if err != nil {
		return err
	}
	n.s.apply(func() bool { return n.s.setNode(name, labels, version) })
	return nil
}

func (n nodeStore) Delete(obj any) error {
	name, _, _, err := n.kept(obj)
	if err != nil {
		return err
	}
	n.s.apply(func() bool { return n.s.deleteNode(name) })
	return nil
}

// Replace makes list the nodes: those the State holds and list does not are deleted. The
// first Replace is the first list: the nodes are synced.
func (n nodeStore) Replace(list []any, _ string) error {
	names := make(map[string]struct{}, len(list))
	var errs []error
	n.s.apply(func() bool {
		for _, obj := range list {
			name, labels, version, err := n.kept(obj)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			names[name] = struct{}{}
			n.s.setNode(name, labels, version)
		}
		var gone []string
		for _, node := range n.s.state.Nodes() {
			if _, ok := names[node.Name]; !ok {
				gone = append(gone, node.Name)
			}
		}
		for _, name := range gone {
			n.s.deleteNode(name)
		}
		clear(n.s.read) // what is left is of nodes the list does not hold
		return true
	})
	n.s.nodesSynced.Store(true)
	return errors.Join(errs...)
}

func (n nodeStore) Resync() error { return nil }

// setNode sets a node (s.mu held) and reports whether its labels changed. A node kept with
// older keys (an object of a first list streamed before keys were added) lacks the added
// keys: it takes their values from a read that had them — the State's node, when it was kept
// with newer keys than the object (only a read of the new keys gives it those: events are
// kept in the order they come), or what a read found before the node was added — which is
// newer than the object. Without such a read it stays at its older version, so that the
// read, when it comes, still applies.
func (s *Informed) setNode(name string, labels map[string]string, version int64) bool {
	if s.keys != nil {
		if version < s.keys.Version() {
			if cur, ok := s.state.Node(name); ok {
				if v, _ := s.state.nodeKept(name); v > version {
					labels, version = s.keys.withKeysOf(labels, cur.Labels, s.keys.AddedSince(version)), v
				}
			} else if r, ok := s.read[name]; ok && r.version > version {
				labels, version = s.keys.withKeysOf(labels, r.labels, s.keys.AddedSince(version)), r.version
			}
		}
		delete(s.read, name)
	}
	cur, ok := s.state.Node(name)
	changed := !ok || !maps.Equal(cur.Labels, labels) // a status update (kept maps are shared: usually the same map)
	if changed {
		cur = routing.Node{Name: name, Labels: labels}
	}
	s.state.setNodeKept(cur, version)
	return changed
}

// deleteNode removes a node (s.mu held) and reports whether it was there.
func (s *Informed) deleteNode(name string) bool {
	_, ok := s.state.Node(name)
	s.state.DeleteNode(name)
	delete(s.read, name)
	return ok
}

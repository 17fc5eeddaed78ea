package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/routing"
)

// nodePageSize is how many Nodes one list request asks for: a page's metadata is decoded,
// reduced to what is kept, and dropped before the next (100,000 Nodes with their status,
// annotations and managed fields are gigabytes; their names and kept labels a few MB). At
// 100,000 nodes pages of 2,000 read them in about 13 s on 2 cores, of 500 in 16-18 s (the
// API server's work per request); a page of fleet nodes' metadata decodes to about 20 MB.
const nodePageSize = 2000

// pageNodes lists the Nodes sel matches (nil: every Node), metadata only and nodePageSize at
// a time, handing each to each: a consistent read, the pages all of one resourceVersion,
// which it returns.
func pageNodes(ctx context.Context, c client.Reader, sel labels.Selector, each func(*metav1.PartialObjectMetadata)) (string, error) {
	var cont string
	for {
		page := &metav1.PartialObjectMetadataList{}
		page.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
		opts := []client.ListOption{client.Limit(nodePageSize), client.Continue(cont)}
		if sel != nil {
			opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
		}
		if err := c.List(ctx, page, opts...); err != nil {
			return "", err
		}
		for i := range page.Items {
			each(&page.Items[i])
		}
		if cont = page.Continue; cont == "" {
			return page.ResourceVersion, nil
		}
	}
}

// listNodes lists every Node as its name and the labels keys keeps, every label when keys is
// nil (pageNodes). Label keys and values are interned either way: the nodes of a fleet share
// a few dozen distinct values per key.
func listNodes(ctx context.Context, c client.Reader, keys *LabelKeys) ([]routing.Node, error) {
	var out []routing.Node
	strs := map[string]string{}
	intern := func(s string) string {
		if v, ok := strs[s]; ok {
			return v
		}
		strs[s] = s
		return s
	}
	_, err := pageNodes(ctx, c, nil, func(m *metav1.PartialObjectMetadata) {
		if keys != nil {
			out = append(out, routing.Node{Name: m.Name, Labels: keys.Keep(m.Labels)})
			return
		}
		var l map[string]string
		if len(m.Labels) > 0 {
			l = make(map[string]string, len(m.Labels))
			for k, v := range m.Labels {
				l[intern(k)] = intern(v)
			}
		}
		out = append(out, routing.Node{Name: m.Name, Labels: l})
	})
	return out, err
}

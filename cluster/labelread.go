package cluster

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/driverguard/driverguard/routing"
)

// The reads of new label keys. The view keeps of each node the labels of its LabelKeys; a
// key added later (a driver's selector, a policy's declaration) is kept by the events from
// then on, and the nodes that already carry it are read once, in the background: a list with
// the label selector `key`, which only those nodes answer. A driver's admission that needs
// the key waits for the read (EnsureLabelKeys); nothing else does.

// readTimeout bounds one read of a key's nodes (a list in pages).
const readTimeout = 5 * time.Minute

// readBackoff is how long the reader waits after a failed read, doubling up to maxReadBackoff.
const (
	readBackoff    = time.Second
	maxReadBackoff = 30 * time.Second
)

// unreadKey is a key added to the LabelKeys at version whose nodes are not read yet.
type unreadKey struct {
	key     string
	version int64
}

// readEntry is a node a read found that the State did not hold: its labels, kept at version.
type readEntry struct {
	labels  map[string]string
	version int64
}

// catchUp has the view keep the keys the drivers select and the policies declare: those it
// does not keep are added and read in the background. It returns the channel closed once
// they are read, nil when nothing is to be read. It costs a flag and a few map lookups when
// nothing is missing.
func (s *Informed) catchUp() <-chan struct{} {
	if s.keys == nil {
		return nil
	}
	var policyKeys []string
	if s.policyKeys != nil {
		policyKeys = s.policyKeys()
	}
	if !s.behind.Load() && len(s.keys.Missing(policyKeys)) == 0 {
		return nil
	}
	s.behind.Store(false)
	s.mu.Lock()
	keys := append(SelectorKeys(s.state.drivers), policyKeys...)
	s.mu.Unlock()
	pending, done := s.want(keys)
	if !pending {
		return nil
	}
	return done
}

// EnsureLabelKeys has the view keep keys and the keys the policies declare, and waits until
// the nodes that carry those it did not keep are read, or ctx ends: the webhook calls it with
// a driver's selector keys before it decides on the driver, so that the nodes a new key
// selects (and the labels a reloaded policy declares) are known. It costs a few map
// lookups when every key is kept and read. When ctx ends first, the error is a 503 Service
// Unavailable (the read goes on: a retry finds it done); before the view is synced it does
// nothing (the snapshot is refused then).
func (s *Informed) EnsureLabelKeys(ctx context.Context, keys []string) error {
	if s.keys == nil || !s.synced.Load() {
		return nil
	}
	if s.policyKeys != nil {
		if pk := s.policyKeys(); len(pk) > 0 {
			keys = append(keys[:len(keys):len(keys)], pk...)
		}
	}
	if !s.hasUnread.Load() && len(s.keys.Missing(keys)) == 0 {
		return nil
	}
	pending, done := s.want(keys)
	if !pending {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.readMu.Lock()
		err := s.readErr
		s.readMu.Unlock()
		msg := fmt.Sprintf("the cluster view is still reading the nodes labelled %v (keys no stored driver selected); retry in a few seconds", keys)
		if err != nil {
			msg += " (the last read failed: " + err.Error() + ")"
		}
		return apierrors.NewServiceUnavailable(msg)
	}
}

// want adds the keys not kept yet, queues them for reading and starts the reader if it does
// not run. It reports whether any of keys is still to be read, and the channel closed once
// every queued key is.
func (s *Informed) want(keys []string) (pending bool, done <-chan struct{}) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if added := s.keys.Add(keys...); len(added) > 0 {
		v := s.keys.Version()
		for _, key := range added {
			s.unread = append(s.unread, unreadKey{key: key, version: v})
		}
		s.hasUnread.Store(true)
	}
	for _, u := range s.unread {
		for _, k := range keys {
			pending = pending || u.key == k
		}
	}
	if len(s.unread) > 0 && !s.reading {
		s.reading = true
		go s.readKeys(s.runCtx)
	}
	return pending, s.readDone
}

// readKeys reads the queued keys one by one until none is left, retrying a failed read
// after a backoff, until ctx ends.
func (s *Informed) readKeys(ctx context.Context) {
	backoff := readBackoff
	for {
		s.readMu.Lock()
		if len(s.unread) == 0 || ctx.Err() != nil {
			if len(s.unread) == 0 {
				close(s.readDone)
				s.readDone = make(chan struct{})
				s.hasUnread.Store(false)
			}
			s.reading = false
			s.readMu.Unlock()
			return
		}
		u := s.unread[0]
		s.readMu.Unlock()

		err := s.readKey(ctx, u)
		s.readMu.Lock()
		s.readErr = err
		if err == nil {
			s.unread = s.unread[1:]
		}
		s.readMu.Unlock()
		if err == nil {
			backoff = readBackoff
			s.apply(func() bool { return true }) // a new view
			continue
		}
		if ctx.Err() == nil {
			s.log.Error(err, "reading the nodes of a new label key; retrying", "key", u.key, "in", backoff)
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxReadBackoff)
	}
}

// readKey reads the nodes that carry u's key.
func (s *Informed) readKey(ctx context.Context, u unreadKey) error {
	req, err := labels.NewRequirement(u.key, selection.Exists, nil)
	if err != nil {
		return nil // not a label key: no node carries it (the driver's validation says why)
	}
	if s.reader == nil {
		return fmt.Errorf("no reader to list the nodes labelled %s", u.key)
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	start, read := time.Now(), 0
	if _, err := pageNodes(ctx, s.reader, labels.NewSelector().Add(*req), func(m *metav1.PartialObjectMetadata) {
		read++
		s.readNode(m, u.version)
	}); err != nil {
		return fmt.Errorf("listing the nodes labelled %s: %w", u.key, err)
	}
	s.log.V(1).Info("read the nodes of a new label key", "key", u.key, "nodes", read, "duration", time.Since(start))
	return nil
}

// readNode applies a node read for the keys added at version, unless an event kept its
// labels with those keys already: such an event may be older than the read, but then the
// events up to the read follow it (the watch delivers every change in order). A node the
// State does not hold (its add event is still queued, or it was deleted since the read) is
// only remembered: an event kept before the keys were added takes their values from it
// (setNode); a deleted node is not brought back.
func (s *Informed) readNode(m *metav1.PartialObjectMetadata, version int64) {
	labels, kept := s.keys.keep(m.Labels)
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.state.nodeKept(m.Name); ok && v >= version {
		return
	}
	if _, ok := s.state.Node(m.Name); !ok {
		s.read[m.Name] = readEntry{labels: labels, version: kept}
		return
	}
	s.state.setNodeKept(routing.Node{Name: m.Name, Labels: labels}, kept)
}

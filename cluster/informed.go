package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/policy"
)

// DefaultRebuildDelay is how long an Informed waits after a change before rebuilding its
// snapshot in the background, so that a burst of changes (a node pool being labelled) costs
// one rebuild.
const DefaultRebuildDelay = 100 * time.Millisecond

// Informed is the cluster view of a live cluster (`serve`): a [State] fed by a reflector of
// the Nodes (metadata only, each kept to its name and the labels of its [LabelKeys]:
// nodewatch.go) and by controller-runtime informers on RBLNDrivers and RBLNClusterPolicies,
// and the [Snapshot] built from it with its projections, the routing index and the policy
// engine's cluster view (data.driverguard_cluster, through SyncTo).
//
// The snapshot is rebuilt when the State changes, not per request (with 10,000 nodes and 500
// drivers a rebuild costs tens of milliseconds; a request costs microseconds). Every relevant
// event (a node's labels, a driver's or policy's spec, an add or delete) bumps a generation
// counter and schedules a background rebuild after RebuildDelay. A request that arrives while
// the snapshot is older than the counter rebuilds it itself (one rebuild at a time; concurrent
// requests share it), so a decision never uses a view older than the events it was asked
// after. Status-only updates (node heartbeats) and changes to labels no decision reads do not
// count. A label key kept later is read from the nodes that carry it (labelread.go).
type Informed struct {
	cache        ctrlcache.Cache
	log          logr.Logger
	rebuildDelay time.Duration

	mu    sync.Mutex // guards state and orders it with gen
	state State
	gen   atomic.Uint64 // bumped on every relevant change

	cur       atomic.Pointer[versionSnap] // the latest snapshot
	synced    atomic.Bool
	rebuildMu sync.Mutex // serialises rebuilds
	kick      chan struct{}
	changed   chan struct{} // Changed's
	// syncer, when set, gets every new snapshot's cluster view (data.driverguard_cluster).
	syncer policy.ClusterSyncer

	// nodes lists and watches the Nodes (nodeStore); nodesSynced is set by its first list.
	nodes       toolscache.ListerWatcher
	nodesSynced atomic.Bool
	// keys are the node labels the view keeps (nil: all of them); reader lists the nodes of
	// keys added later; the State records the version of keys each node's labels were kept
	// with (setNodeKept).
	keys       *LabelKeys
	reader     client.Reader
	policyKeys func() []string
	// read are nodes a read of new keys found that the State did not hold (readNode).
	read map[string]readEntry
	// behind is set when a driver selects a key the view does not keep yet.
	behind atomic.Bool
	// The reads of new keys (labelread.go): unread are the keys added whose nodes are not
	// read yet, reading whether the reader runs, readErr its last error, readDone closed once
	// unread is empty; all guarded by readMu. hasUnread mirrors len(unread) > 0. runCtx is
	// Start's: the reader's, not a request's.
	readMu    sync.Mutex
	unread    []unreadKey
	reading   bool
	readErr   error
	readDone  chan struct{}
	hasUnread atomic.Bool
	runCtx    context.Context
}

type versionSnap struct {
	snap *Snapshot
	gen  uint64
}

// InformedOptions configure an Informed.
type InformedOptions struct {
	// Logger receives rebuild errors and timings (V(1)).
	Logger logr.Logger
	// RebuildDelay is DefaultRebuildDelay when zero.
	RebuildDelay time.Duration
	// Nodes lists and watches the Nodes as metadata (NodeWatch).
	Nodes toolscache.ListerWatcher
	// LabelKeys are the node labels the view keeps of each node. Nil: every label.
	LabelKeys *LabelKeys
	// Reader lists the Nodes that carry a key added to LabelKeys (the cache kept none of
	// them): an uncached reader, such as the manager's API reader.
	Reader client.Reader
	// PolicyKeys, when set, are the node label keys the policies declare (they change when
	// the policies are reloaded): the cache keeps them too.
	PolicyKeys func() []string
}

// NewInformed returns an Informed over c. Run it (Start, e.g. as a manager Runnable) before
// asking it for snapshots; it registers its event handlers on start.
func NewInformed(c ctrlcache.Cache, opts InformedOptions) *Informed {
	metricsOnce.Do(func() { ctrlmetrics.Registry.MustRegister(rebuilds, rebuildSeconds, objects) })
	s := &Informed{cache: c, log: opts.Logger, rebuildDelay: opts.RebuildDelay, kick: make(chan struct{}, 1), changed: make(chan struct{}, 1),
		nodes: opts.Nodes, keys: opts.LabelKeys, reader: opts.Reader, policyKeys: opts.PolicyKeys,
		read: map[string]readEntry{}, readDone: make(chan struct{}), runCtx: context.Background()}
	if s.rebuildDelay <= 0 {
		s.rebuildDelay = DefaultRebuildDelay
	}
	return s
}

// SyncTo makes syncer's cluster view (data.driverguard_cluster) follow the snapshots: each is
// synced before it is published.
func (s *Informed) SyncTo(syncer policy.ClusterSyncer) { s.syncer = syncer }

// feed is how the events of one kind change the State.
type feed struct {
	obj     client.Object
	set     func(any)
	del     func(string)
	changed func(old, new metav1.Object) bool // whether an update counts
}

// feeds are the Informed's: s.mu is held while set and del run.
func (s *Informed) feeds() []feed {
	return []feed{
		{
			obj: &v1alpha1.RBLNDriver{},
			set: func(o any) {
				d := o.(*v1alpha1.RBLNDriver)
				s.state.SetDriver(*d)
				if s.keys != nil && len(s.keys.Missing(slices.Collect(maps.Keys(d.Spec.NodeSelector)))) > 0 {
					s.behind.Store(true)
				}
			},
			del:     func(name string) { s.state.DeleteDriver(name) },
			changed: generationChanged,
		},
		{
			obj:     &v1alpha1.RBLNClusterPolicy{},
			set:     func(o any) { s.state.SetClusterPolicy(*o.(*v1alpha1.RBLNClusterPolicy)) },
			del:     func(name string) { s.state.DeleteClusterPolicy(name) },
			changed: generationChanged,
		},
	}
}

func generationChanged(o, n metav1.Object) bool {
	return o.GetGeneration() != n.GetGeneration() || o.GetGeneration() == 0
}

// handler applies one kind's events to the State. An update that does not count still
// replaces the object (a later rebuild shows its metadata) but bumps no generation.
func (s *Informed) handler(f feed) toolscache.ResourceEventHandler {
	apply := func(change func(), bump bool) {
		s.apply(func() bool { change(); return bump })
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { apply(func() { f.set(o) }, true) },
		UpdateFunc: func(o, n any) {
			om, ok1 := o.(metav1.Object)
			nm, ok2 := n.(metav1.Object)
			apply(func() { f.set(n) }, !ok1 || !ok2 || f.changed(om, nm))
		},
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if m, ok := o.(metav1.Object); ok {
				apply(func() { f.del(m.GetName()) }, true)
			}
		},
	}
}

// apply runs change with s.mu held; when it reports a relevant change, the generation is
// bumped and a rebuild scheduled.
func (s *Informed) apply(change func() bool) {
	s.mu.Lock()
	bump := change()
	if bump {
		s.gen.Add(1)
	}
	s.mu.Unlock()
	if bump {
		s.signal()
	}
}

// signal schedules a background rebuild and tells Changed's reader.
func (s *Informed) signal() {
	for _, c := range []chan struct{}{s.kick, s.changed} {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Start registers the event handlers, waits until they have seen the caches' first lists,
// builds the first snapshot and then rebuilds in the background after changes until ctx
// ends. It implements manager.Runnable.
func (s *Informed) Start(ctx context.Context) error {
	if s.nodes == nil {
		return errors.New("the cluster view has no Node watch (InformedOptions.Nodes)")
	}
	s.readMu.Lock()
	s.runCtx = ctx
	s.readMu.Unlock()
	go toolscache.NewReflectorWithOptions(s.nodes, &metav1.PartialObjectMetadata{}, nodeStore{s},
		toolscache.ReflectorOptions{Name: "driverguard-nodes", TypeDescription: "Node metadata"}).RunWithContext(ctx)
	var regs []toolscache.InformerSynced
	for _, f := range s.feeds() {
		inf, err := s.cache.GetInformer(ctx, f.obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", f.obj, err)
		}
		reg, err := inf.AddEventHandler(s.handler(f))
		if err != nil {
			return fmt.Errorf("watching %T: %w", f.obj, err)
		}
		regs = append(regs, reg.HasSynced)
	}
	regs = append(regs, s.nodesSynced.Load)
	if !s.cache.WaitForCacheSync(ctx) || !toolscache.WaitForCacheSync(ctx.Done(), regs...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("the Node, RBLNDriver and RBLNClusterPolicy caches did not sync")
	}
	s.synced.Store(true)
	// The keys the drivers select that the view did not keep at its first list (serve lists
	// them before it starts; a driver stored since): read before the view is ready.
	if done := s.catchUp(); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return nil
		}
	}
	if _, err := s.rebuild(ctx); err != nil {
		return err
	}
	s.log.Info("cluster view ready", "nodes", len(s.cur.Load().snap.Nodes()), "drivers", len(s.cur.Load().snap.Drivers()))
	var due <-chan time.Time // set while a background rebuild is scheduled
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
			if due == nil {
				due = time.After(s.rebuildDelay)
			}
		case <-due:
			due = nil
			s.catchUp()
			if _, err := s.rebuild(ctx); err != nil && ctx.Err() == nil {
				s.log.Error(err, "rebuilding the cluster view")
			}
		}
	}
}

// Changed receives after relevant changes (a node's labels, a driver's or the cluster
// policy's spec, an add or a delete): several changes may make one signal. It has one
// reader, serve's audit, which then asks for a Snapshot.
func (s *Informed) Changed() <-chan struct{} { return s.changed }

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves.
func (s *Informed) NeedLeaderElection() bool { return false }

// Snapshot returns the current view (it is a webhook.State). Before the caches have synced it
// returns a 503 Service Unavailable error.
func (s *Informed) Snapshot(ctx context.Context) (*Snapshot, error) {
	if !s.synced.Load() {
		return nil, apierrors.NewServiceUnavailable("the webhook's cluster view (Nodes, RBLNDrivers, RBLNClusterPolicies) is not synced yet; retry in a few seconds")
	}
	s.catchUp() // new keys are read in the background; a driver's admission waits for its own
	if cur := s.cur.Load(); cur != nil && cur.gen == s.gen.Load() {
		return cur.snap, nil
	}
	return s.rebuild(ctx)
}

// WaitFor waits until the current snapshot satisfies cond (the caches caught up with a write,
// say), polling every few milliseconds, or until ctx ends.
func (s *Informed) WaitFor(ctx context.Context, cond func(*Snapshot) bool) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.synced.Load() {
			snap, err := s.Snapshot(ctx)
			if err == nil && cond(snap) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the cluster view: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// Ready is a healthz.Checker: ready once the caches synced and the first snapshot exists.
func (s *Informed) Ready(*http.Request) error {
	if s.cur.Load() == nil {
		return errors.New("the cluster view is not synced yet")
	}
	return nil
}

// rebuild builds a snapshot of the State unless a current one exists.
func (s *Informed) rebuild(ctx context.Context) (*Snapshot, error) {
	s.rebuildMu.Lock()
	defer s.rebuildMu.Unlock()
	if cur := s.cur.Load(); cur != nil && cur.gen == s.gen.Load() {
		return cur.snap, nil
	}
	start := time.Now()
	// The copy and its generation are taken together; the index is built outside the lock.
	// The objects are read-only to routing, so the informers' copies are used as they are.
	s.mu.Lock()
	gen := s.gen.Load()
	drivers, nodes, policies := slices.Clone(s.state.drivers), slices.Clone(s.state.nodes), slices.Clone(s.state.policies)
	s.mu.Unlock()
	snap := NewSnapshot(drivers, nodes, policies)
	if s.syncer != nil {
		// Before the snapshot is published, so a request that sees it sees its cluster view.
		if err := s.syncer.SyncCluster(ctx, snap.ClusterView()); err != nil {
			return nil, syncFailed(err)
		}
	}
	s.cur.Store(&versionSnap{snap: snap, gen: gen})
	if s.keys != nil {
		s.keys.Sweep(func(yield func(map[string]string) bool) {
			for _, n := range nodes {
				if !yield(n.Labels) {
					return
				}
			}
		})
	}
	elapsed := time.Since(start)
	rebuilds.Inc()
	rebuildSeconds.Observe(elapsed.Seconds())
	objects.WithLabelValues("nodes").Set(float64(len(nodes)))
	objects.WithLabelValues("rblndrivers").Set(float64(len(drivers)))
	s.log.V(1).Info("rebuilt the cluster view", "nodes", len(nodes), "drivers", len(drivers), "duration", elapsed)
	return snap, nil
}

var (
	metricsOnce sync.Once
	rebuilds    = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "driverguard_webhook_state_rebuilds_total",
		Help: "Rebuilds of the webhook's cluster view (routing index) after Node, RBLNDriver or RBLNClusterPolicy changes.",
	})
	rebuildSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "driverguard_webhook_state_rebuild_seconds",
		Help:    "Time to rebuild the webhook's cluster view from the informer caches.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	objects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "driverguard_webhook_state_objects",
		Help: "Objects in the webhook's cluster view, by kind.",
	}, []string{"kind"})
)

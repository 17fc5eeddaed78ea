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
	"github.com/driverguard/driverguard/routing"
)

// DefaultRebuildDelay is how long an Informed waits after a change before rebuilding its
// snapshot in the background, so that a burst of changes (a node pool being labelled) costs
// one rebuild.
const DefaultRebuildDelay = 100 * time.Millisecond

// Informed is the cluster view of a live cluster (`serve`): a [State] fed by the events of
// controller-runtime informers on Nodes (metadata only: names and labels), RBLNDrivers and
// RBLNClusterPolicies, and the [Snapshot] built from it with its projections, the routing
// index and the policy engine's cluster view (data.driverguard_cluster, through SyncTo).
//
// The snapshot is rebuilt when the State changes, not per request (with 10,000 nodes and 500
// drivers a rebuild costs tens of milliseconds; a request costs microseconds). Every relevant
// event (a node's labels, a driver's or policy's spec, an add or delete) bumps a generation
// counter and schedules a background rebuild after RebuildDelay. A request that arrives while
// the snapshot is older than the counter rebuilds it itself (one rebuild at a time; concurrent
// requests share it), so a decision never uses a view older than the events it was asked
// after. Status-only updates (node heartbeats) do not count.
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
}

// NewInformed returns an Informed over c. Run it (Start, e.g. as a manager Runnable) before
// asking it for snapshots; it registers its event handlers on start.
func NewInformed(c ctrlcache.Cache, opts InformedOptions) *Informed {
	metricsOnce.Do(func() { ctrlmetrics.Registry.MustRegister(rebuilds, rebuildSeconds, objects) })
	s := &Informed{cache: c, log: opts.Logger, rebuildDelay: opts.RebuildDelay, kick: make(chan struct{}, 1), changed: make(chan struct{}, 1)}
	if s.rebuildDelay <= 0 {
		s.rebuildDelay = DefaultRebuildDelay
	}
	return s
}

// SyncTo makes syncer's cluster view (data.driverguard_cluster) follow the snapshots: each is
// synced before it is published.
func (s *Informed) SyncTo(syncer policy.ClusterSyncer) { s.syncer = syncer }

// nodeMeta is the metadata-only form of a Node the cache keeps.
func nodeMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Node"))
	m.APIVersion, m.Kind = "v1", "Node"
	return m
}

// feed is how the events of one kind change the State.
type feed struct {
	obj     client.Object
	set     func(*State, any)
	del     func(*State, string)
	changed func(old, new metav1.Object) bool // whether an update counts
}

var feeds = []feed{
	{
		obj: nodeMeta(),
		set: func(s *State, o any) {
			m := o.(metav1.Object)
			s.SetNode(routing.Node{Name: m.GetName(), Labels: m.GetLabels()})
		},
		del:     (*State).DeleteNode,
		changed: func(o, n metav1.Object) bool { return !maps.Equal(o.GetLabels(), n.GetLabels()) },
	},
	{
		obj:     &v1alpha1.RBLNDriver{},
		set:     func(s *State, o any) { s.SetDriver(*o.(*v1alpha1.RBLNDriver)) },
		del:     (*State).DeleteDriver,
		changed: generationChanged,
	},
	{
		obj:     &v1alpha1.RBLNClusterPolicy{},
		set:     func(s *State, o any) { s.SetClusterPolicy(*o.(*v1alpha1.RBLNClusterPolicy)) },
		del:     (*State).DeleteClusterPolicy,
		changed: generationChanged,
	},
}

func generationChanged(o, n metav1.Object) bool {
	return o.GetGeneration() != n.GetGeneration() || o.GetGeneration() == 0
}

// handler applies one kind's events to the State. An update that does not count still
// replaces the object (a later rebuild shows its metadata) but bumps no generation.
func (s *Informed) handler(f feed) toolscache.ResourceEventHandler {
	apply := func(change func(), bump bool) {
		s.mu.Lock()
		change()
		if bump {
			s.gen.Add(1)
		}
		s.mu.Unlock()
		if bump {
			for _, c := range []chan struct{}{s.kick, s.changed} {
				select {
				case c <- struct{}{}:
				default:
				}
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { apply(func() { f.set(&s.state, o) }, true) },
		UpdateFunc: func(o, n any) {
			om, ok1 := o.(metav1.Object)
			nm, ok2 := n.(metav1.Object)
			apply(func() { f.set(&s.state, n) }, !ok1 || !ok2 || f.changed(om, nm))
		},
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if m, ok := o.(metav1.Object); ok {
				apply(func() { f.del(&s.state, m.GetName()) }, true)
			}
		},
	}
}

// Start registers the event handlers, waits until they have seen the caches' first lists,
// builds the first snapshot and then rebuilds in the background after changes until ctx
// ends. It implements manager.Runnable.
func (s *Informed) Start(ctx context.Context) error {
	var regs []toolscache.InformerSynced
	for _, f := range feeds {
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
	if !s.cache.WaitForCacheSync(ctx) || !toolscache.WaitForCacheSync(ctx.Done(), regs...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("the Node, RBLNDriver and RBLNClusterPolicy caches did not sync")
	}
	s.synced.Store(true)
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

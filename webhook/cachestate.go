package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
)

// DefaultRebuildDelay is how long CacheState waits after a change before rebuilding its
// snapshot in the background, so that a burst of changes (a node pool being labelled) costs
// one rebuild.
const DefaultRebuildDelay = 100 * time.Millisecond

// CacheState is the State of a live cluster, read from controller-runtime informer caches of
// Nodes (metadata only: the webhook needs names and labels, not status), RBLNDrivers and
// RBLNClusterPolicies.
//
// The routing index is rebuilt when the caches change, not per request (with 10,000 nodes
// and 500 drivers a rebuild costs tens of milliseconds; a request costs microseconds). Every
// relevant event (a node's labels, a driver's or policy's spec, an add or delete) bumps a
// generation counter and schedules a background rebuild after RebuildDelay. A request that
// arrives while the snapshot is older than the counter rebuilds it itself (one rebuild at a
// time; concurrent requests share it), so a decision never uses a view older than the caches
// it was asked from. Status-only updates (node heartbeats) do not count.
type CacheState struct {
	cache        ctrlcache.Cache
	log          logr.Logger
	rebuildDelay time.Duration

	gen    atomic.Uint64               // bumped on every relevant change
	cur    atomic.Pointer[versionSnap] // the latest snapshot
	synced atomic.Bool
	mu     sync.Mutex // serialises rebuilds
	kick   chan struct{}
	// syncer, when set, gets every new snapshot's cluster view (data.driverguard_cluster).
	syncer policy.ClusterSyncer
}

// SyncTo makes syncer's cluster view (data.driverguard_cluster) follow the snapshots.
func (s *CacheState) SyncTo(syncer policy.ClusterSyncer) { s.syncer = syncer }

type versionSnap struct {
	snap *cluster.Snapshot
	gen  uint64
}

// CacheStateOptions configure a CacheState.
type CacheStateOptions struct {
	// Logger receives rebuild errors and timings (V(1)).
	Logger logr.Logger
	// RebuildDelay is DefaultRebuildDelay when zero.
	RebuildDelay time.Duration
}

// NewCacheState returns a CacheState over c. Run it (Start, e.g. as a manager Runnable)
// before asking it for snapshots; it registers its informers on start.
func NewCacheState(c ctrlcache.Cache, opts CacheStateOptions) *CacheState {
	registerMetrics()
	s := &CacheState{cache: c, log: opts.Logger, rebuildDelay: opts.RebuildDelay, kick: make(chan struct{}, 1)}
	if s.rebuildDelay <= 0 {
		s.rebuildDelay = DefaultRebuildDelay
	}
	return s
}

// nodeMeta is the metadata-only form of a Node the cache keeps.
func nodeMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Node"))
	m.APIVersion, m.Kind = "v1", "Node"
	return m
}

func nodeMetaList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.APIVersion, l.Kind = "v1", "NodeList"
	return l
}

// Start registers the event handlers, waits for the caches to sync, builds the first snapshot
// and then rebuilds in the background after changes until ctx ends. It implements
// manager.Runnable.
func (s *CacheState) Start(ctx context.Context) error {
	watches := []struct {
		obj     client.Object
		changed func(old, new any) bool
	}{
		{nodeMeta(), func(o, n any) bool { return !maps.Equal(labelsOf(o), labelsOf(n)) }},
		{&v1alpha1.RBLNDriver{}, generationChanged},
		{&v1alpha1.RBLNClusterPolicy{}, generationChanged},
	}
	for _, w := range watches {
		inf, err := s.cache.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
		changed := w.changed
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.changed() },
			DeleteFunc: func(any) { s.changed() },
			UpdateFunc: func(o, n any) {
				if changed(o, n) {
					s.changed()
				}
			},
		}); err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
	}
	if !s.cache.WaitForCacheSync(ctx) {
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

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves.
func (s *CacheState) NeedLeaderElection() bool { return false }

func (s *CacheState) changed() {
	s.gen.Add(1)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func labelsOf(o any) map[string]string {
	if m, ok := o.(metav1.Object); ok {
		return m.GetLabels()
	}
	return nil
}

func generationChanged(o, n any) bool {
	om, ok1 := o.(metav1.Object)
	nm, ok2 := n.(metav1.Object)
	return !ok1 || !ok2 || om.GetGeneration() != nm.GetGeneration() || om.GetGeneration() == 0
}

// Snapshot implements State. Before the caches have synced it returns a 503 error.
func (s *CacheState) Snapshot(ctx context.Context) (*cluster.Snapshot, error) {
	if !s.synced.Load() {
		return nil, unavailable("the webhook's cluster view (Nodes, RBLNDrivers, RBLNClusterPolicies) is not synced yet; retry in a few seconds")
	}
	if cur := s.cur.Load(); cur != nil && cur.gen == s.gen.Load() {
		return cur.snap, nil
	}
	return s.rebuild(ctx)
}

// WaitFor waits until the current snapshot satisfies cond (the caches caught up with a write,
// say), polling every few milliseconds, or until ctx ends.
func (s *CacheState) WaitFor(ctx context.Context, cond func(*cluster.Snapshot) bool) error {
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
func (s *CacheState) Ready(*http.Request) error {
	if s.cur.Load() == nil {
		return errors.New("the cluster view is not synced yet")
	}
	return nil
}

// rebuild builds a snapshot from the caches unless a current one exists.
func (s *CacheState) rebuild(ctx context.Context) (*cluster.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.gen.Load() // read before listing: later changes make the result stale, never wrong
	if cur := s.cur.Load(); cur != nil && cur.gen == gen {
		return cur.snap, nil
	}
	start := time.Now()
	var (
		drivers v1alpha1.RBLNDriverList
		cps     v1alpha1.RBLNClusterPolicyList
		nodes   = nodeMetaList()
	)
	// The objects are read-only to routing, so the caches' copies are used without a deep copy.
	for _, l := range []client.ObjectList{&drivers, &cps, nodes} {
		if err := s.cache.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			return nil, unavailable("reading the webhook's cluster view: %v", err)
		}
	}
	rn := make([]routing.Node, len(nodes.Items))
	for i := range nodes.Items {
		rn[i] = routing.Node{Name: nodes.Items[i].Name, Labels: nodes.Items[i].Labels}
	}
	snap := cluster.NewSnapshot(drivers.Items, rn, cps.Items)
	if s.syncer != nil {
		// Before the snapshot is published, so a request that sees it sees its cluster view.
		if err := s.syncer.SyncCluster(ctx, snap.ClusterView()); err != nil {
			return nil, unavailable("loading the cluster view into the policy engine: %v", err)
		}
	}
	s.cur.Store(&versionSnap{snap: snap, gen: gen})
	elapsed := time.Since(start)
	stateRebuilds.Inc()
	stateRebuildSeconds.Observe(elapsed.Seconds())
	stateObjects.WithLabelValues("nodes").Set(float64(len(rn)))
	stateObjects.WithLabelValues("rblndrivers").Set(float64(len(drivers.Items)))
	s.log.V(1).Info("rebuilt the cluster view", "nodes", len(rn), "drivers", len(drivers.Items), "duration", elapsed)
	return snap, nil
}

var (
	metricsOnce   sync.Once
	stateRebuilds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "driverguard_webhook_state_rebuilds_total",
		Help: "Rebuilds of the webhook's cluster view (routing index) after Node, RBLNDriver or RBLNClusterPolicy changes.",
	})
	stateRebuildSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "driverguard_webhook_state_rebuild_seconds",
		Help:    "Time to rebuild the webhook's cluster view from the informer caches.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	stateObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "driverguard_webhook_state_objects",
		Help: "Objects in the webhook's cluster view, by kind.",
	}, []string{"kind"})
	openConnections = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "driverguard_webhook_connections",
		Help: "Connections open to the webhook server.",
	})
	refusedConnections = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "driverguard_webhook_connections_refused_total",
		Help: "Connections closed as soon as they were accepted: over --max-connections or --max-connections-per-client.",
	})
	evictedRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "driverguard_webhook_requests_evicted_total",
		Help: "Requests whose body read was ended to make room for a newcomer: a slow client held what the API server needed.",
	})
	refusedRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driverguard_webhook_requests_refused_total",
		Help: "Admission requests refused before they were judged: in_flight (429: requests, bytes or JSON values in flight) or too_large (413: over 100,000 JSON values).",
	}, []string{"reason"})
)

func registerMetrics() {
	metricsOnce.Do(func() {
		ctrlmetrics.Registry.MustRegister(stateRebuilds, stateRebuildSeconds, stateObjects, openConnections, refusedConnections, refusedRequests, evictedRequests)
	})
}

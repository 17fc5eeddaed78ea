package audit

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/registry"
)

// Defaults of a Loop.
const (
	DefaultInterval      = 10 * time.Minute
	DefaultImageInterval = time.Hour
	// DefaultMinGap is the least time between two passes: under a burst of changes a report
	// is written at most once per gap.
	DefaultMinGap = time.Second
	// DefaultPassTimeout bounds one pass.
	DefaultPassTimeout = time.Minute
)

// Source is the cluster view a loop audits: serve's cluster.Informed.
type Source interface {
	Snapshot(ctx context.Context) (*cluster.Snapshot, error)
	// Changed receives after changes to the view.
	Changed() <-chan struct{}
}

// Policies is the policy engine a loop judges with: its set (for the pass results) and a
// generation that changes when it reloads.
type Policies interface {
	policy.Evaluator
	Policies() []policy.PolicyInfo
	Status() policy.Status
}

// Loop keeps the audit running in serve (docs/audit.md "serve --audit"): a pass after every change of the cluster
// view or of the policies (at most one per MinGap), a full pass every Interval whatever
// happens, registry checks of every image every ImageInterval (the passes in between use
// their results). It runs on one replica: it needs leader election.
type Loop struct {
	Source   Source
	Policies Policies
	// PolicyFailOpen judges an object whose policy evaluation fails without its policies, as
	// admission does with serve --policy-fail-open.
	PolicyFailOpen bool
	Writer         *Writer
	// CheckImages asks the registries about the images of snap (Images), with the
	// credentials of its drivers; nil checks none.
	CheckImages                                  func(ctx context.Context, snap *cluster.Snapshot) map[string]registry.ImageResult
	Interval, ImageInterval, MinGap, PassTimeout time.Duration
	MaxResults                                   int
	Log                                          logr.Logger
	// OnPass, when set, is told about every pass (tests, metrics).
	OnPass func(PassStats)

	// The last pass's outcome and what it was judged from: a pass over the same snapshot,
	// policies and registry answers (the full pass of a steady cluster) writes it again
	// without judging anew.
	last struct {
		snap      *cluster.Snapshot
		policyGen int64
		imagesGen uint64
		out       *Outcome
	}
	imagesGen uint64
}

// PassStats describe one pass.
type PassStats struct {
	Duration time.Duration
	Outcome  *Outcome
	// Reused: nothing the outcome depends on changed since the last pass, which is written
	// again as it was (reports deleted by hand come back) without judging anew.
	Reused  bool
	Written WriteStats
	Err     error
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: one replica audits.
func (l *Loop) NeedLeaderElection() bool { return true }

// Start runs the loop until ctx ends (manager.Runnable).
func (l *Loop) Start(ctx context.Context) error {
	interval, imageInterval := orDuration(l.Interval, DefaultInterval), orDuration(l.ImageInterval, DefaultImageInterval)
	minGap := orDuration(l.MinGap, DefaultMinGap)
	full := time.NewTicker(interval)
	defer full.Stop()
	var images map[string]registry.ImageResult
	var imagesDue <-chan time.Time
	if l.CheckImages != nil {
		imagesDue = time.After(0)
	}
	policyGen := l.Policies.Status().Generation
	policyTick := time.NewTicker(minGap)
	defer policyTick.Stop()
	var last time.Time
	pending, refresh := true, true // the first pass, which refreshes the status
	// A pass that failed (the view not synced yet, the API server away) is tried again after
	// a backoff from minGap up to maxRetryGap; so are registry checks that could not start.
	var retry <-chan time.Time
	backoff := minGap
	for {
		if pending {
			if wait := minGap - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
			last = time.Now()
			if wrote, err := l.pass(ctx, images, refresh); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if wrote {
					backoff = minGap // reports were written: try the rest again soon
				}
				retry, backoff = time.After(backoff), min(2*backoff, maxRetryGap)
				pending = false
			} else {
				pending, refresh, retry, backoff = false, false, nil, minGap
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-retry:
			retry, pending = nil, true
		case <-l.Source.Changed():
			pending = true
		case <-full.C:
			pending, refresh = true, true
		case <-policyTick.C:
			if g := l.Policies.Status().Generation; g != policyGen {
				policyGen, pending = g, true
			}
		case <-imagesDue:
			snap, err := l.Source.Snapshot(ctx)
			if err != nil {
				l.Log.V(1).Info("registry checks postponed", "reason", err.Error())
				imagesDue = time.After(max(minGap, 5*time.Second))
				continue
			}
			imagesDue = time.After(imageInterval)
			images = l.CheckImages(ctx, snap)
			l.imagesGen++
			pending = true
		}
	}
}

// maxRetryGap bounds the backoff between failed passes.
const maxRetryGap = time.Minute

// pass audits the current view and writes the reports, and the cluster policy's
// status.audit when its totals changed or refresh is set. It returns whether it wrote or
// deleted a report, and the pass's error.
func (l *Loop) pass(ctx context.Context, images map[string]registry.ImageResult, refresh bool) (wrote bool, err error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, orDuration(l.PassTimeout, DefaultPassTimeout))
	defer cancel()
	st := PassStats{}
	defer func() {
		st.Duration = time.Since(start)
		observe(st)
		if l.OnPass != nil {
			l.OnPass(st)
		}
	}()
	snap, err := l.Source.Snapshot(ctx)
	if err != nil {
		st.Err = err
		if apierrors.IsServiceUnavailable(err) { // not synced yet: tried again shortly
			l.Log.V(1).Info("audit pass postponed", "reason", err.Error())
		} else {
			l.Log.Error(err, "audit: reading the cluster view")
		}
		return false, err
	}
	out, reused, err := l.judge(ctx, snap, images)
	if err != nil {
		st.Err = err
		l.Log.Error(err, "audit pass")
		return false, err
	}
	st.Outcome, st.Reused = out, reused
	at := time.Now()
	st.Written, err = l.Writer.Write(ctx, out, at)
	if err != nil && !errors.Is(err, context.Canceled) {
		st.Err = err
		l.Log.Error(err, "audit: writing the reports")
	}
	st.Written.Status, err = l.Writer.WriteStatus(ctx, snap.ClusterPolicy(), out, at, refresh)
	if err != nil && !errors.Is(err, context.Canceled) {
		st.Err = errors.Join(st.Err, err)
		l.Log.Error(err, "audit: writing the cluster policy's status")
	}
	l.Log.V(1).Info("audit pass", "reports", len(out.Reports), "fail", out.Summary.Fail, "enforced", out.Enforced,
		"applied", st.Written.Applied, "deleted", st.Written.Deleted, "took", time.Since(start))
	return st.Written.Applied+st.Written.Deleted > 0, st.Err
}

// judge audits snap, or returns the last outcome when snap, the policies and the registry
// answers are those it was judged from (and it holds no evaluation error, which may pass).
// It reports whether it reused the last outcome.
func (l *Loop) judge(ctx context.Context, snap *cluster.Snapshot, images map[string]registry.ImageResult) (*Outcome, bool, error) {
	gen := l.Policies.Status().Generation
	if last := &l.last; last.out != nil && last.snap == snap && last.policyGen == gen && last.imagesGen == l.imagesGen && last.out.Summary.Error == 0 {
		return last.out, true, nil
	}
	a := &Auditor{Decider: &decision.Decider{Policy: l.Policies, PolicyFailOpen: l.PolicyFailOpen}, Policies: l.Policies.Policies(),
		Images: images, MaxResults: l.MaxResults}
	out, err := a.Run(ctx, snap)
	if err != nil {
		return nil, false, err
	}
	l.last.snap, l.last.policyGen, l.last.imagesGen, l.last.out = snap, gen, l.imagesGen, out
	return out, false, nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

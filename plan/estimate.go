package plan

import (
	"fmt"
	"time"
)

// DriverRestart is what the estimate assumes one node's driver restart takes when nothing
// waits: the driver pod replaced, the module loaded, the pod Ready. The cluster policy does
// not say it; the views that show the estimate say it is assumed.
const DriverRestart = 2 * time.Minute

// Estimate is how long the batches take, estimated from the cluster policy (Rollout): each
// batch takes at least the driver restart and at most that plus every wait that applies,
// each run to its timeout; a batch starts when the one before it finished (the operator
// upgrades maxParallelUpgrades nodes at a time). "estimate" in JSON; null without batches.
type Estimate struct {
	// Batches is how many batches run one after another.
	Batches int `json:"batches"`
	// DriverRestartSeconds is the driver restart assumed (DriverRestart).
	DriverRestartSeconds int64 `json:"driverRestartSeconds"`
	// BatchMinSeconds and BatchMaxSeconds are one batch at least (the driver restart) and at
	// most (every wait with a timeout run to it).
	BatchMinSeconds int64 `json:"batchMinSeconds"`
	BatchMaxSeconds int64 `json:"batchMaxSeconds"`
	// TotalMinSeconds and TotalMaxSeconds are the whole rollout at least and at most; with
	// Unbounded, TotalMaxSeconds counts the bounded waits only and the rollout has no upper
	// bound.
	TotalMinSeconds int64 `json:"totalMinSeconds"`
	TotalMaxSeconds int64 `json:"totalMaxSeconds"`
	// Waits are the waits that apply, as the policy sets them ("drain.timeoutSeconds 300").
	Waits []string `json:"waits"`
	// Unbounded are the waits without a timeout (timeoutSeconds 0 waits indefinitely).
	Unbounded []string `json:"unbounded"`
}

// EstimateRollout is the estimate of n batches rolled out as r sets.
func EstimateRollout(r Rollout, n int) *Estimate {
	lo, hi := DriverRestart, DriverRestart
	e := &Estimate{Batches: n, Waits: []string{}, Unbounded: []string{}}
	wait := func(name string, seconds int32) {
		if seconds <= 0 {
			e.Unbounded = append(e.Unbounded, name+" (timeoutSeconds 0: waits indefinitely)")
			e.Waits = append(e.Waits, name+" without a timeout")
			return
		}
		hi += time.Duration(seconds) * time.Second
		e.Waits = append(e.Waits, fmt.Sprintf("%s.timeoutSeconds %d", name, seconds))
	}
	wait("npuPodDeletion", r.NPUPodDeletionTimeoutSeconds)
	if r.WaitForCompletion {
		wait("waitForCompletion", r.WaitForCompletionTimeoutSeconds)
	}
	if r.Drain {
		wait("drain", r.DrainTimeoutSeconds)
	}
	if r.Reboot {
		if r.RebootTimeoutSeconds <= 0 {
			e.Unbounded = append(e.Unbounded, "reboot (rebootTimeoutSeconds 0: no timeout)")
			e.Waits = append(e.Waits, "reboot without a timeout")
		} else {
			hi += time.Duration(r.RebootTimeoutSeconds) * time.Second
			e.Waits = append(e.Waits, fmt.Sprintf("reboot.rebootTimeoutSeconds %d", r.RebootTimeoutSeconds))
		}
	}
	e.DriverRestartSeconds = int64(DriverRestart / time.Second)
	e.BatchMinSeconds, e.BatchMaxSeconds = int64(lo/time.Second), int64(hi/time.Second)
	e.TotalMinSeconds, e.TotalMaxSeconds = int64(n)*e.BatchMinSeconds, int64(n)*e.BatchMaxSeconds
	return e
}

// RolloutEstimate is the plan's estimate: Estimate when the plan carries it, else the one its
// rollout and batches give (a plan built by hand).
func (p *Plan) RolloutEstimate() *Estimate {
	if p.Estimate != nil {
		return p.Estimate
	}
	return EstimateRollout(p.Rollout, len(p.Batches))
}

// Min is one batch at least: the driver restart.
func (e *Estimate) Min() time.Duration { return time.Duration(e.BatchMinSeconds) * time.Second }

// Max is one batch at most: every bounded wait run to its timeout.
func (e *Estimate) Max() time.Duration { return time.Duration(e.BatchMaxSeconds) * time.Second }

// Open is whether a wait that applies has no timeout: then no batch has an upper bound.
func (e *Estimate) Open() bool { return len(e.Unbounded) > 0 }

// Start is when batch i (from 0) starts at the latest: every batch before it ran to its
// timeouts.
func (e *Estimate) Start(i int) time.Duration { return time.Duration(i) * e.Max() }

// Total is the whole rollout at least and at most (at most without bound when Open).
func (e *Estimate) Total() (time.Duration, time.Duration) {
	return time.Duration(e.TotalMinSeconds) * time.Second, time.Duration(e.TotalMaxSeconds) * time.Second
}

package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Status describes the active policy set and the latest load attempt, for the readiness
// detail of `driverguard serve`, logs and tests.
type Status struct {
	// Dirs are the watched policy directories.
	Dirs []string `json:"dirs,omitempty"`
	// Generation counts successful loads (1 after New).
	Generation int64 `json:"generation"`
	// LoadedAt is when the active set was loaded.
	LoadedAt time.Time `json:"loadedAt"`
	// Policies are the evaluated policy packages, sorted.
	Policies []string `json:"policies"`
	// Disabled are the policy packages turned off, sorted.
	Disabled []string `json:"disabled,omitempty"`
	// Files are the user's module and data files in the active set.
	Files []string `json:"files,omitempty"`
	// Error is set when the latest load failed: the set loaded at LoadedAt stays active.
	Error *LoadError `json:"error,omitempty"`
	// FailedAt is when the latest load failed.
	FailedAt time.Time `json:"failedAt,omitzero"`
}

// Healthy reports whether the latest load succeeded (the active set is what the directories
// hold).
func (s Status) Healthy() bool { return s.Error == nil }

// String summarises the status on one line per problem.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy generation %d: %d policies", s.Generation, len(s.Policies))
	if len(s.Disabled) > 0 {
		fmt.Fprintf(&b, " (%d disabled)", len(s.Disabled))
	}
	if len(s.Dirs) > 0 {
		fmt.Fprintf(&b, " (watching %s)", strings.Join(s.Dirs, ", "))
	}
	if s.Error != nil {
		fmt.Fprintf(&b, "; the latest reload failed, generation %d stays active:", s.Generation)
		s.Error.writeProblems(&b)
	}
	return b.String()
}

// Status returns the engine's current status.
func (e *Engine) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// Policies describes every policy of the active set, enabled or disabled, sorted by package.
func (e *Engine) Policies() []PolicyInfo {
	return slices.Clone(e.active.Load().infos)
}

package plan

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEstimateRollout: a batch takes the driver restart at least and every wait that applies
// at most; the batches run one after another; a wait without a timeout leaves the rollout
// without an upper bound, and is listed.
func TestEstimateRollout(t *testing.T) {
	for _, tt := range []struct {
		name     string
		rollout  Rollout
		min, max time.Duration
		waits    []string
		open     []string
	}{
		{"NPU pods only", Rollout{NPUPodDeletionTimeoutSeconds: 300}, DriverRestart, DriverRestart + 5*time.Minute,
			[]string{"npuPodDeletion.timeoutSeconds 300"}, []string{}},
		{"drain and NPU pods", Rollout{Drain: true, DrainTimeoutSeconds: 600, NPUPodDeletionTimeoutSeconds: 300}, DriverRestart, DriverRestart + 15*time.Minute,
			[]string{"npuPodDeletion.timeoutSeconds 300", "drain.timeoutSeconds 600"}, []string{}},
		{"a drain without a timeout", Rollout{Drain: true, NPUPodDeletionTimeoutSeconds: 60}, DriverRestart, DriverRestart + time.Minute,
			[]string{"npuPodDeletion.timeoutSeconds 60", "drain without a timeout"}, []string{"drain (timeoutSeconds 0: waits indefinitely)"}},
		{"reboot and waitForCompletion", Rollout{NPUPodDeletionTimeoutSeconds: 60, WaitForCompletion: true, WaitForCompletionTimeoutSeconds: 120, Reboot: true, RebootTimeoutSeconds: 600},
			DriverRestart, DriverRestart + 13*time.Minute,
			[]string{"npuPodDeletion.timeoutSeconds 60", "waitForCompletion.timeoutSeconds 120", "reboot.rebootTimeoutSeconds 600"}, []string{}},
		{"a reboot without a timeout", Rollout{NPUPodDeletionTimeoutSeconds: 60, Reboot: true}, DriverRestart, DriverRestart + time.Minute,
			[]string{"npuPodDeletion.timeoutSeconds 60", "reboot without a timeout"}, []string{"reboot (rebootTimeoutSeconds 0: no timeout)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := EstimateRollout(tt.rollout, 3)
			assert.Equal(t, 3, e.Batches)
			assert.Equal(t, int64(120), e.DriverRestartSeconds)
			assert.Equal(t, tt.min, e.Min())
			assert.Equal(t, tt.max, e.Max())
			assert.Equal(t, tt.waits, e.Waits)
			assert.Equal(t, tt.open, e.Unbounded)
			assert.Equal(t, len(tt.open) > 0, e.Open())
			lo, hi := e.Total()
			assert.Equal(t, 3*tt.min, lo)
			assert.Equal(t, 3*tt.max, hi)
			assert.Equal(t, 2*tt.max, e.Start(2))
		})
	}
}

// TestPlanCarriesItsEstimate: the JSON of a plan holds the estimate, in seconds, with every
// list present; a plan without one (built by hand) gets the one of its rollout and batches.
func TestPlanCarriesItsEstimate(t *testing.T) {
	p := &Plan{Rollout: Rollout{Drain: true, DrainTimeoutSeconds: 300, NPUPodDeletionTimeoutSeconds: 300}, Batches: [][]string{{"a"}, {"b"}}}
	e := p.RolloutEstimate()
	assert.Equal(t, EstimateRollout(p.Rollout, 2), e)
	p.Estimate = e
	assert.Same(t, e, p.RolloutEstimate())
	data, err := json.Marshal(e)
	require.NoError(t, err)
	assert.JSONEq(t, `{"batches": 2, "driverRestartSeconds": 120, "batchMinSeconds": 120, "batchMaxSeconds": 720,
		"totalMinSeconds": 240, "totalMaxSeconds": 1440,
		"waits": ["npuPodDeletion.timeoutSeconds 300", "drain.timeoutSeconds 300"], "unbounded": []}`, string(data))
}

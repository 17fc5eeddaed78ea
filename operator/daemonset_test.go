package operator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/driverguard/driverguard/operator"
)

func TestDaemonSetNamesAndLabels(t *testing.T) {
	assert.Equal(t, "rbln-driver-atom-ubuntu22.04-6.8.0-90-generic", operator.DriverDaemonSet("rbln-driver", "atom-ubuntu22.04-6.8.0-90-generic"))
	assert.Equal(t, "rbln-driver-canary-smd", operator.SMDDaemonSet("rbln-driver-canary"))
	l := operator.DriverDaemonSetLabels("rbln-driver", "atom-ubuntu22.04-6.8.0-90-generic")
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/name":         "rbln-npu-operator",
		"app.kubernetes.io/component":    "rbln-driver",
		"rebellions.ai/driver-node-pool": "atom-ubuntu22.04-6.8.0-90-generic",
		"rebellions.ai/driver-instance":  "rbln-driver",
	}, l)
	kind, cr, pool := operator.Recognize(l)
	assert.Equal(t, operator.DriverKind, kind)
	assert.Equal(t, "rbln-driver", cr)
	assert.Equal(t, "atom-ubuntu22.04-6.8.0-90-generic", pool)

	kind, cr, _ = operator.Recognize(operator.SMDDaemonSetLabels("rbln-driver"))
	assert.Equal(t, operator.SMDKind, kind)
	assert.Equal(t, "rbln-driver", cr)
	assert.Equal(t, map[string]string{
		"rebellions.ai/npu.deploy.driver":   "true",
		"rebellions.ai/npu.driver.owner":    "rbln-driver",
		"rebellions.ai/npu.deploy.rbln-smd": "true",
	}, operator.SMDNodeSelector("rbln-driver"))

	for _, other := range []map[string]string{
		nil,
		{"app.kubernetes.io/component": "rbln-driver"},
		{"app.kubernetes.io/name": "rbln-npu-operator", "app.kubernetes.io/component": "rbln-device-plugin"},
		{"app.kubernetes.io/name": "other", "app.kubernetes.io/component": "rbln-driver"},
	} {
		kind, _, _ := operator.Recognize(other)
		assert.Equal(t, operator.NotOperator, kind, "%v", other)
	}
}

func TestDaemonSetNameProblem(t *testing.T) {
	assert.Empty(t, operator.DaemonSetNameProblem("rbln-driver", "atom-rhel9.4-5.14.0-427.13.1.el9.4"))
	assert.Contains(t, operator.DaemonSetNameProblem("rbln-driver", "atom-ubuntu22.04-"), "not a valid label value")
	assert.Contains(t, operator.DaemonSetNameProblem("rbln-driver", "atom-ubuntu22.04-5.4.0.-1"), "not a DNS-1123 subdomain")
	assert.Contains(t, operator.DaemonSetNameProblem("rbln-driver", "atom-Ubuntu22.04-6.8.0"), "not a DNS-1123 subdomain")
	assert.Contains(t, operator.DaemonSetNameProblem("rbln-driver", "atom-ubuntu22.04-6.1.0+rpt"), "not a valid label value")
	// a 63-character driver name and a 63-character pool: a 127-character DaemonSet name is valid
	assert.Empty(t, operator.DaemonSetNameProblem(strings.Repeat("d", 63), strings.Repeat("p", 63)))
}

func TestExcluded(t *testing.T) {
	assert.Nil(t, operator.Excluded("rbln-driver", nil, false))
	assert.Nil(t, operator.Excluded("rbln-driver-x", map[string]string{}, false), "an empty selector is a fallback, not an error")
	assert.Nil(t, operator.Excluded("Bad_Name", map[string]string{"bad key!": "v"}, false), "only the operator's own rules exclude")
	assert.True(t, operator.Excluded("rbln-driver", nil, true).Deleting)
	e := operator.Excluded("rbln-driver", map[string]string{operator.LabelDeployDriver: "true", operator.LabelOwner: "x"}, false)
	assert.Equal(t, `nodeSelector must not use reserved label key "rebellions.ai/npu.driver.owner" (the operator manages it itself)`, e.Message, "the owner key is checked first")
	e = operator.Excluded(strings.Repeat("a", 64), nil, false)
	assert.Contains(t, e.Message, "exceeds 63 characters")
	assert.Nil(t, operator.Excluded(strings.Repeat("a", 63), nil, false))
}

func TestActiveClusterPolicy(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, -1, operator.ActiveClusterPolicy(nil))
	assert.Equal(t, 1, operator.ActiveClusterPolicy([]operator.PolicyMeta{{Name: "a", Created: t0.Add(time.Hour)}, {Name: "b", Created: t0}}), "the oldest")
	assert.Equal(t, 0, operator.ActiveClusterPolicy([]operator.PolicyMeta{{Name: "a", Created: t0}, {Name: "b", Created: t0}}), "the smaller name on a tie")
	assert.Equal(t, 1, operator.ActiveClusterPolicy([]operator.PolicyMeta{{Name: "a", Created: t0, State: "ignored"}, {Name: "b", Created: t0.Add(time.Hour)}}), "ignored ones are skipped")
	assert.Equal(t, 1, operator.ActiveClusterPolicy([]operator.PolicyMeta{{Name: "b", State: "ignored"}, {Name: "a", Created: t0.Add(time.Hour), State: "ignored"}}), "all ignored: the first by name")
}

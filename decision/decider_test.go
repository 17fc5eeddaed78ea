package decision_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

var (
	atom   = wt.Sel(operator.LabelFamily, "atom")
	canary = wt.Sel("env", "canary")
	nodes  = []routing.Node{
		{Name: "n-atom", Labels: wt.CandidateLabels()},
		{Name: "n-canary", Labels: wt.CandidateLabels("env", "canary")},
	}
)

type ruleField struct{ Rule, Field string }

func findings(fs []decision.Finding) []ruleField {
	out := []ruleField{}
	for _, f := range fs {
		out = append(out, ruleField{f.Rule, f.Field})
	}
	return out
}

// views builds the same cluster as an immutable index (admission) and as a replayed cluster
// (render time): every decision must be the same on both.
func views(stored []v1alpha1.RBLNDriver) map[string]decision.View {
	return map[string]decision.View{
		"index":   routing.NewIndex(stored, nodes, routing.Options{}),
		"cluster": routing.NewCluster(nodes, stored, nil, routing.Options{}),
	}
}

func TestDriverRules(t *testing.T) {
	t.Parallel()
	stored := []v1alpha1.RBLNDriver{*wt.Driver("rbln-driver", nil), *wt.Driver("rbln-driver-atom", atom)}
	reserved := wt.Driver("rbln-driver-x", wt.Sel(operator.LabelOwner, "me"))
	tests := []struct {
		name     string
		op       string
		obj, old *v1alpha1.RBLNDriver
		deny     []ruleField
		warn     int
	}{
		{"allowed", "CREATE", wt.Driver("rbln-driver-rebel", wt.Sel(operator.LabelFamily, "rebel")), nil, []ruleField{}, 0},
		{"reserved key", "CREATE", reserved, nil, []ruleField{{"FieldValueForbidden", "spec.nodeSelector[rebellions.ai/npu.driver.owner]"}}, 0},
		{"empty selector", "CREATE", wt.Driver("rbln-driver-x", nil), nil, []ruleField{{"FieldValueRequired", "spec.nodeSelector"}}, 0},
		{"bad name: conflicts are judged on valid drivers only", "CREATE", wt.Driver("Rbln_Driver", atom), nil, []ruleField{{"FieldValueInvalid", "metadata.name"}}, 0},
		{"identical, and so tied on the existing nodes", "CREATE", wt.Driver("rbln-driver-atom2", atom), nil, []ruleField{{"IdenticalNodeSelector", "spec.nodeSelector"}, {"ConflictingNodeSelector", "spec.nodeSelector"}}, 0},
		{"tie on an existing node", "CREATE", wt.Driver("rbln-driver-canary", canary), nil, []ruleField{{"ConflictingNodeSelector", "spec.nodeSelector"}}, 0},
		{"future tie", "CREATE", wt.Driver("rbln-driver-zone", wt.Sel("zone", "a")), nil, []ruleField{}, 1},
		{"an old tie is a warning on UPDATE", "UPDATE", withVersion(wt.Driver("rbln-driver-canary", canary), "3.3.0"), wt.Driver("rbln-driver-canary", canary), []ruleField{}, 1},
		{"an update onto another's selector introduces the identical selector and the tie", "UPDATE", wt.Driver("rbln-driver-zone", atom), wt.Driver("rbln-driver-zone", wt.Sel("zone", "b")),
			[]ruleField{{"IdenticalNodeSelector", "spec.nodeSelector"}, {"ConflictingNodeSelector", "spec.nodeSelector"}}, 0},
		{"an old reserved key is a warning on UPDATE", "UPDATE", withVersion(wt.Driver("rbln-driver-x", wt.Sel(operator.LabelOwner, "me")), "3.3.0"), reserved, []ruleField{}, 1},
		{"a reserved key the update adds is denied", "UPDATE", wt.Driver("rbln-driver-x", wt.Sel(operator.LabelOwner, "me", "zone", "b")), wt.Driver("rbln-driver-x", wt.Sel("zone", "b")),
			[]ruleField{{"FieldValueForbidden", "spec.nodeSelector[rebellions.ai/npu.driver.owner]"}}, 0},
		{"a reserved key is one finding whatever its value", "UPDATE", wt.Driver("rbln-driver-x", wt.Sel(operator.LabelOwner, "you")), reserved, []ruleField{}, 1},
		{"a changed invalid value is a new finding", "UPDATE", wt.Driver("rbln-driver-x", wt.Sel("env", "-b")), wt.Driver("rbln-driver-x", wt.Sel("env", "-a")),
			[]ruleField{{"FieldValueInvalid", "spec.nodeSelector[env]"}}, 0},
		{"being deleted: always allowed", "UPDATE", deleting(wt.Driver("rbln-driver-atom2", atom)), wt.Driver("rbln-driver-atom2", atom), []ruleField{}, 0},
		{"being deleted, with a reserved key", "UPDATE", deleting(wt.Driver("rbln-driver-x", wt.Sel(operator.LabelOwner, "me"))), wt.Driver("rbln-driver-x", wt.Sel("zone", "b")), []ruleField{}, 0},
	}
	for _, tt := range tests {
		for vname, view := range views(append(stored, storedFor(tt.old)...)) {
			t.Run(tt.name+"/"+vname, func(t *testing.T) {
				t.Parallel()
				v, err := (&decision.Decider{}).Driver(t.Context(), view, decision.Request[*v1alpha1.RBLNDriver]{Operation: tt.op, Object: tt.obj, OldObject: tt.old})
				require.NoError(t, err)
				assert.Equal(t, tt.deny, findings(v.Denials))
				assert.Len(t, v.Warnings, tt.warn, "%v", v.WarningTexts())
				assert.Equal(t, len(tt.deny) == 0, v.Allowed())
			})
		}
	}
}

func storedFor(old *v1alpha1.RBLNDriver) []v1alpha1.RBLNDriver {
	if old == nil {
		return nil
	}
	return []v1alpha1.RBLNDriver{*old}
}

func deleting(d *v1alpha1.RBLNDriver) *v1alpha1.RBLNDriver {
	now := metav1.Now()
	d.DeletionTimestamp = &now
	return d
}

// TestPolicyOnUpdate: a deny the stored object already got is a warning, one the update
// introduces is denied; the stored object is evaluated only when the update is denied, and
// an object being deleted is never evaluated.
func TestPolicyOnUpdate(t *testing.T) {
	t.Parallel()
	// deny "latest" versions, with the version in the message
	pinned := func() *wt.Evaluator {
		return &wt.Evaluator{Fn: func(_ context.Context, in *policy.Input) (*policy.Decision, error) {
			d := in.Object.(*v1alpha1.RBLNDriver)
			dec := &policy.Decision{}
			if d.Spec.Version == "latest" || d.Spec.Version == "main" {
				dec.Deny = append(dec.Deny, policy.Message{Package: "driverguard.pinned", Rule: "deny", Msg: "spec.version " + d.Spec.Version + " is a moving tag"})
			}
			return dec, nil
		}}
	}
	latest := withVersion(wt.Driver("rbln-driver-atom", atom), "latest")
	tests := []struct {
		name        string
		obj, old    *v1alpha1.RBLNDriver
		deny, warns []string
		evaluations int
	}{
		{"clean update", withVersion(wt.Driver("rbln-driver-atom", atom), "3.3.0"), wt.Driver("rbln-driver-atom", atom), nil, nil, 1},
		{"introduced", latest, wt.Driver("rbln-driver-atom", atom), []string{"policy driverguard.pinned: spec.version latest is a moving tag"}, nil, 2},
		{"pre-existing", withVersion(withPull(wt.Driver("rbln-driver-atom", atom)), "latest"), latest, nil,
			[]string{"policy driverguard.pinned: spec.version latest is a moving tag (the stored object already has this; the update does not introduce it, so it is allowed: fix it when you can)"}, 2},
		{"the same problem, another message", withVersion(wt.Driver("rbln-driver-atom", atom), "main"), latest, []string{"policy driverguard.pinned: spec.version main is a moving tag"}, nil, 2},
		{"being deleted", deleting(withVersion(wt.Driver("rbln-driver-atom", atom), "latest")), wt.Driver("rbln-driver-atom", atom), nil, nil, 0},
		{"metadata only: nothing judged changes", withAnnotation(withVersion(wt.Driver("rbln-driver-atom", atom), "latest")), latest, nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev := pinned()
			v, err := (&decision.Decider{Policy: ev}).Driver(t.Context(), routing.NewIndex([]v1alpha1.RBLNDriver{*tt.old}, nodes, routing.Options{}),
				decision.Request[*v1alpha1.RBLNDriver]{Operation: "UPDATE", Object: tt.obj, OldObject: tt.old})
			require.NoError(t, err)
			var deny []string
			for _, f := range v.Denials {
				deny = append(deny, f.Text())
			}
			assert.Equal(t, tt.deny, deny)
			assert.Equal(t, tt.warns, nilIfEmpty(v.WarningTexts()))
			assert.Len(t, ev.Inputs(), tt.evaluations)
		})
	}
}

func withAnnotation(d *v1alpha1.RBLNDriver) *v1alpha1.RBLNDriver {
	d.Annotations = map[string]string{"meta.helm.sh/release-name": "dg"}
	return d
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func withPull(d *v1alpha1.RBLNDriver) *v1alpha1.RBLNDriver {
	d.Spec.ImagePullPolicy = "Always"
	return d
}

func withVersion(d *v1alpha1.RBLNDriver, v string) *v1alpha1.RBLNDriver {
	d.Spec.Version = v
	return d
}

// TestPolicyInput: the policies get the object as received, the old object, the user, and the
// routing verdict of the same assessment the conflict rules use.
func TestPolicyInput(t *testing.T) {
	t.Parallel()
	rec := &wt.Evaluator{Fn: func(context.Context, *policy.Input) (*policy.Decision, error) {
		return &policy.Decision{
			Deny: []policy.Message{{Package: "driverguard.team", Rule: "deny", Msg: "no"}},
			Warn: []policy.Message{{Package: "driverguard.team", Rule: "warn", Msg: "hm"}},
		}, nil
	}}
	d := &decision.Decider{Policy: rec}
	obj := wt.Driver("rbln-driver-canary", wt.Sel(operator.LabelFamily, "atom", "env", "canary"))
	raw := json.RawMessage(`{"kind":"RBLNDriver"}`)
	v, err := d.Driver(t.Context(), routing.NewIndex([]v1alpha1.RBLNDriver{*wt.Driver("rbln-driver-atom", atom)}, nodes, routing.Options{}),
		decision.Request[*v1alpha1.RBLNDriver]{Operation: "CREATE", Object: obj, RawObject: raw, Source: policy.SourceAdmission})
	require.NoError(t, err)
	assert.Equal(t, []ruleField{{"driverguard.team.deny", ""}}, findings(v.Denials))
	assert.Equal(t, "policy driverguard.team: no", v.Denials[0].Text())
	assert.Equal(t, []string{"policy driverguard.team: hm"}, v.WarningTexts())
	in := rec.Inputs()[0]
	assert.Equal(t, raw, in.Object)
	assert.Nil(t, in.OldObject)
	require.NotNil(t, in.Routing)
	assert.Equal(t, 1, in.Routing.Nodes)
	assert.Equal(t, []string{"n-canary"}, in.Routing.Pools[0].Nodes)

	cp, err := d.ClusterPolicy(t.Context(), decision.Request[*v1alpha1.RBLNClusterPolicy]{Operation: "CREATE", Object: wt.ClusterPolicy(false)})
	require.NoError(t, err)
	assert.False(t, cp.Allowed())
	assert.Nil(t, rec.Inputs()[1].Routing)
	assert.Equal(t, "RBLNClusterPolicy", rec.Inputs()[1].Object.(*v1alpha1.RBLNClusterPolicy).Kind)
}

func TestPolicyErrors(t *testing.T) {
	t.Parallel()
	failing := &wt.Evaluator{Fn: func(context.Context, *policy.Input) (*policy.Decision, error) {
		return nil, errors.New("eval_conflict_error")
	}}
	req := decision.Request[*v1alpha1.RBLNDriver]{Operation: "CREATE", Object: wt.Driver("rbln-driver", nil)}
	_, err := (&decision.Decider{Policy: failing}).Driver(t.Context(), routing.NewIndex(nil, nil, routing.Options{}), req)
	var u *decision.UnavailableError
	require.ErrorAs(t, err, &u)
	assert.Contains(t, err.Error(), "eval_conflict_error")
	v, err := (&decision.Decider{Policy: failing, PolicyFailOpen: true}).Driver(t.Context(), routing.NewIndex(nil, nil, routing.Options{}), req)
	require.NoError(t, err)
	assert.True(t, v.Allowed())
	assert.Equal(t, finding.RulePolicyUnavailable, v.Warnings[0].Rule)
}

func TestClusterPolicyRules(t *testing.T) {
	t.Parallel()
	cp := wt.ClusterPolicy(false)
	cp.Name = "other"
	cp.Spec.Driver.UpgradePolicy.MaxParallelUpgrades = -1
	cp.Spec.Driver.UpgradePolicy.Reboot.Enable = true
	v, err := (&decision.Decider{}).ClusterPolicy(t.Context(), decision.Request[*v1alpha1.RBLNClusterPolicy]{Operation: "CREATE", Object: cp})
	require.NoError(t, err)
	assert.Equal(t, []ruleField{{"FieldValueInvalid", "spec.driver.upgradePolicy.maxParallelUpgrades"}}, findings(v.Denials))
	assert.Contains(t, v.Denials[0].Message, "use 0 for unlimited")
	assert.Equal(t, []ruleField{{finding.RuleUpgradePolicy, ""}, {finding.RuleClusterPolicyName, "metadata.name"}}, findings(v.Warnings))

	// On UPDATE the negative count the stored policy already had is a warning; a new one is not.
	updated := cp.DeepCopy()
	updated.Spec.Driver.UpgradePolicy.NPUPodDeletion.TimeoutSeconds = 600
	v, err = (&decision.Decider{}).ClusterPolicy(t.Context(), decision.Request[*v1alpha1.RBLNClusterPolicy]{Operation: "UPDATE", Object: updated, OldObject: cp})
	require.NoError(t, err)
	assert.True(t, v.Allowed())
	assert.Contains(t, v.WarningTexts()[0], "maxParallelUpgrades: Invalid value: -1")
	updated.Spec.Driver.UpgradePolicy.MaxParallelUpgrades = -2
	v, err = (&decision.Decider{}).ClusterPolicy(t.Context(), decision.Request[*v1alpha1.RBLNClusterPolicy]{Operation: "UPDATE", Object: updated, OldObject: cp})
	require.NoError(t, err)
	assert.False(t, v.Allowed(), "a different value is a new finding")
	deleted := updated.DeepCopy()
	now := metav1.Now()
	deleted.DeletionTimestamp = &now
	v, err = (&decision.Decider{}).ClusterPolicy(t.Context(), decision.Request[*v1alpha1.RBLNClusterPolicy]{Operation: "UPDATE", Object: deleted, OldObject: cp})
	require.NoError(t, err)
	assert.True(t, v.Allowed())
	assert.Empty(t, v.Warnings)
}

// TestLongValuesAreCut: a 1 MB selector value is never echoed in full.
func TestLongValuesAreCut(t *testing.T) {
	t.Parallel()
	long := make([]byte, 1<<20)
	for i := range long {
		long[i] = 'a'
	}
	v, err := (&decision.Decider{}).Driver(t.Context(), routing.NewIndex(nil, nil, routing.Options{}), decision.Request[*v1alpha1.RBLNDriver]{
		Operation: "CREATE", Object: wt.Driver("rbln-driver-x", wt.Sel("env", string(long)))})
	require.NoError(t, err)
	require.Len(t, v.Denials, 1)
	assert.Less(t, len(v.Denials[0].Message), 500)
	assert.Contains(t, v.Denials[0].Message, "(1048576 bytes)")
}

// TestVerdictBounds: a verdict holds at most MaxFindings denials and warnings and counts the
// rest; a policy message is cut to MaxMessageBytes; an object over a size limit is denied for
// its size without being handed to the policies.
func TestVerdictBounds(t *testing.T) {
	t.Parallel()
	bad := map[string]string{}
	for i := range 64 {
		bad[fmt.Sprintf("bad key %02d!", i)] = "bad value!"
	}
	long := strings.Repeat("m", 10_000)
	many := make([]policy.Message, 120)
	for i := range many {
		many[i] = policy.Message{Package: "driverguard.team", Msg: fmt.Sprintf("warning %d %s", i, long)}
	}
	eval := &wt.Evaluator{Fn: func(context.Context, *policy.Input) (*policy.Decision, error) {
		return &policy.Decision{Deny: []policy.Message{{Package: "driverguard.team", Msg: long}}, Warn: many}, nil
	}}
	d := &decision.Decider{Policy: eval}
	ctx := context.Background()

	v, err := d.Driver(ctx, routing.NewIndex(nil, nodes, routing.Options{}), decision.Request[*v1alpha1.RBLNDriver]{Operation: "CREATE", Object: wt.Driver("rbln-driver-x", bad)})
	require.NoError(t, err)
	assert.False(t, v.Allowed())
	assert.Len(t, v.Denials, decision.MaxFindings)
	assert.Equal(t, 128+1-decision.MaxFindings, v.OmittedDenials, "128 syntax findings and one policy deny")
	assert.Len(t, v.Warnings, decision.MaxFindings)
	assert.Equal(t, 120-decision.MaxFindings, v.OmittedWarnings)
	for _, w := range v.Warnings {
		assert.LessOrEqual(t, len(w.Message), decision.MaxMessageBytes+32)
	}
	assert.Equal(t, fmt.Sprintf("and %d more warnings", 120-decision.MaxFindings), v.WarningTexts()[decision.MaxFindings])
	texts := v.BoundedWarningTexts(4096)
	assert.Less(t, len(texts), 10)
	assert.Equal(t, fmt.Sprintf("and %d more warnings", 120-len(texts)+1), texts[len(texts)-1])

	calls := len(eval.Inputs())
	sel := map[string]string{}
	for i := range 100_000 {
		sel[fmt.Sprintf("k%d", i)] = "v"
	}
	v, err = d.Driver(ctx, routing.NewIndex(nil, nodes, routing.Options{}), decision.Request[*v1alpha1.RBLNDriver]{Operation: "CREATE", Object: wt.Driver("rbln-driver-y", sel)})
	require.NoError(t, err)
	assert.Equal(t, []ruleField{{"FieldValueTooMany", "spec.nodeSelector"}}, findings(v.Denials))
	assert.Empty(t, v.Warnings)
	assert.Equal(t, calls, len(eval.Inputs()), "the policies are not evaluated")

	// annotations over Kubernetes' 256 KiB in all: denied for their size the same way
	big := wt.Driver("rbln-driver-z", map[string]string{"x": "z"})
	big.Spec.Annotations = map[string]string{"a": strings.Repeat("v", 200<<10), "b": strings.Repeat("v", 100<<10)}
	v, err = d.Driver(ctx, routing.NewIndex(nil, nodes, routing.Options{}), decision.Request[*v1alpha1.RBLNDriver]{Operation: "CREATE", Object: big})
	require.NoError(t, err)
	assert.Equal(t, []ruleField{{"FieldValueTooLong", "spec.annotations"}}, findings(v.Denials))
	assert.Contains(t, v.Denials[0].Message, "annotations size 307202 is larger than limit 262144")
	assert.Less(t, len(v.Denials[0].Message), 500)
	assert.Equal(t, calls, len(eval.Inputs()), "the policies are not evaluated")
}

// TestKernelTagOnBothViews: the bundled library's kernel_tag reads input.routing, which the
// decider builds on the index only when the pools' tags can make it fire (a guard; on the
// replayed cluster, always). A driver over a node whose kernel makes an invalid tag is denied
// on both views with the same message; one over valid kernels only is not, on create and update.
func TestKernelTagOnBothViews(t *testing.T) {
	t.Parallel()
	engine, err := policy.New(t.Context(), policy.Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	require.True(t, engine.GuardsRouting(), "the library's only routing reader is guarded")
	kernelNodes := []routing.Node{
		{Name: "n-ok", Labels: wt.CandidateLabels("rack", "r1")},
		{Name: "n-underscore", Labels: wt.CandidateLabels("rack", "r1", operator.LabelKernel, "5.15.0_custom")},
		{Name: "n-plus", Labels: wt.CandidateLabels("rack", "r2", operator.LabelKernel, "5.15.0+custom")},
	}
	stored := []v1alpha1.RBLNDriver{*wt.Driver("rbln-driver", nil)}
	for _, tt := range []struct {
		name   string
		sel    map[string]string
		denied bool
	}{
		{"valid kernels", wt.Sel("rack", "r1"), false},
		{"plus in a kernel", wt.Sel("rack", "r2"), true},
		{"both", wt.Sel(operator.LabelFamily, "atom"), true},
	} {
		for name, view := range map[string]decision.View{"index": routing.NewIndex(stored, kernelNodes, routing.Options{}), "cluster": routing.NewCluster(kernelNodes, stored, nil, routing.Options{})} {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				obj := wt.Driver("rbln-driver-k", tt.sel)
				old := wt.Driver("rbln-driver-k", wt.Sel("rack", "r9"))
				for _, req := range []decision.Request[*v1alpha1.RBLNDriver]{
					{Operation: policy.OperationCreate, Object: obj, Source: policy.SourceAdmission},
					{Operation: policy.OperationUpdate, Object: obj, OldObject: old, Source: policy.SourceAdmission},
				} {
					v, err := (&decision.Decider{Policy: engine}).Driver(t.Context(), view, req)
					require.NoError(t, err)
					var msgs []string
					for _, f := range v.Denials {
						if f.Rule == "driverguard.lib.kernel_tag.deny" {
							msgs = append(msgs, f.Message)
						}
					}
					if !tt.denied {
						assert.Empty(t, msgs, req.Operation)
						continue
					}
					require.Len(t, msgs, 1, req.Operation)
					assert.Contains(t, msgs[0], `"3.2.2-5.15.0+custom-ubuntu22.04" for 1 node(s) (n-plus)`)
				}
			})
		}
	}
}

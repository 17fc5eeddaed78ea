package decision_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// FuzzDriverDecision decides on an RBLNDriver decoded from arbitrary JSON (as the webhook
// decodes it), against a small cluster, as CREATE and as an UPDATE of a stored driver, with a
// policy that echoes the object: the decision never panics, the same object gets the same
// verdict on both views (admission's index and render time's replayed cluster), and what the
// verdict holds stays bounded.
func FuzzDriverDecision(f *testing.F) {
	for _, d := range []*v1alpha1.RBLNDriver{
		wt.Driver("rbln-driver", nil),
		wt.Driver("rbln-driver-atom", atom),
		wt.Driver("rbln-driver-x", wt.Sel(operator.LabelOwner, "me", "a b", "c d")),
		wt.Driver("rbln-driver-kernel", wt.Sel(operator.LabelFamily, "atom", "feature.node.kubernetes.io/kernel-version.full", "6.8.0+1_x")),
		wt.Driver(strings.Repeat("n", 64), map[string]string{strings.Repeat("k", 40): strings.Repeat("v", 64)}),
	} {
		b, _ := json.Marshal(d)
		f.Add(b)
	}
	f.Add([]byte(`{"metadata":{"name":"rbln-driver-e"},"spec":{"nodeSelector":{},"version":"","registry":"","image":""}}`))
	f.Add([]byte(`{"metadata":{"name":"rbln-driver-t","deletionTimestamp":"2020-01-01T00:00:00Z"},"spec":{"tolerations":[{},{},{}],"env":[{"name":""}]}}`))

	stored := []v1alpha1.RBLNDriver{*wt.Driver("rbln-driver", nil), *wt.Driver("rbln-driver-atom", atom), *wt.Driver("rbln-driver-canary", canary)}
	echo := &wt.Evaluator{Fn: func(_ context.Context, in *policy.Input) (*policy.Decision, error) {
		b, _ := json.Marshal(in.Object)
		return &policy.Decision{Deny: []policy.Message{{Package: "driverguard.echo", Msg: string(b)}}, Warn: []policy.Message{{Package: "driverguard.echo", Msg: string(b)}}}, nil
	}}
	d := &decision.Decider{Policy: echo}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj v1alpha1.RBLNDriver
		if json.Unmarshal(data, &obj) != nil {
			return
		}
		ctx := context.Background()
		for _, op := range []string{policy.OperationCreate, policy.OperationUpdate} {
			req := decision.Request[*v1alpha1.RBLNDriver]{Operation: op, Object: &obj}
			if op == policy.OperationUpdate {
				req.OldObject = &stored[1]
			}
			var verdicts []*decision.Verdict
			for _, view := range []decision.View{routing.NewIndex(stored, nodes, routing.Options{}), routing.NewCluster(nodes, stored, nil, routing.Options{})} {
				v, err := d.Driver(ctx, view, req)
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				if len(v.Denials) > decision.MaxFindings || len(v.Warnings) > decision.MaxFindings {
					t.Fatalf("%s: %d denials, %d warnings", op, len(v.Denials), len(v.Warnings))
				}
				for _, f := range append(append([]decision.Finding{}, v.Denials...), v.Warnings...) {
					if len(f.Message) > decision.MaxMessageBytes+64 || len(f.Field) > 512 {
						t.Fatalf("%s: a finding of %d bytes (field %d)", op, len(f.Message), len(f.Field))
					}
				}
				verdicts = append(verdicts, v)
			}
			a, _ := json.Marshal(verdicts[0])
			b, _ := json.Marshal(verdicts[1])
			if string(a) != string(b) {
				t.Fatalf("%s: the index and the replayed cluster disagree:\n%s\n%s", op, a, b)
			}
		}
	})
}

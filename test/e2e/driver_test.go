package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// mustDeny checks that err is the webhook's denial containing every want.
func mustDeny(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("allowed, want a denial containing %q", want)
	}
	for _, w := range append([]string{"denied the request"}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not contain %q:\n%v", w, err)
		}
	}
}

// mustRefuse: the API server refused err's object itself (its CRD's rules), before any
// webhook was called, with a message containing want.
func mustRefuse(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("allowed, want a refusal containing %q", want)
	}
	if strings.Contains(err.Error(), "denied the request") {
		t.Errorf("the webhook refused it, not the CRD: %v", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not contain %q:\n%v", w, err)
		}
	}
}

func mustWarn(t *testing.T, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no warning contains %q; warnings: %q", w, got)
		}
	}
}

// dryRun creates obj with dryRun=All: the webhook decides, nothing is stored.
func dryRun(c client.Client, obj client.Object) error {
	return c.Create(context.Background(), obj.DeepCopyObject().(client.Object), client.DryRunAll)
}

// TestDriverSyntaxRules: every syntax rule of docs/webhook.md "Decisions", through the API server. They are the
// CRD's rules too (docs/webhook.md "With the webhook away"), which the API server applies before it calls the validating
// webhook: the refusal is the CRD's, naming the field, the rule and the fix as the webhook's
// does (the webhook's own messages: the webhook and decision packages, test/crd for the CRD
// with the webhook away).
func TestDriverSyntaxRules(t *testing.T) {
	c, w := newClient(t)
	key := "syntax.e2e/case"
	long := "rbln-driver-" + strings.Repeat("x", 52) // 64 characters: a valid object name, not a label value
	tests := []struct {
		name string
		obj  *v1alpha1.RBLNDriver
		want []string // empty: allowed
	}{
		{"default resource with an empty selector", wt.Driver("rbln-driver", nil), nil},
		{"instance with a selector", wt.Driver("rbln-driver-syntax", wt.Sel(key, "ok")), nil},
		{"empty selector on an instance", wt.Driver("rbln-driver-syntax", nil),
			[]string{"spec.nodeSelector: Required value: only the default resource rbln-driver may have an empty selector"}},
		{"reserved owner key", wt.Driver("rbln-driver-syntax", wt.Sel(operator.LabelOwner, "rbln-driver", key, "a")),
			[]string{"spec.nodeSelector: Forbidden: rebellions.ai/npu.driver.owner is reserved", "remove it from the selector"}},
		{"reserved deploy key", wt.Driver("rbln-driver-syntax", wt.Sel(operator.LabelDeployDriver, "true")),
			[]string{"spec.nodeSelector: Forbidden: rebellions.ai/npu.deploy.driver is reserved"}},
		{"invalid label key", wt.Driver("rbln-driver-syntax", wt.Sel("bad key", "a")),
			[]string{"spec.nodeSelector", "key bad key is not a valid label key"}},
		{"invalid label value", wt.Driver("rbln-driver-syntax", wt.Sel(key, "a b")),
			[]string{"spec.nodeSelector", "the value of syntax.e2e/case is not a valid label value"}},
		{"name with dots", wt.Driver("rbln.driver.syntax", wt.Sel(key, "a")),
			[]string{`metadata.name: Invalid value: "rbln.driver.syntax"`, "rebellions.ai/npu.driver.owner label value"}},
		{"name longer than a label value", wt.Driver(long, wt.Sel(key, "a")),
			[]string{"metadata.name", "63"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dryRun(c, tt.obj)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("denied: %v", err)
				}
				return
			}
			mustRefuse(t, err, tt.want...)
			if !apierrors.IsInvalid(err) {
				t.Errorf("want a 422 Invalid status, got %v", apierrors.ReasonForError(err))
			}
		})
	}
	if got := w.Take(); len(got) > 0 {
		t.Errorf("unexpected warnings %q", got)
	}
}

// TestDriverConflicts: identical selectors, ties on labelled nodes, future ties, updates —
// and relabelling a node changes the decision.
func TestDriverConflicts(t *testing.T) {
	c, w := newClient(t)
	fam := "conflicts.e2e/family"
	env := "conflicts.e2e/env"
	create(t, c, wt.Driver("rbln-driver-c-base", wt.Sel(fam, "atom")))
	create(t, c, wt.Node("conflicts-n1", wt.Sel(operator.LabelDeployDriver, "true", fam, "atom")))
	waitForDriver(t, c, "rbln-driver-c-base")

	t.Run("identical selector is denied", func(t *testing.T) {
		mustDeny(t, dryRun(c, wt.Driver("rbln-driver-c-same", wt.Sel(fam, "atom"))),
			`spec.nodeSelector: Invalid value: "{conflicts.e2e/family=atom}": is identical to the nodeSelector of RBLNDriver "rbln-driver-c-base"`,
			"change one selector")
	})
	t.Run("strict superset is allowed", func(t *testing.T) {
		if err := dryRun(c, wt.Driver("rbln-driver-c-canary", wt.Sel(fam, "atom", env, "canary"))); err != nil {
			t.Fatal(err)
		}
		if got := w.Take(); len(got) > 0 {
			t.Errorf("unexpected warnings %q", got)
		}
	})
	t.Run("tie that only a future node could have is allowed with a warning", func(t *testing.T) {
		w.Take()
		if err := dryRun(c, wt.Driver("rbln-driver-c-env", wt.Sel(env, "canary"))); err != nil {
			t.Fatal(err)
		}
		mustWarn(t, w.Take(), `could tie with RBLNDriver "rbln-driver-c-base" on a future node labelled {conflicts.e2e/env=canary,conflicts.e2e/family=atom}`)
	})

	// Label the node: the same request now ties on it and is denied, naming the node.
	setLabel(t, c, "conflicts-n1", env, "canary")
	t.Run("relabelling the node makes it a tie on an existing node", func(t *testing.T) {
		eventually(t, 10*time.Second, func() error {
			if err := dryRun(c, wt.Driver("rbln-driver-c-env", wt.Sel(env, "canary"))); err == nil {
				return fmt.Errorf("still allowed")
			}
			return nil
		})
		mustDeny(t, dryRun(c, wt.Driver("rbln-driver-c-env", wt.Sel(env, "canary"))),
			`ties with RBLNDriver "rbln-driver-c-base" on existing node(s) conflicts-n1`, "strict superset")
	})
	t.Run("a non-candidate node never ties", func(t *testing.T) {
		setLabel(t, c, "conflicts-n1", operator.LabelDeployDriver, "false")
		eventually(t, 10*time.Second, func() error { return dryRun(c, wt.Driver("rbln-driver-c-env", wt.Sel(env, "canary"))) })
		setLabel(t, c, "conflicts-n1", operator.LabelDeployDriver, "true")
		eventually(t, 10*time.Second, func() error {
			if dryRun(c, wt.Driver("rbln-driver-c-env", wt.Sel(env, "canary"))) == nil {
				return fmt.Errorf("still allowed")
			}
			return nil
		})
	})

	// A pre-existing tie: created while no node tied, then a node was labelled.
	t.Run("update keeping a pre-existing tie is a warning; one introducing a tie is denied", func(t *testing.T) {
		removeLabel(t, c, "conflicts-n1", env)
		zone := "conflicts.e2e/zone"
		old := wt.Driver("rbln-driver-c-zone", wt.Sel(zone, "a"))
		eventually(t, 10*time.Second, func() error { return dryRun(c, old) })
		create(t, c, old)
		setLabel(t, c, "conflicts-n1", zone, "a") // now rbln-driver-c-base and -zone tie on conflicts-n1
		waitForDriver(t, c, old.Name)
		w.Take()
		eventually(t, 10*time.Second, func() error {
			bump := &v1alpha1.RBLNDriver{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), bump); err != nil {
				return err
			}
			bump.Spec.Version = "3.3.0"
			if err := c.Update(t.Context(), bump, client.DryRunAll); err != nil {
				return err
			}
			for _, msg := range w.Take() {
				if strings.Contains(msg, `already ties with RBLNDriver "rbln-driver-c-base" on existing node(s) conflicts-n1`) {
					return nil
				}
			}
			return fmt.Errorf("no pre-existing tie warning yet")
		})

		// Its own old version never conflicts: a superset of its old selector is fine.
		var cur v1alpha1.RBLNDriver
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.NodeSelector = wt.Sel(zone, "a", fam, "atom")
		if err := c.Update(t.Context(), cur.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("updating to a superset of its own selector: %v", err)
		}

		// A driver without any tie changing its selector to one that ties is denied.
		free := wt.Driver("rbln-driver-c-free", wt.Sel("conflicts.e2e/free", "x"))
		create(t, c, free)
		setLabel(t, c, "conflicts-n1", "conflicts.e2e/other", "x")
		eventually(t, 10*time.Second, func() error {
			var d v1alpha1.RBLNDriver
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(free), &d); err != nil {
				return err
			}
			d.Spec.NodeSelector = wt.Sel("conflicts.e2e/other", "x")
			err := c.Update(t.Context(), &d, client.DryRunAll)
			if err == nil {
				return fmt.Errorf("still allowed")
			}
			if !strings.Contains(err.Error(), `ties with RBLNDrivers "rbln-driver-c-base" and "rbln-driver-c-zone" on existing node(s) conflicts-n1`) {
				return err
			}
			return nil
		})
	})
	t.Run("conflicts among other drivers are not this object's fault", func(t *testing.T) {
		if err := dryRun(c, wt.Driver("rbln-driver-c-unrelated", wt.Sel("conflicts.e2e/unrelated", "x"))); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWebhookViewFollowsNodeLabels: the webhook's cached view follows node label changes,
// within a bounded poll, in both directions.
func TestWebhookViewFollowsNodeLabels(t *testing.T) {
	c, _ := newClient(t)
	a := "follow.e2e/a"
	b := "follow.e2e/b"
	create(t, c, wt.Driver("rbln-driver-f-a", wt.Sel(a, "1")))
	create(t, c, wt.Node("follow-n1", wt.Sel(operator.LabelDeployDriver, "true")))
	waitForDriver(t, c, "rbln-driver-f-a")
	candidate := wt.Driver("rbln-driver-f-b", wt.Sel(b, "1"))
	for i := range 3 {
		setLabel(t, c, "follow-n1", a, "1")
		setLabel(t, c, "follow-n1", b, "1")
		start := time.Now()
		eventually(t, 5*time.Second, func() error {
			if dryRun(c, candidate) == nil {
				return fmt.Errorf("round %d: the labelled node does not tie yet", i)
			}
			return nil
		})
		t.Logf("round %d: denied %v after labelling", i, time.Since(start).Round(time.Millisecond))
		removeLabel(t, c, "follow-n1", b)
		start = time.Now()
		eventually(t, 5*time.Second, func() error { return dryRun(c, candidate) })
		t.Logf("round %d: allowed %v after unlabelling", i, time.Since(start).Round(time.Millisecond))
	}
}

// TestPolicyHookThroughAPI: deny and warn messages of the configured policy evaluator, and
// fail-closed evaluation errors, as the API server reports them.
func TestPolicyHookThroughAPI(t *testing.T) {
	c, w := newClient(t)
	d := wt.Driver("rbln-driver-policy", wt.Sel("policy.e2e/x", "1"))
	d.Annotations = map[string]string{"policy.test/deny": "versions must be pinned to a release"}
	mustDeny(t, dryRun(c, d), "policy driverguard.test: versions must be pinned to a release")

	d.Annotations = map[string]string{"policy.test/warn": "drain.deleteEmptyDirData loses data"}
	if err := dryRun(c, d); err != nil {
		t.Fatal(err)
	}
	mustWarn(t, w.Take(), "policy driverguard.test: drain.deleteEmptyDirData loses data")

	d.Annotations = map[string]string{"policy.test/error": "engine unavailable"}
	err := dryRun(c, d)
	mustDeny(t, err, "policy evaluation failed: engine unavailable", "fail-closed")
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("want 503, got %v", apierrors.ReasonForError(err))
	}

	cp := wt.ClusterPolicy(false)
	cp.Annotations = map[string]string{"policy.test/deny": "no cluster policy changes on Fridays"}
	mustDeny(t, dryRun(c, cp), `admission webhook "rblnclusterpolicies.driverguard.rebellions.ai" denied the request`, "no cluster policy changes on Fridays")

	in := suite.policy.Inputs()
	last := in[len(in)-1]
	if last.Source != "admission" || last.UserInfo == nil || last.UserInfo.Username == "" {
		t.Errorf("policy input: source %q userInfo %+v", last.Source, last.UserInfo)
	}
}

// waitForDriver waits until the webhook's view holds the driver: a dry-run copy under another
// name is then denied as identical.
func waitForDriver(t *testing.T, c client.Client, name string) {
	t.Helper()
	var d v1alpha1.RBLNDriver
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	probe := wt.Driver(name+"-probe", d.Spec.NodeSelector)
	eventually(t, 10*time.Second, func() error {
		err := dryRun(c, probe)
		if err != nil && strings.Contains(err.Error(), fmt.Sprintf("identical to the nodeSelector of RBLNDriver %q", name)) {
			return nil
		}
		return fmt.Errorf("the webhook does not see %s yet (%w)", name, err)
	})
}

func setLabel(t *testing.T, c client.Client, node, key, value string) {
	t.Helper()
	patchNode(t, c, node, func(l map[string]string) { l[key] = value })
}

func removeLabel(t *testing.T, c client.Client, node, key string) {
	t.Helper()
	patchNode(t, c, node, func(l map[string]string) { delete(l, key) })
}

func patchNode(t *testing.T, c client.Client, name string, edit func(map[string]string)) {
	t.Helper()
	var n corev1.Node
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	edit(n.Labels)
	if err := c.Patch(t.Context(), &n, patch); err != nil {
		t.Fatal(err)
	}
}

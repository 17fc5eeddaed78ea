package e2e

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

const dsDenied = `admission webhook "driver-daemonsets.driverguard.rebellions.ai" denied the request`

func containerImage(ds *appsv1.DaemonSet, name string) string {
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

// TestDriverDaemonSets: driver DaemonSets created through the API come back with the composed
// image, the owner selector and the update strategy; others are untouched.
func TestDriverDaemonSets(t *testing.T) {
	c, w := newClient(t)
	create(t, c, wt.Driver("rbln-driver-ds", wt.Sel("ds.e2e/x", "1")))
	waitForDriver(t, c, "rbln-driver-ds")
	pool := wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel)

	t.Run("driver DaemonSet: composed image, owner selector, OnDelete", func(t *testing.T) {
		ds := wt.DaemonSet(driverNamespace, "rbln-driver-ds-atom-ubuntu22.04-6.8.0-90-generic", "rbln-driver-ds", "driver", pool)
		w.Take()
		create(t, c, ds)
		mustWarn(t, w.Take(), "driverguard set the image of container rbln-driver-container", "driverguard set updateStrategy OnDelete")
		if got, want := containerImage(ds, "rbln-driver-container"), "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"; got != want {
			t.Errorf("image %q, want %q", got, want)
		}
		if got := containerImage(ds, "sidecar"); got != "busybox:1.36" {
			t.Errorf("the sidecar image changed: %q", got)
		}
		want := maps.Clone(pool)
		want[operator.LabelOwner] = "rbln-driver-ds"
		want[operator.LabelDeployDriver] = "true"
		if got := ds.Spec.Template.Spec.NodeSelector; !maps.Equal(got, want) {
			t.Errorf("nodeSelector %v, want %v", got, want)
		}
		if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType || ds.Spec.UpdateStrategy.RollingUpdate != nil {
			t.Errorf("updateStrategy %+v, want OnDelete", ds.Spec.UpdateStrategy)
		}

		// Idempotent: an update that changes nothing the webhook owns leaves the spec (and
		// so the generation) as it was.
		gen := ds.Generation
		patch := client.MergeFrom(ds.DeepCopy())
		ds.Annotations = map[string]string{"touched": "yes"}
		if err := c.Patch(t.Context(), ds, patch); err != nil {
			t.Fatal(err)
		}
		if ds.Generation != gen {
			t.Errorf("generation %d -> %d: the second pass changed the spec", gen, ds.Generation)
		}
		// A placeholder image written back is composed again.
		var cur appsv1.DaemonSet
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(ds), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Template.Spec.Containers[0].Image = "placeholder:2"
		if err := c.Update(t.Context(), &cur); err != nil {
			t.Fatal(err)
		}
		if got := containerImage(&cur, "rbln-driver-container"); !strings.HasPrefix(got, "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-") {
			t.Errorf("after an update the image is %q", got)
		}
	})

	t.Run("smd DaemonSet: RSMD image", func(t *testing.T) {
		ds := wt.DaemonSet(driverNamespace, "rbln-driver-ds-smd", "rbln-driver-ds", "smd", nil)
		create(t, c, ds)
		if got, want := containerImage(ds, "rbln-smd"), "repo.rebellions.ai/rebellions/rbln-smd:3.2.2"; got != want {
			t.Errorf("image %q, want %q", got, want)
		}
		if ds.Spec.Template.Spec.NodeSelector[operator.LabelOwner] != "rbln-driver-ds" {
			t.Errorf("nodeSelector %v", ds.Spec.Template.Spec.NodeSelector)
		}
	})

	t.Run("an operator-rendered DaemonSet is stored as it is, without a warning", func(t *testing.T) {
		var drv v1alpha1.RBLNDriver
		if err := c.Get(t.Context(), client.ObjectKey{Name: "rbln-driver-ds"}, &drv); err != nil {
			t.Fatal(err)
		}
		for _, ds := range []*appsv1.DaemonSet{
			wt.OperatorDaemonSet(driverNamespace, &drv, wt.PoolLabels("rebel100", "rhel", "9.4", "5.14.0-427.13.1.el9_4.x86_64"), false),
			wt.OperatorDaemonSet(driverNamespace, &drv, nil, true),
		} {
			want := ds.DeepCopy()
			w.Take()
			create(t, c, ds)
			if got := w.Take(); len(got) > 0 {
				t.Errorf("%s: warnings %q", ds.Name, got)
			}
			if !maps.Equal(ds.Spec.Template.Spec.NodeSelector, want.Spec.Template.Spec.NodeSelector) ||
				containerImage(ds, want.Spec.Template.Spec.Containers[0].Name) != want.Spec.Template.Spec.Containers[0].Image {
				t.Errorf("%s changed: %+v", ds.Name, ds.Spec.Template.Spec)
			}
		}
	})

	t.Run("autoUpgrade: still OnDelete (the operator replaces driver pods itself)", func(t *testing.T) {
		create(t, c, wt.ClusterPolicy(true))
		ds := wt.DaemonSet(driverNamespace, "rbln-driver-ds-auto", "rbln-driver-ds", "driver", pool)
		eventually(t, 10*time.Second, func() error {
			probe := ds.DeepCopy()
			if err := c.Create(t.Context(), probe, client.DryRunAll); err != nil {
				return err
			}
			if probe.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
				return fmt.Errorf("updateStrategy %s", probe.Spec.UpdateStrategy.Type)
			}
			return nil
		})
	})

	t.Run("missing RBLNDriver is denied", func(t *testing.T) {
		err := c.Create(t.Context(), wt.DaemonSet(driverNamespace, "rbln-driver-gone-pool", "rbln-driver-gone", "driver", pool), client.DryRunAll)
		mustDeny(t, err, dsDenied, `metadata.labels[rebellions.ai/driver-instance]: Not found: "rbln-driver-gone"`, `RBLNDriver "rbln-driver-gone" does not exist`)
	})

	t.Run("missing pool label is denied", func(t *testing.T) {
		partial := maps.Clone(pool)
		delete(partial, operator.LabelOSVersion)
		err := c.Create(t.Context(), wt.DaemonSet(driverNamespace, "rbln-driver-ds-partial", "rbln-driver-ds", "driver", partial), client.DryRunAll)
		mustDeny(t, err, dsDenied, "spec.template.spec.nodeSelector: Required value", operator.LabelOSVersion)
	})

	t.Run("unrelated DaemonSets are untouched", func(t *testing.T) {
		// Not labelled at all, or with a component the objectSelector does not send.
		for _, labels := range []map[string]string{
			{"app": "fluentd"},
			{operator.LabelAppName: operator.AppName, operator.LabelComponent: "rbln-device-plugin", operator.LabelInstance: "rbln-driver-gone"},
			{operator.LabelAppName: operator.AppName, operator.LabelComponent: operator.ComponentDriver},    // no instance label: not sent
			{operator.LabelComponent: operator.ComponentDriver, operator.LabelInstance: "rbln-driver-gone"}, // not the operator's
		} {
			ds := wt.DaemonSet(driverNamespace, "unrelated", "", "driver", nil)
			ds.Labels = labels
			want := ds.Spec.DeepCopy()
			create(t, c, ds)
			if containerImage(ds, "rbln-driver-container") != "placeholder:latest" || len(ds.Spec.Template.Spec.NodeSelector) != 0 ||
				ds.Spec.UpdateStrategy.Type != want.UpdateStrategy.Type {
				t.Errorf("labels %v: mutated: %+v", labels, ds.Spec)
			}
			deleteAndWait(t, c, ds)
		}
	})
}

package webhook_test

import (
	"encoding/json"
	"fmt"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

const wantAtomImage = "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"

// patched applies the response's JSON patch to the request object.
func patched(t *testing.T, req admission.Request, resp admission.Response) *appsv1.DaemonSet {
	t.Helper()
	if err := resp.Complete(req); err != nil {
		t.Fatal(err)
	}
	out := req.Object.Raw
	if len(resp.Patch) > 0 {
		if *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("patch type %s", *resp.PatchType)
		}
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if out, err = p.Apply(out); err != nil {
			t.Fatal(err)
		}
	}
	var ds appsv1.DaemonSet
	if err := json.Unmarshal(out, &ds); err != nil {
		t.Fatal(err)
	}
	return &ds
}

func image(ds *appsv1.DaemonSet, container string) string {
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

func TestDaemonSetMutation(t *testing.T) {
	t.Parallel()
	pool := wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel)
	drivers := []*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil), wt.Driver("rbln-driver-atom", wt.Sel(v1alpha1.LabelFamily, "atom"))}
	tests := []struct {
		name         string
		ds           *appsv1.DaemonSet
		autoUpgrade  bool
		container    string
		image        string
		strategy     appsv1.DaemonSetUpdateStrategyType
		keepSelector map[string]string
	}{
		{name: "driver: pool image, owner selector, OnDelete",
			ds:        wt.DaemonSet("npu", "rbln-driver-atom-atom-ubuntu22.04-6.8.0-90-generic", "rbln-driver-atom", "driver", pool),
			container: webhook.DriverContainer, image: wantAtomImage, strategy: appsv1.OnDeleteDaemonSetStrategyType, keepSelector: pool},
		{name: "driver with autoUpgrade: RollingUpdate",
			ds:          wt.DaemonSet("npu", "rbln-driver-atom-pool", "rbln-driver-atom", "driver", pool),
			autoUpgrade: true,
			container:   webhook.DriverContainer, image: wantAtomImage, strategy: appsv1.RollingUpdateDaemonSetStrategyType, keepSelector: pool},
		{name: "driver of the default resource",
			ds:        wt.DaemonSet("npu", "rbln-driver-pool", "rbln-driver", "driver", wt.PoolLabels("rebel", "rhel", "9.4", "5.14.0-427.el9")),
			container: webhook.DriverContainer, image: "repo.rebellions.ai/rebellions/rebel/rbln-driver:3.2.2-5.14.0-427.el9-rhel9.4",
			strategy: appsv1.OnDeleteDaemonSetStrategyType},
		{name: "smd: RSMD image",
			ds:        wt.DaemonSet("npu", "rbln-driver-atom-smd", "rbln-driver-atom", "smd", nil),
			container: webhook.SMDContainer, image: "repo.rebellions.ai/rebellions/rbln-smd:3.2.2", strategy: appsv1.OnDeleteDaemonSetStrategyType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hooks := webhook.New(state(drivers, nil, wt.ClusterPolicy(tt.autoUpgrade)), webhook.Options{})
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
				var req admission.Request
				if op == admissionv1.Update {
					req = wt.Request(op, tt.ds, tt.ds)
				} else {
					req = wt.Request(op, tt.ds, nil)
				}
				resp := handle(t, hooks, webhook.PathMutateDaemonSet, req)
				expect(t, resp, true, nil, nil)
				got := patched(t, req, resp)
				cr := tt.ds.Labels[v1alpha1.LabelDriverInstance]
				if img := image(got, tt.container); img != tt.image {
					t.Errorf("%s image = %q, want %q", tt.container, img, tt.image)
				}
				if img := image(got, "sidecar"); img != "busybox:1.36" {
					t.Errorf("the sidecar changed: %q", img)
				}
				sel := got.Spec.Template.Spec.NodeSelector
				if sel[v1alpha1.LabelOwner] != cr || sel[v1alpha1.LabelDeployDriver] != "true" {
					t.Errorf("nodeSelector %v lacks %s=%s and %s=true", sel, v1alpha1.LabelOwner, cr, v1alpha1.LabelDeployDriver)
				}
				for k, v := range tt.keepSelector {
					if sel[k] != v {
						t.Errorf("pool label %s=%s lost: %v", k, v, sel)
					}
				}
				if got.Spec.UpdateStrategy.Type != tt.strategy {
					t.Errorf("updateStrategy %s, want %s", got.Spec.UpdateStrategy.Type, tt.strategy)
				}
				if tt.strategy == appsv1.OnDeleteDaemonSetStrategyType && got.Spec.UpdateStrategy.RollingUpdate != nil {
					t.Errorf("OnDelete keeps rollingUpdate: %+v", got.Spec.UpdateStrategy)
				}

				// Idempotent: a second pass over the mutated object yields an empty patch.
				again := wt.Request(admissionv1.Create, got, nil)
				resp2 := handle(t, hooks, webhook.PathMutateDaemonSet, again)
				if !resp2.Allowed || len(resp2.Patches) != 0 {
					t.Errorf("second pass: allowed=%v patches=%v", resp2.Allowed, resp2.Patches)
				}
			}
		})
	}
}

func TestDaemonSetMutationOnlyTouchesItsFields(t *testing.T) {
	t.Parallel()
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nil, nil), webhook.Options{})
	ds := wt.DaemonSet("npu", "d", "rbln-driver", "driver", wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel))
	resp := handle(t, hooks, webhook.PathMutateDaemonSet, wt.Request(admissionv1.Create, ds, nil))
	paths := map[string]bool{}
	for _, p := range resp.Patches {
		paths[p.Path] = true
	}
	want := []string{
		"/spec/template/spec/containers/0/image",
		"/spec/template/spec/nodeSelector/rebellions.ai~1npu.driver.owner",
		"/spec/template/spec/nodeSelector/rebellions.ai~1npu.deploy.driver",
	}
	for _, p := range want {
		if !paths[p] {
			t.Errorf("no patch operation on %s: %+v", p, resp.Patches)
		}
	}
	for p := range paths {
		switch {
		case p == want[0], p == want[1], p == want[2], len(p) >= len("/spec/updateStrategy") && p[:len("/spec/updateStrategy")] == "/spec/updateStrategy":
		default:
			t.Errorf("unexpected patch operation on %s", p)
		}
	}
}

func TestDaemonSetDenials(t *testing.T) {
	t.Parallel()
	pool := wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel)
	badKernel := wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, "6.1.0+rpt-rpi-v8")
	noSMD := wt.Driver("rbln-driver-nosmd", wt.Sel("env", "x"))
	noSMD.Spec.SMD = nil
	invalid := wt.Driver("rbln-driver-invalid", wt.Sel(v1alpha1.LabelOwner, "x"))
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil), noSMD, invalid}, nil, nil), webhook.Options{})
	withoutContainer := wt.DaemonSet("npu", "d", "rbln-driver", "driver", pool)
	withoutContainer.Spec.Template.Spec.Containers[0].Name = "driver"
	noInstance := wt.DaemonSet("npu", "d", "rbln-driver", "driver", pool)
	delete(noInstance.Labels, v1alpha1.LabelDriverInstance)
	missingKernel := wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel)
	delete(missingKernel, v1alpha1.LabelKernel)
	noFamily := wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel)
	delete(noFamily, v1alpha1.LabelFamily)
	twoDrivers := wt.DaemonSet("npu", "d", "rbln-driver", "driver", pool)
	twoDrivers.Spec.Template.Spec.Containers = append(twoDrivers.Spec.Template.Spec.Containers, twoDrivers.Spec.Template.Spec.Containers[0])
	manyContainers := wt.DaemonSet("npu", "d", "rbln-driver", "driver", pool)
	for i := range webhook.MaxDaemonSetContainers {
		c := manyContainers.Spec.Template.Spec.Containers[0]
		c.Name = fmt.Sprintf("sidecar-%d", i)
		manyContainers.Spec.Template.Spec.Containers = append(manyContainers.Spec.Template.Spec.Containers, c)
	}
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		want []string
	}{
		{"RBLNDriver does not exist", wt.DaemonSet("npu", "d", "rbln-driver-gone", "driver", pool),
			[]string{`metadata.labels[rebellions.ai/npu.driver.instance]: Not found: "rbln-driver-gone"`, `RBLNDriver "rbln-driver-gone" does not exist`, "create the RBLNDriver first"}},
		{"kernel label missing", wt.DaemonSet("npu", "d", "rbln-driver", "driver", missingKernel),
			[]string{"spec.template.spec.nodeSelector: Required value", v1alpha1.LabelKernel, "add them"}},
		{"family label missing", wt.DaemonSet("npu", "d", "rbln-driver", "driver", noFamily),
			[]string{"spec.template.spec.nodeSelector", "label rebellions.ai/npu.family is missing"}},
		{"no nodeSelector at all", wt.DaemonSet("npu", "d", "rbln-driver", "driver", nil),
			[]string{"spec.template.spec.nodeSelector: Required value"}},
		{"kernel that cannot form a tag", wt.DaemonSet("npu", "d", "rbln-driver", "driver", badKernel),
			[]string{"InvalidImageTag", "is not a valid OCI tag"}},
		{"no driver container", withoutContainer,
			[]string{"spec.template.spec.containers: Required value", "rbln-driver-container"}},
		{"driver container twice", twoDrivers,
			[]string{`spec.template.spec.containers: Duplicate value: "rbln-driver-container"`}},
		{"more containers than a driver DaemonSet has", manyContainers,
			[]string{"spec.template.spec.containers: Too many: ", "must have at most 64 items"}},
		{"instance label missing", noInstance,
			[]string{"metadata.labels[rebellions.ai/npu.driver.instance]: Required value"}},
		{"smd without smd images", wt.DaemonSet("npu", "d", "rbln-driver-nosmd", "smd", nil),
			[]string{"spec.smd.registry and spec.smd.image"}},
		{"invalid RBLNDriver", wt.DaemonSet("npu", "d", "rbln-driver-invalid", "driver", pool),
			[]string{`RBLNDriver "rbln-driver-invalid" is invalid`, "fix the RBLNDriver first"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := handle(t, hooks, webhook.PathMutateDaemonSet, wt.Request(admissionv1.Create, tt.ds, nil))
			expect(t, resp, false, append(tt.want, `DaemonSet "npu/d" is denied`), nil)
			if len(resp.Patches) != 0 {
				t.Errorf("a denial carries patches: %v", resp.Patches)
			}
		})
	}
}

func TestDaemonSetUnrelatedIsUntouched(t *testing.T) {
	t.Parallel()
	hooks := webhook.New(state(nil, nil, nil), webhook.Options{})
	for _, component := range []string{"", "manager", "Driver"} {
		ds := wt.DaemonSet("kube-system", "fluentd", "rbln-driver", "driver", nil)
		if component == "" {
			ds.Labels = map[string]string{"app": "fluentd"}
		} else {
			ds.Labels[v1alpha1.LabelDriverComponent] = component
		}
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete} {
			var req admission.Request
			switch op {
			case admissionv1.Create:
				req = wt.Request(op, ds, nil)
			case admissionv1.Update:
				req = wt.Request(op, ds, ds)
			default:
				req = wt.Request(op, nil, ds)
			}
			resp := handle(t, hooks, webhook.PathMutateDaemonSet, req)
			if !resp.Allowed || len(resp.Patches) != 0 {
				t.Errorf("component %q %s: allowed=%v patches=%v", component, op, resp.Allowed, resp.Patches)
			}
		}
	}
}

// TestDaemonSetPatchIsDeterministic: the same request always yields the same patch bytes
// (what lets `review` and the served webhook be compared byte for byte).
func TestDaemonSetPatchIsDeterministic(t *testing.T) {
	t.Parallel()
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nil, nil), webhook.Options{})
	ds := wt.DaemonSet("npu", "d", "rbln-driver", "driver", wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel))
	req := wt.Request(admissionv1.Create, ds, nil)
	var first []byte
	for i := range 50 {
		resp := handle(t, hooks, webhook.PathMutateDaemonSet, req)
		if err := resp.Complete(req); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = resp.Patch
		} else if string(resp.Patch) != string(first) {
			t.Fatalf("patch %d differs:\n%s\n%s", i, resp.Patch, first)
		}
	}
}

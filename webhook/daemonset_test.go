package webhook_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
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
	drivers := []*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil), wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))}
	tests := []struct {
		name         string
		ds           *appsv1.DaemonSet
		autoUpgrade  bool
		container    string
		image        string
		keepSelector map[string]string
	}{
		{name: "driver: pool image, owner selector, OnDelete",
			ds:        wt.DaemonSet("npu", "rbln-driver-atom-atom-ubuntu22.04-6.8.0-90-generic", "rbln-driver-atom", "driver", pool),
			container: operator.ContainerDriver, image: wantAtomImage, keepSelector: pool},
		{name: "driver with autoUpgrade: still OnDelete (the operator replaces the pods itself)",
			ds:          wt.DaemonSet("npu", "rbln-driver-atom-pool", "rbln-driver-atom", "driver", pool),
			autoUpgrade: true,
			container:   operator.ContainerDriver, image: wantAtomImage, keepSelector: pool},
		{name: "driver of the default resource on RHEL: the raw kernel in the tag",
			ds:        wt.DaemonSet("npu", "rbln-driver-pool", "rbln-driver", "driver", wt.PoolLabels("rebel100", "rhel", "9.4", "5.14.0-427.13.1.el9_4.x86_64")),
			container: operator.ContainerDriver, image: "repo.rebellions.ai/rebellions/rebel100/rbln-driver:3.2.2-5.14.0-427.13.1.el9_4.x86_64-rhel9.4"},
		{name: "smd: RSMD image",
			ds:        wt.DaemonSet("npu", "rbln-driver-atom-smd", "rbln-driver-atom", "smd", nil),
			container: operator.ContainerSMD, image: "repo.rebellions.ai/rebellions/rbln-smd:3.2.2"},
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
				expect(t, resp, true, nil, []string{"driverguard set the image of container " + tt.container, "set updateStrategy OnDelete"})
				got := patched(t, req, resp)
				cr := tt.ds.Labels[operator.LabelInstance]
				if img := image(got, tt.container); img != tt.image {
					t.Errorf("%s image = %q, want %q", tt.container, img, tt.image)
				}
				if img := image(got, "sidecar"); img != "busybox:1.36" {
					t.Errorf("the sidecar changed: %q", img)
				}
				sel := got.Spec.Template.Spec.NodeSelector
				if sel[operator.LabelOwner] != cr || sel[operator.LabelDeployDriver] != "true" {
					t.Errorf("nodeSelector %v lacks %s=%s and %s=true", sel, operator.LabelOwner, cr, operator.LabelDeployDriver)
				}
				if tt.container == operator.ContainerSMD && sel[operator.LabelDeploySMD] != "true" {
					t.Errorf("RSMD nodeSelector %v lacks %s=true", sel, operator.LabelDeploySMD)
				}
				for k, v := range tt.keepSelector {
					if sel[k] != v {
						t.Errorf("pool label %s=%s lost: %v", k, v, sel)
					}
				}
				if got.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType || got.Spec.UpdateStrategy.RollingUpdate != nil {
					t.Errorf("updateStrategy %+v, want OnDelete alone", got.Spec.UpdateStrategy)
				}

				// Idempotent: a second pass over the mutated object changes nothing and says nothing.
				again := wt.Request(admissionv1.Create, got, nil)
				resp2 := handle(t, hooks, webhook.PathMutateDaemonSet, again)
				expect(t, resp2, true, nil, nil)
				if len(resp2.Patches) != 0 || len(resp2.Patch) != 0 {
					t.Errorf("second pass: patches=%v", resp2.Patches)
				}
			}
		})
	}
}

// TestOperatorRenderedDaemonSetIsUnchanged: what rbln-npu-operator renders gets no patch and no
// warning, for the driver and the RSMD DaemonSets, on CREATE and UPDATE.
func TestOperatorRenderedDaemonSetIsUnchanged(t *testing.T) {
	t.Parallel()
	atom := wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))
	latest := wt.Driver("rbln-driver-latest", wt.Sel("env", "dev"))
	latest.Spec.Version = "latest"
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{atom, latest}, nil, wt.ClusterPolicy(true)), webhook.Options{})
	rhel := wt.PoolLabels("atom", "rocky", "9.5", "5.14.0-503.11.1.el9_5.aarch64_64k")
	for _, ds := range []*appsv1.DaemonSet{
		wt.OperatorDaemonSet("npu", atom, wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel), false),
		wt.OperatorDaemonSet("npu", atom, rhel, false),
		wt.OperatorDaemonSet("npu", atom, nil, true),
		wt.OperatorDaemonSet("npu", latest, rhel, false),
		wt.OperatorDaemonSet("npu", latest, nil, true),
	} {
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			req := wt.Request(op, ds, nil)
			if op == admissionv1.Update {
				req = wt.Request(op, ds, ds)
			}
			resp := handle(t, hooks, webhook.PathMutateDaemonSet, req)
			expect(t, resp, true, nil, nil)
			if len(resp.Patches) != 0 || len(resp.Patch) != 0 {
				t.Errorf("%s %s: an operator-rendered DaemonSet got a patch: %v", op, ds.Name, resp.Patches)
			}
		}
	}
}

// TestDaemonSetCorrections: what differs from the operator's composition is set back, with a
// warning per field saying what and why.
func TestDaemonSetCorrections(t *testing.T) {
	t.Parallel()
	atom := wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{atom}, nil, nil), webhook.Options{})
	pool := wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel)

	noFamilyPath := wt.OperatorDaemonSet("npu", atom, pool, false)
	noFamilyPath.Spec.Template.Spec.Containers[0].Image = "repo.rebellions.ai/rebellions/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"
	staleSMD := wt.OperatorDaemonSet("npu", atom, nil, true)
	staleSMD.Spec.Template.Spec.Containers[0].Image = "repo.rebellions.ai/rebellions/rbln-smd:3.2.1"
	handEdited := wt.OperatorDaemonSet("npu", atom, pool, false)
	handEdited.Spec.Template.Spec.NodeSelector[operator.LabelOwner] = "rbln-driver"
	handEdited.Spec.Template.Spec.Containers[0].ImagePullPolicy = "Always"
	oldPoolName := wt.OperatorDaemonSet("npu", atom, pool, false)
	oldPoolName.Labels[operator.LabelPool] = "ubuntu22.04-6.8.0-90-generic"

	for _, tt := range []struct {
		name     string
		ds       *appsv1.DaemonSet
		paths    []string
		warnings []string
	}{
		{"a driver image without the family path", noFamilyPath,
			[]string{"/spec/template/spec/containers/0/image"},
			[]string{`driverguard set the image of container rbln-driver-container to "` + wantAtomImage + `" (was "repo.rebellions.ai/rebellions/rbln-driver:`, "the family before the image's last segment"}},
		{"an RSMD image with a stale tag", staleSMD,
			[]string{"/spec/template/spec/containers/0/image"},
			[]string{`set the image of container rbln-smd to "repo.rebellions.ai/rebellions/rbln-smd:3.2.2" (was "repo.rebellions.ai/rebellions/rbln-smd:3.2.1")`}},
		{"a hand-edited owner key and pull policy", handEdited,
			[]string{"/spec/template/spec/containers/0/imagePullPolicy", "/spec/template/spec/nodeSelector/rebellions.ai~1npu.driver.owner"},
			[]string{`set nodeSelector rebellions.ai/npu.driver.owner=rbln-driver-atom (was "rbln-driver")`, `set the imagePullPolicy of container rbln-driver-container to IfNotPresent (was "Always")`}},
		{"a pool label of an operator that predates family pools", oldPoolName,
			nil,
			[]string{`its rebellions.ai/driver-node-pool label is "ubuntu22.04-6.8.0-90-generic", but rbln-npu-operator names the pool of this nodeSelector "atom-ubuntu22.04-6.8.0-90-generic"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := wt.Request(admissionv1.Create, tt.ds, nil)
			resp := handle(t, hooks, webhook.PathMutateDaemonSet, req)
			expect(t, resp, true, nil, tt.warnings)
			var paths []string
			for _, p := range resp.Patches {
				paths = append(paths, p.Path)
			}
			if fmt.Sprint(paths) != fmt.Sprint(tt.paths) {
				t.Errorf("patched %v, want %v", paths, tt.paths)
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
		"/spec/template/spec/containers/0/imagePullPolicy",
	}
	for _, p := range want {
		if !paths[p] {
			t.Errorf("no patch operation on %s: %+v", p, resp.Patches)
		}
	}
	for p := range paths {
		switch {
		case slices.Contains(want, p), len(p) >= len("/spec/updateStrategy") && p[:len("/spec/updateStrategy")] == "/spec/updateStrategy":
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
	invalid := wt.Driver("rbln-driver-invalid", wt.Sel(operator.LabelOwner, "x"))
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil), noSMD, invalid}, nil, nil), webhook.Options{})
	withoutContainer := wt.DaemonSet("npu", "d", "rbln-driver", "driver", pool)
	withoutContainer.Spec.Template.Spec.Containers[0].Name = "driver"
	noInstance := wt.DaemonSet("npu", "d", "rbln-driver", "driver", pool)
	delete(noInstance.Labels, operator.LabelInstance)
	missingKernel := wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel)
	delete(missingKernel, operator.LabelKernel)
	noFamily := wt.PoolLabels(wt.Family, wt.OS, wt.OSVersion, wt.Kernel)
	delete(noFamily, operator.LabelFamily)
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
			[]string{`metadata.labels[rebellions.ai/driver-instance]: Not found: "rbln-driver-gone"`, `RBLNDriver "rbln-driver-gone" does not exist`, "create the RBLNDriver first"}},
		{"kernel label missing", wt.DaemonSet("npu", "d", "rbln-driver", "driver", missingKernel),
			[]string{"spec.template.spec.nodeSelector: Required value", operator.LabelKernel + " is missing", "never guesses a pool"}},
		{"family label missing", wt.DaemonSet("npu", "d", "rbln-driver", "driver", noFamily),
			[]string{"spec.template.spec.nodeSelector", "rebellions.ai/npu.family is missing"}},
		{"family not a DNS-1123 label", wt.DaemonSet("npu", "d", "rbln-driver", "driver", wt.PoolLabels("Atom", wt.OS, wt.OSVersion, wt.Kernel)),
			[]string{"spec.template.spec.nodeSelector", `rebellions.ai/npu.family="Atom" is not a DNS-1123 label`}},
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
			[]string{"metadata.labels[rebellions.ai/driver-instance]: Required value"}},
		{"smd without smd images", wt.DaemonSet("npu", "d", "rbln-driver-nosmd", "smd", nil),
			[]string{"spec.smd is not set"}},
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
	for _, labels := range []map[string]string{
		{"app": "fluentd"},
		{operator.LabelAppName: operator.AppName, operator.LabelComponent: "rbln-device-plugin", operator.LabelInstance: "rbln-driver"},
		{operator.LabelAppName: operator.AppName, operator.LabelComponent: "RBLN-Driver", operator.LabelInstance: "rbln-driver"},
		{operator.LabelAppName: "other", operator.LabelComponent: operator.ComponentDriver, operator.LabelInstance: "rbln-driver"},
		{operator.LabelComponent: operator.ComponentDriver, operator.LabelInstance: "rbln-driver"},
	} {
		component := fmt.Sprint(labels)
		ds := wt.DaemonSet("kube-system", "fluentd", "rbln-driver", "driver", nil)
		ds.Labels = labels
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

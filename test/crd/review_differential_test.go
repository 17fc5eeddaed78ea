package crd

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/webhook"
)

// The offline judges decode and validate as the API server does (docs/promises.md): `review`
// of an RBLNDriver, with no cluster around it, gives the verdict of the API server with the
// CRDs alone, for every object of a corpus of wrong types, nulls, missing specs, every
// object-local rule at its boundaries, and updates of objects stored before the rules
// (ratcheting).

// rawCase is an object as JSON text would carry it (any type anywhere), and on UPDATE the
// stored object it replaces.
type rawCase struct {
	name string
	obj  map[string]any
	old  *unstructured.Unstructured
}

func validSpec() map[string]any {
	return map[string]any{"registry": "registry.example.com", "image": "rebellions/rbln-driver", "version": "3.2.2",
		"nodeSelector": map[string]any{"example.com/pool": "a"}}
}

func rawDriver(name string, spec any) map[string]any {
	o := map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": "RBLNDriver", "metadata": map[string]any{"name": name}}
	if spec != "<none>" {
		o["spec"] = spec
	}
	return o
}

// typeCases are wrong types, nulls and missing specs at every field of the spec.
func typeCases() []rawCase {
	with := func(k string, v any) map[string]any {
		s := validSpec()
		s[k] = v
		return s
	}
	without := func(k string) map[string]any {
		s := validSpec()
		delete(s, k)
		return s
	}
	specs := map[string]any{
		"no spec": "<none>", "spec null": nil, "spec a string": "x", "spec a list": []any{}, "spec empty": map[string]any{},
		"version 3.2": with("version", 3.2), "version 3": with("version", 3), "version null": with("version", nil),
		"version true": with("version", true), "no version": without("version"), "no image": without("image"),
		"no registry": without("registry"), "registry 1": with("registry", 1), "image a list": with("image", []any{"x"}),
		"selector null":           with("nodeSelector", nil),
		"selector a list":         with("nodeSelector", []any{"a"}),
		"selector value null":     with("nodeSelector", map[string]any{"example.com/pool": nil}),
		"selector value 1":        with("nodeSelector", map[string]any{"example.com/pool": 1}),
		"selector value true":     with("nodeSelector", map[string]any{"example.com/pool": true}),
		"selector value a map":    with("nodeSelector", map[string]any{"example.com/pool": map[string]any{}}),
		"selector value \"1\"":    with("nodeSelector", map[string]any{"example.com/pool": "1"}),
		"cpu limit 0.5":           with("resources", map[string]any{"limits": map[string]any{"cpu": 0.5}}),
		"cpu limit 1":             with("resources", map[string]any{"limits": map[string]any{"cpu": 1}}),
		"cpu limit \"500m\"":      with("resources", map[string]any{"limits": map[string]any{"cpu": "500m"}}),
		"cpu limit null":          with("resources", map[string]any{"limits": map[string]any{"cpu": nil}}),
		"cpu limit \"lots\"":      with("resources", map[string]any{"limits": map[string]any{"cpu": "lots"}}),
		"resources a string":      with("resources", "big"),
		"annotations value 1":     with("annotations", map[string]any{"example.com/a": 1}),
		"annotations value null":  with("annotations", map[string]any{"example.com/a": nil}),
		"pull secrets a string":   with("imagePullSecrets", "drivercred"),
		"pull secrets [1]":        with("imagePullSecrets", []any{1}),
		"pull secrets [null]":     with("imagePullSecrets", []any{nil}),
		"pull policy 1":           with("imagePullPolicy", 1),
		"pull policy null":        with("imagePullPolicy", nil),
		"smd a string":            with("smd", "x"),
		"smd null":                with("smd", nil),
		"an unknown field":        with("nodeSelectr", map[string]any{"a": "b"}),
		"an unknown field, null":  with("nodeSelectr", nil),
		"upgrade policy a string": with("upgradePolicy", "auto"),
		"upgrade policy null":     with("upgradePolicy", nil),
	}
	var out []rawCase
	for name, spec := range specs {
		out = append(out, rawCase{name: name, obj: rawDriver("rbln-driver-typed", spec)})
	}
	policy := func(up any) map[string]any {
		spec := map[string]any{"driver": map[string]any{"upgradePolicy": up}}
		if up == "<none>" {
			spec = map[string]any{}
		}
		return map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": "RBLNClusterPolicy",
			"metadata": map[string]any{"name": v1alpha1.ClusterPolicyName}, "spec": spec}
	}
	for name, up := range map[string]any{
		"policy: valid":                 map[string]any{"maxParallelUpgrades": 1},
		"policy: no upgrade policy":     "<none>",
		"policy: upgrade policy null":   nil,
		"policy: max parallel \"2\"":    map[string]any{"maxParallelUpgrades": "2"},
		"policy: max parallel 1.5":      map[string]any{"maxParallelUpgrades": 1.5},
		"policy: max parallel null":     map[string]any{"maxParallelUpgrades": nil},
		"policy: max parallel -1":       map[string]any{"maxParallelUpgrades": -1},
		"policy: auto upgrade \"true\"": map[string]any{"autoUpgrade": "true"},
		"policy: drain a list":          map[string]any{"drain": []any{}},
		"policy: drain timeout -1":      map[string]any{"drain": map[string]any{"timeoutSeconds": -1}},
		"policy: drain timeout \"300\"": map[string]any{"drain": map[string]any{"timeoutSeconds": "300"}},
		"policy: an unknown field":      map[string]any{"maxParalelUpgrades": 2},
	} {
		out = append(out, rawCase{name: name, obj: policy(up)})
	}
	// metadata the API server sets itself, or clears, before it validates (a cluster-scoped
	// object's namespace, a generated name, the generation, the managed fields, a status)
	meta := func(name string, change func(m map[string]any), top map[string]any) {
		o := rawDriver("rbln-driver-meta", validSpec())
		change(o["metadata"].(map[string]any))
		for k, v := range top {
			o[k] = v
		}
		out = append(out, rawCase{name: "metadata: " + name, obj: o})
	}
	meta("a namespace", func(m map[string]any) { m["namespace"] = "kube-system" }, nil)
	meta("generateName", func(m map[string]any) { delete(m, "name"); m["generateName"] = "rbln-driver-gen-" }, nil)
	meta("generateName, too long", func(m map[string]any) { delete(m, "name"); m["generateName"] = "rbln-driver-" + n('g', 60) }, nil)
	meta("generation -1", func(m map[string]any) { m["generation"] = -1 }, nil)
	meta("managed fields invalid", func(m map[string]any) {
		m["managedFields"] = []any{map[string]any{"manager": "x", "operation": "Sometimes", "fieldsType": "FieldsV9"}}
	}, nil)
	meta("an invalid status", func(map[string]any) {}, map[string]any{"status": map[string]any{"state": 7}})
	meta("a label value too long", func(m map[string]any) { m["labels"] = map[string]any{"a": n('v', 64)} }, nil)
	meta("no name", func(m map[string]any) { delete(m, "name") }, nil)
	meta("an uppercase name", func(m map[string]any) { m["name"] = "RBLN-driver" }, nil)
	out = append(out, rawCase{name: "policy: spec null", obj: map[string]any{"apiVersion": v1alpha1.GroupVersion.String(),
		"kind": "RBLNClusterPolicy", "metadata": map[string]any{"name": v1alpha1.ClusterPolicyName}, "spec": nil}})
	return out
}

// asRaw is a typed case as JSON text carries it.
func asRaw(t *testing.T, c driverCase) rawCase {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.obj)
	require.NoError(t, err)
	return rawCase{name: c.name, obj: u}
}

// serverVerdict is the API server's verdict on c: a dry-run create, or update of c.old.
func serverVerdict(t *testing.T, c rawCase) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
	defer cancel()
	u := &unstructured.Unstructured{Object: copyJSON(t, c.obj)}
	var err error
	if c.old == nil {
		err = suite.c.Create(ctx, u, client.DryRunAll)
	} else {
		u.SetResourceVersion(c.old.GetResourceVersion())
		err = suite.c.Update(ctx, u, client.DryRunAll)
	}
	if err != nil && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsConflict(err) {
		var st apierrors.APIStatus
		if !assert.ErrorAs(t, err, &st) || st.Status().Reason != "RequestEntityTooLarge" {
			t.Fatalf("%s: not a verdict of the CRD: %v", c.name, err)
		}
	}
	return err
}

// reviewVerdict is `driverguard review`'s verdict on c with no cluster files: allowed, and
// the response's message.
func reviewVerdict(t *testing.T, hooks *webhook.Webhooks, c rawCase) (bool, string) {
	t.Helper()
	obj, err := json.Marshal(c.obj)
	require.NoError(t, err)
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("diff"),
		Kind:      metaGVK(fmt.Sprint(c.obj["kind"])),
		Resource:  metaGVR(map[any]string{"RBLNDriver": "rblndrivers", "RBLNClusterPolicy": "rblnclusterpolicies"}[c.obj["kind"]]),
		Name:      fmt.Sprint(c.obj["metadata"].(map[string]any)["name"]),
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: obj},
	}
	if c.old != nil {
		req.Operation = admissionv1.Update
		old, err := json.Marshal(c.old.Object)
		require.NoError(t, err)
		req.OldObject = runtime.RawExtension{Raw: old}
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	require.NoError(t, err)
	review, _, err := hooks.Decide(t.Context(), body)
	require.NoError(t, err, c.name)
	msg := ""
	if r := review.Response.Result; r != nil {
		msg = r.Message
	}
	return review.Response.Allowed, msg
}

// storeBeforeTheRules stores objs with the RBLNDriver CRD's rules and limits lifted (as a
// cluster that had the CRDs before the rules), then puts the rules back; it returns the stored
// objects as the API server holds them.
func storeBeforeTheRules(t *testing.T, objs []*v1alpha1.RBLNDriver) []*unstructured.Unstructured {
	t.Helper()
	var ruled apiextensionsv1.CustomResourceDefinition
	require.NoError(t, suite.c.Get(t.Context(), client.ObjectKey{Name: "rblndrivers.rebellions.ai"}, &ruled))
	rules := ruled.Spec.Versions[0].Schema.OpenAPIV3Schema.DeepCopy()
	probe := driver("rbln-driver-probe", map[string]string{"probe key!": "v"})
	restore := func() { setSchema(t, func(s *apiextensionsv1.JSONSchemaProps) { *s = *rules }, probe, true) }
	t.Cleanup(restore)
	setSchema(t, func(s *apiextensionsv1.JSONSchemaProps) { withoutRules(s, validation.DriverCRDValidation()) }, probe, false)
	var out []*unstructured.Unstructured
	for _, d := range objs {
		require.NoError(t, suite.c.Create(t.Context(), d.DeepCopy()), "stored before the rules: %s", d.Name)
		t.Cleanup(func() { _ = suite.c.Delete(context.Background(), d.DeepCopy()) })
	}
	restore()
	for _, d := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("RBLNDriver"))
		require.NoError(t, suite.c.Get(t.Context(), client.ObjectKey{Name: d.Name}, u))
		out = append(out, u)
	}
	return out
}

// updateCases change each stored object in the ways an update does: metadata only, another
// field, the invalid field to another invalid value or to a valid one, a wrong type.
func updateCases(stored []*unstructured.Unstructured) []rawCase {
	spec := func(u *unstructured.Unstructured, change func(s map[string]any)) map[string]any {
		o := runtime.DeepCopyJSON(u.Object)
		change(o["spec"].(map[string]any))
		return o
	}
	changes := map[string]func(s map[string]any){
		"nothing in the spec":   func(map[string]any) {},
		"the version":           func(s map[string]any) { s["version"] = "3.3.0" },
		"the version to 3.3":    func(s map[string]any) { s["version"] = 3.3 },
		"the version to a tag+": func(s map[string]any) { s["version"] = "3.3.0+b2" },
		"a pull secret":         func(s map[string]any) { s["imagePullSecrets"] = []any{"drivercred"} },
		"the selector, fixed":   func(s map[string]any) { s["nodeSelector"] = map[string]any{"good": "v"} },
		"the selector, a worse key": func(s map[string]any) {
			s["nodeSelector"] = map[string]any{"worse key!": "v"}
		},
		"the selector, reserved": func(s map[string]any) {
			s["nodeSelector"] = map[string]any{operator.LabelDeployDriver: "true"}
		},
		"the selector, emptied":      func(s map[string]any) { delete(s, "nodeSelector") },
		"the selector, a null value": func(s map[string]any) { s["nodeSelector"] = map[string]any{"good": nil} },
		"the pull policy":            func(s map[string]any) { s["imagePullPolicy"] = "Sometimes" },
		"the spec, null": func(s map[string]any) {
			for k := range s {
				delete(s, k)
			}
		},
	}
	metaChanges := map[string]func(m map[string]any){
		"the uid":                 func(m map[string]any) { m["uid"] = "00000000-0000-0000-0000-000000000000" },
		"a namespace":             func(m map[string]any) { m["namespace"] = "kube-system" },
		"the generation":          func(m map[string]any) { m["generation"] = -1 },
		"the creation time":       func(m map[string]any) { m["creationTimestamp"] = "2000-01-01T00:00:00Z" },
		"managed fields, invalid": func(m map[string]any) { m["managedFields"] = []any{map[string]any{"operation": "Sometimes"}} },
	}
	var out []rawCase
	for _, u := range stored[:2] {
		for what, change := range metaChanges {
			o := runtime.DeepCopyJSON(u.Object)
			change(o["metadata"].(map[string]any))
			out = append(out, rawCase{name: u.GetName() + ": metadata, " + what, obj: o, old: u})
		}
		o := runtime.DeepCopyJSON(u.Object)
		o["status"] = map[string]any{"state": 7}
		out = append(out, rawCase{name: u.GetName() + ": an invalid status", obj: o, old: u})
	}
	for _, u := range stored {
		for what, change := range changes {
			o := spec(u, change)
			if what == "nothing in the spec" {
				o["metadata"].(map[string]any)["labels"] = map[string]any{"team": "npu"}
			}
			out = append(out, rawCase{name: u.GetName() + ": " + what, obj: o, old: u})
		}
	}
	return out
}

// TestReviewAgreesWithTheAPIServer: `review` gives the API server's verdict on every object
// and update of the corpus.
func TestReviewAgreesWithTheAPIServer(t *testing.T) {
	requireSetup(t)
	hooks := webhook.New(cluster.NewStatic(&cluster.State{}), webhook.Options{})

	var creates []rawCase
	creates = append(creates, typeCases()...)
	for _, c := range append(handCases(), generatedCases(rand.New(rand.NewPCG(43, 17)), 300)...) {
		creates = append(creates, asRaw(t, c))
	}
	stored := storeBeforeTheRules(t, []*v1alpha1.RBLNDriver{
		driver("rbln-driver-diff-valid", map[string]string{"x": "y"}),
		driver("rbln-driver-diff-key", map[string]string{"bad key!": "v"}),
		driver("rbln-driver-diff-selector", nil),
		driver("rbln-driver-diff-version", map[string]string{"x": "y"}, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "3.2.2+build1" }),
		driver("rbln-driver-diff-reserved", map[string]string{operator.LabelOwner: "x"}),
		driver("rbln-driver-diff-policy", map[string]string{"x": "y"}, func(s *v1alpha1.RBLNDriverSpec) { s.ImagePullPolicy = "Sometimes" }),
		driver("rbln-driver-diff.name", map[string]string{"x": "y"}),
	})
	updates := updateCases(stored)

	for _, set := range []struct {
		op    string
		cases []rawCase
	}{{"CREATE", creates}, {"UPDATE", updates}} {
		var refused, disagree int
		for _, c := range set.cases {
			serverErr := serverVerdict(t, c)
			allowed, msg := reviewVerdict(t, hooks, c)
			if serverErr != nil {
				refused++
			}
			if allowed != (serverErr == nil) {
				disagree++
				assert.Fail(t, "review and the API server disagree", "%s %s: review allowed=%v (%s); the API server: %v", set.op, c.name, allowed, msg, serverErr)
			}
		}
		t.Logf("%s: %d objects, %d refused by the API server and by review, %d admitted by both; %d disagreements",
			set.op, len(set.cases), refused, len(set.cases)-refused, disagree)
	}
}

func metaGVK(kind string) metav1.GroupVersionKind {
	return metav1.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: kind}
}

func metaGVR(resource string) metav1.GroupVersionResource {
	return metav1.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: resource}
}

// copyJSON copies an object of any JSON values (runtime.DeepCopyJSON takes int64s only).
func copyJSON(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(o)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}

// TestTheAPIServerRequiresASpec: with the CRDs alone, an RBLNDriver without spec, or with
// spec: null, is refused (the webhook away changes nothing).
func TestTheAPIServerRequiresASpec(t *testing.T) {
	requireSetup(t)
	for name, spec := range map[string]any{"no spec": "<none>", "spec: null": nil} {
		t.Run(name, func(t *testing.T) {
			err := serverVerdict(t, rawCase{name: name, obj: rawDriver("rbln-driver-nospec", spec)})
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.Contains(t, err.Error(), "spec: Required value")
		})
	}
}

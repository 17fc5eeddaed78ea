// Package webhooktest builds the objects, admission requests and fake policy evaluators that
// the webhook's unit tests, the envtest suite (test/e2e) and the `review` tests share.
package webhooktest

import (
	"context"
	"encoding/json"
	"maps"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
)

// Pool label values of the default test pool.
const (
	Family    = "atom"
	OS        = "ubuntu"
	OSVersion = "22.04"
	Kernel    = "6.8.0-90-generic"
)

// Sel builds a map from key, value pairs.
func Sel(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// Driver returns a valid RBLNDriver with the chart's default images and the given selector.
func Driver(name string, sel map[string]string) *v1alpha1.RBLNDriver {
	return &v1alpha1.RBLNDriver{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RBLNDriver"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RBLNDriverSpec{
			Registry:        "repo.rebellions.ai",
			Image:           "rebellions/rbln-driver",
			Version:         "3.2.2",
			ImagePullPolicy: corev1.PullIfNotPresent,
			Manager:         &v1alpha1.ManagerSpec{Registry: "docker.io", Image: "rebellions/rbln-k8s-driver-manager", Version: "v0.2.2"},
			SMD:             &v1alpha1.SMDSpec{Registry: "repo.rebellions.ai", Image: "rebellions/rbln-smd"},
			NodeSelector:    sel,
		},
	}
}

// ClusterPolicy returns the RBLNClusterPolicy singleton with the chart's defaults.
func ClusterPolicy(autoUpgrade bool) *v1alpha1.RBLNClusterPolicy {
	return &v1alpha1.RBLNClusterPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RBLNClusterPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterPolicyName},
		Spec: v1alpha1.RBLNClusterPolicySpec{Driver: v1alpha1.ClusterDriverSpec{UpgradePolicy: v1alpha1.UpgradePolicy{
			AutoUpgrade:         autoUpgrade,
			MaxParallelUpgrades: 1,
			NPUPodDeletion:      v1alpha1.NPUPodDeletionSpec{TimeoutSeconds: 300},
			Drain:               v1alpha1.DrainSpec{TimeoutSeconds: 300},
		}}},
	}
}

// PoolLabels returns the raw pool labels of a node (or a driver DaemonSet's nodeSelector).
func PoolLabels(family, os, osVersion, kernel string) map[string]string {
	return map[string]string{
		operator.LabelFamily:    family,
		operator.LabelOSID:      os,
		operator.LabelOSVersion: osVersion,
		operator.LabelKernel:    kernel,
	}
}

// CandidateLabels returns the labels of a candidate node of the default pool plus extra
// key, value pairs.
func CandidateLabels(extra ...string) map[string]string {
	l := PoolLabels(Family, OS, OSVersion, Kernel)
	l[operator.LabelDeployDriver] = "true"
	maps.Copy(l, Sel(extra...))
	return l
}

// Node returns a Node with labels.
func Node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}
}

// RoutingNodes converts Nodes for a cluster.State.
func RoutingNodes(nodes ...*corev1.Node) []routing.Node {
	out := make([]routing.Node, len(nodes))
	for i, n := range nodes {
		out[i] = routing.Node{Name: n.Name, Labels: n.Labels}
	}
	return out
}

// DaemonSet returns a DaemonSet labelled as rbln-npu-operator labels its driver (component
// "driver") or RSMD ("smd") DaemonSets for driver cr, selecting nodeSelector, with a
// placeholder image and a RollingUpdate strategy the webhook corrects.
func DaemonSet(namespace, name, cr, component string, nodeSelector map[string]string) *appsv1.DaemonSet {
	container := operator.ContainerDriver
	labels := operator.SMDDaemonSetLabels(cr)
	if component == "smd" {
		container = operator.ContainerSMD
	} else {
		pool, err := operator.PoolOf(nodeSelector, false)
		if err != nil {
			pool.Name = "unknown"
		}
		labels = operator.DriverDaemonSetLabels(cr, pool.Name)
	}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: maps.Clone(labels)},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					NodeSelector: nodeSelector,
					Containers: []corev1.Container{
						{Name: container, Image: "placeholder:latest"},
						{Name: "sidecar", Image: "busybox:1.36"},
					},
				},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{},
			},
		},
	}
}

// OperatorDaemonSet returns driver d's DaemonSet for the pool of a node with nodeLabels as
// rbln-npu-operator renders it (its name, labels, selector, pod nodeSelector, containers,
// images, pull policies and update strategy, by package operator), or its RSMD DaemonSet
// when smd is set: what the webhook leaves unchanged.
func OperatorDaemonSet(namespace string, d *v1alpha1.RBLNDriver, nodeLabels map[string]string, smd bool) *appsv1.DaemonSet {
	manager := operator.Reference(d.Spec.Manager.Registry, d.Spec.Manager.Image, d.Spec.Manager.Version)
	initContainer := corev1.Container{Name: operator.InitContainerManager, Image: manager.String(),
		ImagePullPolicy: corev1.PullPolicy(operator.ReferencePullPolicy(string(d.Spec.Manager.ImagePullPolicy), manager))}
	var name string
	var labels, sel map[string]string
	var container corev1.Container
	if smd {
		name, labels, sel = operator.SMDDaemonSet(d.Name), operator.SMDDaemonSetLabels(d.Name), operator.SMDNodeSelector(d.Name)
		ref, _ := operator.SMDImage(d.Spec.SMD.Registry, d.Spec.SMD.Image, d.Spec.Version)
		initContainer.Name = operator.InitContainerValidation
		container = corev1.Container{Name: operator.ContainerSMD, Image: ref.String(),
			ImagePullPolicy: corev1.PullPolicy(operator.ReferencePullPolicy(string(d.Spec.ImagePullPolicy), ref))}
	} else {
		pool, perr := operator.PoolOf(nodeLabels, false)
		if perr != nil {
			panic(perr)
		}
		ref, err := operator.DriverImage(operator.DriverSpec{Registry: d.Spec.Registry, Image: d.Spec.Image, Version: d.Spec.Version}, pool)
		if err != nil {
			panic(err)
		}
		name, labels, sel = operator.DriverDaemonSet(d.Name, pool.Name), operator.DriverDaemonSetLabels(d.Name, pool.Name), pool.NodeSelector(d.Name)
		container = corev1.Container{Name: operator.ContainerDriver, Image: ref.String(),
			ImagePullPolicy: corev1.PullPolicy(operator.DriverPullPolicy(string(d.Spec.ImagePullPolicy), d.Spec.Version))}
	}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: maps.Clone(labels)},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					NodeSelector:   sel,
					InitContainers: []corev1.Container{initContainer},
					Containers:     []corev1.Container{container},
				},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
		},
	}
}

// User is the requesting user of the requests built here.
var User = authenticationv1.UserInfo{Username: "alice@example.com", Groups: []string{"platform", "system:authenticated"}}

// Request builds an admission request for obj (and old on UPDATE).
func Request(op admissionv1.Operation, obj, old runtime.Object) admission.Request {
	ref := obj
	if ref == nil {
		ref = old
	}
	gvk := ref.GetObjectKind().GroupVersionKind()
	req := admissionv1.AdmissionRequest{
		UID:       types.UID("0df28fbd-5f5f-4fa3-9a5c-1234567890ab"),
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Operation: op,
		UserInfo:  User,
	}
	if m, ok := ref.(metav1.Object); ok {
		req.Name, req.Namespace = m.GetName(), m.GetNamespace()
	}
	req.Resource = metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resourceOf(gvk.Kind)}
	if obj != nil {
		req.Object = runtime.RawExtension{Raw: MustJSON(obj)}
	}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: MustJSON(old)}
	}
	return admission.Request{AdmissionRequest: req}
}

// Review wraps a request in an AdmissionReview (admission.k8s.io/v1).
func Review(req admission.Request) *admissionv1.AdmissionReview {
	r := req.AdmissionRequest
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  &r,
	}
}

func resourceOf(kind string) string {
	switch kind {
	case "RBLNDriver":
		return "rblndrivers"
	case "RBLNClusterPolicy":
		return "rblnclusterpolicies"
	case "DaemonSet":
		return "daemonsets"
	}
	return ""
}

// MustJSON marshals v or panics (test data only).
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Evaluator is a fake policy.Evaluator: Fn decides, and every input is recorded.
type Evaluator struct {
	Fn func(ctx context.Context, in *policy.Input) (*policy.Decision, error)

	mu     sync.Mutex
	inputs []*policy.Input
}

// Evaluate implements policy.Evaluator.
func (e *Evaluator) Evaluate(ctx context.Context, in *policy.Input) (*policy.Decision, error) {
	e.mu.Lock()
	e.inputs = append(e.inputs, in)
	e.mu.Unlock()
	if e.Fn == nil {
		return &policy.Decision{}, nil
	}
	return e.Fn(ctx, in)
}

// Inputs returns the recorded inputs.
func (e *Evaluator) Inputs() []*policy.Input {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*policy.Input(nil), e.inputs...)
}

// AnnotationPolicy is a fake policy for tests through the API: an RBLNDriver or
// RBLNClusterPolicy annotated policy.test/deny=<msg> is denied with msg, one annotated
// policy.test/warn=<msg> gets the warning msg, and policy.test/error=<msg> makes the
// evaluation fail.
func AnnotationPolicy() *Evaluator {
	return &Evaluator{Fn: func(_ context.Context, in *policy.Input) (*policy.Decision, error) {
		ann := Annotations(in.Object)
		d := &policy.Decision{}
		if msg, ok := ann["policy.test/error"]; ok {
			return nil, &evalError{msg}
		}
		if msg, ok := ann["policy.test/deny"]; ok {
			d.Deny = append(d.Deny, policy.Message{Package: "driverguard.test", Rule: "deny", Msg: msg})
		}
		if msg, ok := ann["policy.test/warn"]; ok {
			d.Warn = append(d.Warn, policy.Message{Package: "driverguard.test", Rule: "warn", Msg: msg})
		}
		return d, nil
	}}
}

// Annotations returns the annotations of a policy input's object, whichever form it has.
func Annotations(obj any) map[string]string {
	switch o := obj.(type) {
	case *v1alpha1.RBLNDriver:
		return o.Annotations
	case *v1alpha1.RBLNClusterPolicy:
		return o.Annotations
	case json.RawMessage:
		var m metav1.PartialObjectMetadata
		if json.Unmarshal(o, &m) == nil {
			return m.Annotations
		}
	}
	return nil
}

type evalError struct{ msg string }

func (e *evalError) Error() string { return e.msg }

// Combine evaluates every evaluator and merges their decisions (the first error wins). It
// syncs the cluster view into every evaluator that reads it.
func Combine(evals ...policy.Evaluator) policy.Evaluator { return combined(evals) }

type combined []policy.Evaluator

var _ policy.ClusterSyncer = combined(nil)

// SyncCluster implements policy.ClusterSyncer.
func (c combined) SyncCluster(ctx context.Context, v *policy.ClusterView) error {
	for _, e := range c {
		if s, ok := e.(policy.ClusterSyncer); ok {
			if err := s.SyncCluster(ctx, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c combined) Evaluate(ctx context.Context, in *policy.Input) (*policy.Decision, error) {
	out := &policy.Decision{}
	for _, e := range c {
		d, err := e.Evaluate(ctx, in)
		if err != nil {
			return nil, err
		}
		if d != nil {
			out.Deny = append(out.Deny, d.Deny...)
			out.Warn = append(out.Warn, d.Warn...)
		}
	}
	return out, nil
}

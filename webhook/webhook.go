package webhook

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
)

// Paths the webhooks are served on; the chart's webhook configurations point at them.
const (
	PathValidateDriver        = "/validate-rbln-driver"
	PathValidateClusterPolicy = "/validate-rbln-cluster-policy"
	PathMutateDaemonSet       = "/mutate-driver-daemonset"
)

// Options configure the decisions.
type Options struct {
	// Policy, when set, evaluates the OPA policies on every RBLNDriver and RBLNClusterPolicy
	// request: deny messages reject the object, warn messages become admission warnings. Its
	// own deadline (policy.Options.Timeout) bounds an evaluation. When it is a
	// policy.ClusterSyncer, the cluster view is synced into it (data.driverguard_cluster).
	Policy policy.Evaluator
	// PolicyFailOpen admits a request whose policy evaluation fails, with a warning. The
	// default (false) is fail-closed: such a request is refused with 503.
	PolicyFailOpen bool
	// Limits bound the requests a server serves at once (Register).
	Limits Limits
}

// Webhooks are the three admission webhooks over one State.
type Webhooks struct {
	// DaemonSets plans the mutation of driver DaemonSets.
	DaemonSets *DaemonSetMutator

	state     State
	decider   *decision.Decider
	admitters map[string]admitter
	hooks     map[string]http.Handler
	limits    Limits
}

// New returns the webhooks deciding over state.
func New(state State, opts Options) *Webhooks {
	if syncer, ok := opts.Policy.(policy.ClusterSyncer); ok {
		if s, ok := state.(syncingState); ok {
			s.SyncTo(syncer)
		}
	}
	w := &Webhooks{
		DaemonSets: NewDaemonSetMutator(state),
		state:      state,
		decider:    &decision.Decider{Policy: opts.Policy, PolicyFailOpen: opts.PolicyFailOpen},
		limits:     opts.Limits,
	}
	w.admitters = map[string]admitter{
		PathValidateDriver: &validating[*v1alpha1.RBLNDriver]{
			gvk: v1alpha1.GroupVersion.WithKind("RBLNDriver"), decide: w.driver},
		PathValidateClusterPolicy: &validating[*v1alpha1.RBLNClusterPolicy]{
			gvk: v1alpha1.GroupVersion.WithKind("RBLNClusterPolicy"), decide: w.clusterPolicy},
		PathMutateDaemonSet: &daemonSetHandler{m: w.DaemonSets},
	}
	w.hooks = make(map[string]http.Handler, len(w.admitters))
	for path, a := range w.admitters {
		w.hooks[path] = &reviewHandler{hook: &admission.Webhook{Handler: handlerOf(a), LogConstructor: requestLogger}}
	}
	return w
}

// driver decides an RBLNDriver with the snapshot's routing index as the cluster (docs/webhook.md "Decisions").
func (w *Webhooks) driver(ctx context.Context, req decision.Request[*v1alpha1.RBLNDriver]) (*decision.Verdict, error) {
	if ks, ok := w.state.(labelKeyState); ok && req.Object != nil {
		var keys []string
		for k := range req.Object.Spec.NodeSelector {
			keys = append(keys, k)
		}
		if err := ks.EnsureLabelKeys(ctx, keys); err != nil {
			return nil, err
		}
	}
	snap, err := w.state.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return w.decider.Driver(ctx, snap.Index(), req)
}

// clusterPolicy decides an RBLNClusterPolicy. Policies read the cluster view: with policies,
// it refuses (503) until the view is synced rather than decide on an empty one.
func (w *Webhooks) clusterPolicy(ctx context.Context, req decision.Request[*v1alpha1.RBLNClusterPolicy]) (*decision.Verdict, error) {
	if w.decider.Policy != nil {
		if ks, ok := w.state.(labelKeyState); ok {
			if err := ks.EnsureLabelKeys(ctx, nil); err != nil { // the labels the policies declare
				return nil, err
			}
		}
		if _, err := w.state.Snapshot(ctx); err != nil {
			return nil, err
		}
	}
	return w.decider.ClusterPolicy(ctx, req)
}

// requestLogger is controller-runtime's per-request logger, with the request's fields only
// when its per-request logs (V(5), serve --log-level debug) are enabled: building them costs
// allocations on every request otherwise.
func requestLogger(base logr.Logger, req *admission.Request) logr.Logger {
	if !base.V(5).Enabled() {
		return base
	}
	return admission.DefaultLogConstructor(base, req)
}

// Handlers returns the HTTP handler of every path: a controller-runtime admission.Webhook
// (panic recovery, the response's UID) behind reviewHandler, which reads and decodes the
// AdmissionReview and writes the response.
func (w *Webhooks) Handlers() map[string]http.Handler {
	out := make(map[string]http.Handler, len(w.hooks))
	for p, h := range w.hooks {
		out[p] = h
	}
	return out
}

// Webhook returns the controller-runtime admission.Webhook behind path (nil if none), for
// calling its Handle in-process.
func (w *Webhooks) Webhook(path string) *admission.Webhook {
	if h, ok := w.hooks[path].(*reviewHandler); ok {
		return h.hook
	}
	return nil
}

// MaxRequestDuration bounds one admission request on a server: the API server never waits
// longer than 30 s for a webhook.
const MaxRequestDuration = 30 * time.Second

// Register serves every webhook on srv (a controller-runtime webhook server, which adds the
// request metrics per path). The requests' contexts are detached from the server's: when the
// server shuts down (its context ends) it stops accepting connections, and the requests in
// flight still finish — their policy evaluations are not cancelled — within
// MaxRequestDuration. Options.Limits bound them, across the three paths.
func (w *Webhooks) Register(srv interface{ Register(string, http.Handler) }) {
	l := newLimiter(w.limits)
	for _, p := range []string{PathValidateDriver, PathValidateClusterPolicy, PathMutateDaemonSet} {
		srv.Register(p, l.wrap(drainable(w.hooks[p])))
	}
}

func drainable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), MaxRequestDuration)
		defer cancel()
		h.ServeHTTP(rw, r.WithContext(ctx))
	})
}

// PathFor returns the path that serves requests for group/kind, or "" if none does.
func PathFor(group, kind string) string {
	switch {
	case group == v1alpha1.GroupVersion.Group && kind == "RBLNDriver":
		return PathValidateDriver
	case group == v1alpha1.GroupVersion.Group && kind == "RBLNClusterPolicy":
		return PathValidateClusterPolicy
	case group == daemonSetGVK.Group && kind == daemonSetGVK.Kind:
		return PathMutateDaemonSet
	}
	return ""
}

// Review answers one AdmissionReview (admission.k8s.io/v1, JSON) offline, as a real API server
// with driverguard's webhooks would: its CRD validation first (schemaGate), then Admit, the
// decision `serve` runs. It returns the review with its response (and the request it was
// given). An error means the input is not a usable AdmissionReview; a request the webhook
// cannot decode is answered (400), not an error.
func (w *Webhooks) Review(ctx context.Context, body []byte) (*admissionv1.AdmissionReview, error) {
	review, _, err := w.Decide(ctx, body)
	return review, err
}

// Decide is Review that also returns the verdict the response was made from: its findings are
// what the response words. It is nil when nothing was judged: a DaemonSet left as it is, a
// request that could not be decoded, a decision that could not be made.
func (w *Webhooks) Decide(ctx context.Context, body []byte) (*admissionv1.AdmissionReview, *decision.Verdict, error) {
	if values := countValues(body); values > maxReviewValues {
		return nil, nil, fmt.Errorf("the AdmissionReview holds %d JSON values; the webhook reads at most %d and would refuse it (413) unread", values, maxReviewValues)
	}
	var review admissionv1.AdmissionReview
	if err := decodeJSON(body, &review); err != nil {
		return nil, nil, fmt.Errorf("not an AdmissionReview JSON document: %w", err)
	}
	if review.Kind != "" && review.Kind != "AdmissionReview" {
		return nil, nil, fmt.Errorf("kind is %q, expected AdmissionReview (admission.k8s.io/v1)", validation.Truncate(review.Kind, validation.MaxQuotedValue))
	}
	if review.Request == nil {
		return nil, nil, fmt.Errorf("the AdmissionReview has no request")
	}
	if PathFor(review.Request.Kind.Group, review.Request.Kind.Kind) == "" {
		return nil, nil, fmt.Errorf("request.kind %s is not handled by driverguard (RBLNDriver, RBLNClusterPolicy and DaemonSet are)", formatGVK(review.Request.Kind))
	}
	if len(review.Request.UID) > maxUIDBytes {
		return nil, nil, fmt.Errorf("request.uid is %d bytes; an API server's is 36 (the webhook reads at most %d)", len(review.Request.UID), maxUIDBytes)
	}
	request := *review.Request
	gate, err := schemaGate(ctx, &request)
	if err != nil {
		return nil, nil, err
	}
	if gate.response != nil {
		return answered(&review, gate.response), gate.verdict, nil
	}
	a := w.Admit(ctx, admission.Request{AdmissionRequest: request})
	resp, verdict := a.Response.AdmissionResponse, a.Verdict
	if r := resp.Result; r != nil {
		r.Message = validation.Truncate(r.Message, maxMessageBytes) // as the served webhook writes it
	}
	if gate.rules != nil && resp.Allowed {
		// the webhook's rules let through what the CRD's rules refuse: the API server's word
		// stands (a difference the differential tests look for)
		gate.refuse(&request, gate.rules)
		resp, verdict = *gate.response, gate.verdict
	}
	resp.Warnings = append(gate.warnings, resp.Warnings...)
	return answered(&review, &resp), verdict, nil
}

// answered is review with its response.
func answered(review *admissionv1.AdmissionReview, resp *admissionv1.AdmissionResponse) *admissionv1.AdmissionReview {
	review.Response = resp
	if review.APIVersion == "" {
		review.APIVersion, review.Kind = admissionv1.SchemeGroupVersion.String(), "AdmissionReview"
	}
	return review
}

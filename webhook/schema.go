package webhook

import (
	"context"
	"encoding/json"
	"errors"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	crdschema "github.com/driverguard/driverguard/api/schema"
	"github.com/driverguard/driverguard/decision"
)

// schemaGate does offline what the API server does to a custom resource before any validating
// webhook sees it (package api/schema): it decodes the request's object by the CRD — unknown
// fields pruned, nulls dropped, defaults applied — and validates it, on UPDATE with the API
// server's ratcheting. An object whose structural schema fails (a type, a missing spec, a
// limit) is answered as the API server answers it (422, in its words), with the findings in
// the verdict. Otherwise the object goes on to the webhook as the API server would hand it
// over (req is changed), with the warnings it would give (unknown fields); what the CRD's CEL
// rules refuse is returned as rules, for the caller to refuse in the API server's words should
// the webhook's own rules (the same rules, with field-precise messages) let it through. A
// served webhook needs none of this: the API server did it.
func schemaGate(ctx context.Context, req *admissionv1.AdmissionRequest) (*gated, error) {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return &gated{}, nil
	}
	kind, err := crdschema.For(schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind})
	if err != nil || kind == nil {
		return &gated{}, err
	}
	var res *crdschema.Result
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		res, err = kind.Update(ctx, req.Object.Raw, req.OldObject.Raw)
	} else {
		res, err = kind.Create(ctx, req.Object.Raw)
	}
	if err != nil {
		// not an object the API server could decode (not JSON, another kind): it would answer
		// 400; the webhook's own decoding answers it so, naming the field
		return &gated{}, nil
	}
	g := &gated{warnings: res.Warnings}
	if len(res.Errors) > 0 {
		g.refuse(req, res)
		return g, nil
	}
	if len(res.Rules) > 0 {
		g.rules = res
	}
	raw, err := json.Marshal(res.Object.Object)
	if err != nil {
		return nil, err
	}
	req.Object.Raw, req.Object.Object = raw, nil
	return g, nil
}

// gated is what the API server's CRD handling says of a request.
type gated struct {
	// response and verdict refuse the request (nil: not refused by the structural schema).
	response *admissionv1.AdmissionResponse
	verdict  *decision.Verdict
	// rules, when set, is a result whose CEL rules refuse the object.
	rules    *crdschema.Result
	warnings []string
}

// refuse answers req as the API server refuses res.
func (g *gated) refuse(req *admissionv1.AdmissionRequest, res *crdschema.Result) {
	st := metav1.Status{Status: metav1.StatusFailure, Message: res.Err().Error()}
	var status apierrors.APIStatus
	if errors.As(res.Err(), &status) {
		st = status.Status()
	}
	g.verdict = decision.Denied(req.Kind.Kind, res.Object.GetName(), decision.FieldFindings(res.Causes()...)...)
	g.response = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: false, Result: &st, Warnings: g.warnings}
}

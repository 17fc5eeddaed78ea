package release

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	crdschema "github.com/driverguard/driverguard/api/schema"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/decision"
)

// schemaVerdicts judge o by its CRD as the API server does before any webhook sees it
// (package api/schema), from the JSON it was given in (raw; nil: the typed object's): refused
// is the API server's refusal by the structural schema (a type, a missing spec, a limit) —
// the object goes no further; rules its refusal by the CRD's CEL rules, which stands should
// the webhook's own rules (the same rules, with field-precise messages) let the object
// through. Both nil: the API server hands it to the webhooks.
func schemaVerdicts(ctx context.Context, o Object, raw []byte) (refused, rules *decision.Verdict, err error) {
	obj, old := any(o.Driver), any(o.OldDriver)
	if o.Kind == "RBLNClusterPolicy" {
		obj, old = o.ClusterPolicy, o.OldClusterPolicy
	}
	kind, err := crdschema.For(schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: o.Kind})
	if err != nil || kind == nil {
		return nil, nil, err
	}
	if raw == nil {
		if raw, err = typedJSON(o.Kind, obj); err != nil {
			return nil, nil, err
		}
	}
	var res *crdschema.Result
	if o.Operation == "UPDATE" {
		var stored []byte
		if stored, err = typedJSON(o.Kind, old); err != nil {
			return nil, nil, err
		}
		res, err = kind.Update(ctx, raw, stored)
	} else {
		res, err = kind.Create(ctx, raw)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s %q: %w", o.Kind, o.Name, err)
	}
	verdict := func() *decision.Verdict {
		return decision.Denied(o.Kind, o.Name, decision.FieldFindings(res.Causes()...)...)
	}
	switch {
	case len(res.Errors) > 0:
		return verdict(), nil, nil
	case len(res.Rules) > 0:
		return nil, verdict(), nil
	}
	return nil, nil, nil
}

// typedJSON is a typed object's JSON with its kind and apiVersion.
func typedJSON(kind string, obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	m["kind"], m["apiVersion"] = kind, v1alpha1.GroupVersion.String()
	return json.Marshal(m)
}

package schema

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apiextensionsfeatures "k8s.io/apiextensions-apiserver/pkg/features"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/operation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/config/crd"
)

// Kind is one custom resource's schema, as the API server serves it.
type Kind struct {
	gvk        k8sschema.GroupVersionKind
	namespaced bool
	// status: the status subresource, whose field a create or an update of the object never sets
	status     bool
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// Result is what the API server makes of an object before any admission webhook sees it.
type Result struct {
	// Object is the object as the API server passes it on (unknown fields pruned, nulls of
	// non-nullable fields dropped, defaults applied).
	Object *unstructured.Unstructured
	// Errors are what its CRD's structural schema refuses (types, required fields, limits,
	// metadata); Rules what its CEL rules (x-kubernetes-validations) refuse. Neither: it is
	// stored, or handed to the validating webhooks.
	Errors, Rules field.ErrorList
	// Warnings are the unknown fields it pruned, in the API server's words (its default field
	// validation, Warn, says them and stores the object without them).
	Warnings []string
}

// Err is the error the API server answers a refused object with (422, "RBLNDriver.rebellions.ai
// "x" is invalid: ..."), without its notice that the rules were not checked, nil when it is not
// refused.
func (r *Result) Err() error {
	if !r.Refused() {
		return nil
	}
	return apierrors.NewInvalid(r.Object.GroupVersionKind().GroupKind(), r.Object.GetName(), r.Causes())
}

// Refused reports whether the API server refuses the object.
func (r *Result) Refused() bool { return len(r.Errors)+len(r.Rules) > 0 }

// Causes are All without the API server's notice that the rules were not checked (an error
// of no field): what is wrong, one field each.
func (r *Result) Causes() field.ErrorList {
	var out field.ErrorList
	for _, e := range r.All() {
		if e.Field != "" && e.Field != "<nil>" {
			out = append(out, e)
		}
	}
	return out
}

// All are the errors and then the rules' errors, as the API server lists them.
func (r *Result) All() field.ErrorList {
	return append(append(field.ErrorList{}, r.Errors...), r.Rules...)
}

// The kinds of config/crd, built once: the schema's CEL programs are compiled here.
var kinds = sync.OnceValues(func() (map[k8sschema.GroupKind]*Kind, error) {
	out := map[k8sschema.GroupKind]*Kind{}
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := crd.Bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var def apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &def); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range def.Spec.Versions {
			if !v.Served || v.Schema == nil {
				continue
			}
			k, err := newKind(&def, &v)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", f, v.Name, err)
			}
			out[k.gvk.GroupKind()] = k
		}
	}
	return out, nil
})

// newKind builds the validators of one served version as the API server's CRD handler does.
func newKind(def *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) (*Kind, error) {
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	return &Kind{
		gvk:        k8sschema.GroupVersionKind{Group: def.Spec.Group, Version: v.Name, Kind: def.Spec.Names.Kind},
		namespaced: def.Spec.Scope == apiextensionsv1.NamespaceScoped,
		status:     v.Subresources != nil && v.Subresources.Status != nil,
		structural: structural,
		validator:  validator,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
}

// For returns the schema of group/kind (nil when config/crd has none).
func For(gk k8sschema.GroupKind) (*Kind, error) {
	all, err := kinds()
	if err != nil {
		return nil, fmt.Errorf("the embedded CRDs do not load (run make generate): %w", err)
	}
	return all[gk], nil
}

// Create judges an object sent to be created (its JSON, as the request body). An error means
// the API server could not decode it at all (400).
func (k *Kind) Create(ctx context.Context, data []byte) (*Result, error) {
	res, err := k.decode(data)
	if err != nil || len(res.Errors) > 0 {
		return res, err
	}
	u := res.Object
	k.prepareCreate(u)
	errs := k.typeMeta(u)
	if len(errs) == 0 {
		meta, merrs := objectMeta(u)
		errs = append(errs, merrs...)
		if meta != nil {
			errs = append(errs, metavalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, meta, nil, k.namespaced,
				metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"), utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta))...)
		}
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.UnstructuredContent(), k.validator)...)
	}
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, k.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, k.structural, u.Object)...)
	res.Errors, res.Rules = errs, k.rules(ctx, u.Object, nil, errs)
	return res, nil
}

// Update judges an update of old (the stored object's JSON) to data, with the API server's
// validation ratcheting: a field the update leaves as it was is not held against it.
func (k *Kind) Update(ctx context.Context, data, old []byte) (*Result, error) {
	res, err := k.decode(data)
	if err != nil || len(res.Errors) > 0 {
		return res, err
	}
	prev, err := k.decode(old)
	if err != nil {
		return nil, fmt.Errorf("the stored object: %w", err)
	}
	u, o := res.Object, prev.Object
	if conflict := k.prepareUpdate(u, o); conflict != nil {
		res.Errors = field.ErrorList{conflict}
		return res, nil
	}
	ratcheting := utilfeature.DefaultFeatureGate.Enabled(apiextensionsfeatures.CRDValidationRatcheting)
	var (
		options    []apiservervalidation.ValidationOption
		celOptions []cel.Option
	)
	if ratcheting {
		correlated := common.NewCorrelatedObject(u.Object, o.Object, &model.Structural{Structural: k.structural})
		options = append(options, apiservervalidation.WithRatcheting(correlated))
		celOptions = append(celOptions, cel.WithRatcheting(correlated))
	}
	errs := k.typeMeta(u)
	if len(errs) == 0 {
		meta, merrs := objectMeta(u)
		oldMeta, oerrs := objectMeta(o)
		errs = append(append(errs, merrs...), oerrs...)
		if meta != nil && oldMeta != nil {
			errs = append(errs, metavalidation.ValidateObjectMetaDeclaratively(ctx, operation.Update, meta, oldMeta, k.namespaced,
				nil, field.NewPath("metadata"), utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta))...)
		}
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u.UnstructuredContent(), o.UnstructuredContent(), k.validator, options...)...)
	}
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, k.structural, false)...)
	if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, k.structural, o.Object); len(oldErrs) == 0 {
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, k.structural, u.Object)...)
	}
	res.Errors, res.Rules = errs, k.rules(ctx, u.Object, o.Object, errs, celOptions...)
	return res, nil
}

// rules runs the CEL rules, unless an error already found would make them meaningless (a
// missing required field, a wrong type, a value too long): then it says they were not checked.
func (k *Kind) rules(ctx context.Context, obj, old any, found field.ErrorList, opts ...cel.Option) field.ErrorList {
	for _, e := range found {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.ErrorList{field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")}
		}
	}
	errs, _ := k.cel.Validate(ctx, nil, k.structural, obj, old, celconfig.RuntimeCELCostBudget, opts...)
	return errs
}

// decode reads data as the API server's CRD handler decodes a request body: JSON into an
// unstructured object, unknown fields pruned (and said), nulls of non-nullable fields
// without a default dropped, metadata coerced, defaults applied.
func (k *Kind) decode(data []byte) (*Result, error) {
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("the API server cannot decode it: %w", err)
	}
	if m == nil {
		return nil, errors.New("the API server cannot decode it: not a JSON object")
	}
	// An AdmissionReview's objects always carry them; an object read back with a typed
	// client may not.
	if _, ok := m["kind"]; !ok {
		m["kind"] = k.gvk.Kind
	}
	if _, ok := m["apiVersion"]; !ok {
		m["apiVersion"] = k.gvk.GroupVersion().String()
	}
	u := &unstructured.Unstructured{Object: m}
	res := &Result{Object: u}
	if gk := u.GroupVersionKind().GroupKind(); gk != k.gvk.GroupKind() {
		return nil, fmt.Errorf("a %s is not a %s", gk, k.gvk.GroupKind())
	}
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	meta, hasMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		res.Errors = field.ErrorList{field.Invalid(field.NewPath("metadata"), nil, err.Error())}
		return res, nil
	}
	if u.GroupVersionKind().Version == k.gvk.Version {
		unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, k.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, k.structural)
		ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, k.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
		if ferr != nil {
			res.Errors = field.ErrorList{ferr}
			return res, nil
		}
		unknown = append(unknown, paths...)
	}
	u.SetKind(kind)
	u.SetAPIVersion(apiVersion)
	if hasMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, meta); err != nil {
			return nil, err
		}
	}
	structuraldefaulting.Default(u.Object, k.structural)
	for _, p := range unknown {
		res.Warnings = append(res.Warnings, fmt.Sprintf("unknown field %q", p))
	}
	return res, nil
}

// typeMeta refuses a kind or apiVersion other than the schema's.
func (k *Kind) typeMeta(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if u.GetKind() != k.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), "must be "+k.gvk.Kind))
	}
	if want := k.gvk.GroupVersion().String(); u.GetAPIVersion() != want {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), "must be "+want))
	}
	return errs
}

// objectMeta is the object's metadata as the API server reads it for validation.
func objectMeta(u *unstructured.Unstructured) (*metav1.ObjectMeta, field.ErrorList) {
	raw, ok := u.Object["metadata"]
	if !ok || raw == nil {
		return &metav1.ObjectMeta{}, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, fmt.Sprintf("expected map[string]interface{}, got %T", raw))}
	}
	meta := &metav1.ObjectMeta{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, meta); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, err.Error())}
	}
	return meta, nil
}

// generatedSuffix stands for the five random characters the API server appends to a
// generateName: offline, the same every time.
const generatedSuffix = "bcdfg"

// prepareCreate does to u what the API server does to a created object before it validates it
// and before any validating webhook sees it: a cluster-scoped object loses its namespace, a
// generateName becomes the name, the generation is 1, the status (a subresource) and the
// managed fields (the field manager's, rebuilt or reset) are not taken from the request.
func (k *Kind) prepareCreate(u *unstructured.Unstructured) {
	if !k.namespaced {
		u.SetNamespace("")
	}
	if gen := u.GetGenerateName(); gen != "" && u.GetName() == "" {
		u.SetName(gen[:min(len(gen), 58)] + generatedSuffix)
	}
	u.SetGeneration(1)
	u.SetManagedFields(nil)
	if k.status {
		delete(u.Object, "status")
	}
}

// prepareUpdate does to u what the API server does to an update of old before it validates it:
// what the request cannot change (uid, creation and deletion times, the generation, the
// status of a subresource, the managed fields) is the stored object's, a cluster-scoped object
// has no namespace, and an update whose uid is not the stored object's is a conflict (409).
func (k *Kind) prepareUpdate(u, old *unstructured.Unstructured) *field.Error {
	if uid := u.GetUID(); uid != "" && uid != old.GetUID() {
		return field.Invalid(field.NewPath("metadata", "uid"), uid,
			fmt.Sprintf("Precondition failed: UID in precondition: %s, UID in object meta: %s (409 Conflict: the object was replaced since it was read)", old.GetUID(), uid))
	}
	if !k.namespaced {
		u.SetNamespace("")
	}
	u.SetUID(old.GetUID())
	u.SetCreationTimestamp(old.GetCreationTimestamp())
	u.SetDeletionTimestamp(old.GetDeletionTimestamp())
	u.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	u.SetGeneration(old.GetGeneration())
	u.SetManagedFields(nil)
	if u.GetResourceVersion() == "" {
		u.SetResourceVersion(old.GetResourceVersion())
	}
	if u.GetResourceVersion() == "" { // an update always names the version it replaces
		u.SetResourceVersion("1")
		old.SetResourceVersion("1")
	}
	if k.status {
		if st, ok := old.Object["status"]; ok {
			u.Object["status"] = st
		} else {
			delete(u.Object, "status")
		}
	}
	return nil
}

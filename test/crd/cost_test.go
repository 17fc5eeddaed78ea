package crd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/runtime"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/operator"
)

// structuralSchema is the RBLNDriver CRD's schema as the API server holds it.
func structuralSchema(tb testing.TB) *schema.Structural {
	tb.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(tb, err)
	data, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "rebellions.ai_rblndrivers.yaml"))
	require.NoError(tb, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(tb, yaml.Unmarshal(data, &crd))
	var internal apiextensions.JSONSchemaProps
	require.NoError(tb, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil))
	s, err := schema.NewStructural(&internal)
	require.NoError(tb, err)
	return s
}

// estimatedCost is the API server's static estimate of the rules of s and below, as it
// checks it when the CRD is created: each rule's and message expression's worst cost times
// card, how often the schema at s may occur in one object (1 for a property of the root, times
// maxItems or maxProperties below a list or a map).
func estimatedCost(tb testing.TB, s *schema.Structural, root bool, card uint64, path string, per map[string]uint64) uint64 {
	tb.Helper()
	var total uint64
	if len(s.XValidations) > 0 {
		results, err := cel.Compile(s, model.SchemaDeclType(s, root), celconfig.PerCallLimit,
			environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), cel.NewExpressionsEnvLoader())
		require.NoError(tb, err)
		for i, r := range results {
			require.Nil(tb, r.Error, "%s rule %d", path, i)
			per[fmt.Sprintf("%s rule %d", path, i)] = r.MaxCost * card
			per[fmt.Sprintf("%s message %d", path, i)] = r.MessageExpressionMaxCost * card
			total += (r.MaxCost + r.MessageExpressionMaxCost) * card
		}
	}
	for name, p := range s.Properties {
		total += estimatedCost(tb, &p, false, card, path+"."+name, per)
	}
	var maxProperties, maxItems *int64
	if v := s.ValueValidation; v != nil {
		maxProperties, maxItems = v.MaxProperties, v.MaxItems
	}
	bounded := func(max *int64) uint64 {
		if max == nil {
			return card * 1 << 20 // unbounded: no rule may be below it (the test fails on its cost)
		}
		return card * uint64(*max)
	}
	if a := s.AdditionalProperties; a != nil && a.Structural != nil {
		total += estimatedCost(tb, a.Structural, false, bounded(maxProperties), path+"[*]", per)
	}
	if s.Items != nil {
		total += estimatedCost(tb, s.Items, false, bounded(maxItems), path+"[*]", per)
	}
	return total
}

// atTheLimits is an RBLNDriver at every size limit the rules iterate: 64 selector keys of
// the longest name and prefix with the longest values, 64 annotations holding 256 KiB.
func atTheLimits(tb testing.TB) map[string]any {
	tb.Helper()
	d := driver("rbln-driver-"+n('x', 51), map[string]string{})
	for i := range validation.MaxSelectorKeys {
		d.Spec.NodeSelector[fmt.Sprintf("%s/%s%02d", prefix(253), n('k', 61), i)] = n('v', 63)
	}
	d.Spec.Annotations = map[string]string{}
	per := validation.MaxAnnotationBytes / validation.MaxAnnotations
	for i := range validation.MaxAnnotations {
		key := fmt.Sprintf("example.com/a%02d", i)
		d.Spec.Annotations[key] = strings.Repeat("a", per-len(key))
	}
	d.Spec.Version = n('3', 128)
	require.Empty(tb, validation.ValidateDriver(d), "valid at the limits")
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	require.NoError(tb, err)
	return obj
}

// TestCELCostWithinBudget: the rules' estimated cost, the one the API server checks when the
// CRD is created, and their actual cost on an RBLNDriver at every size limit are within the
// API server's budgets.
func TestCELCostWithinBudget(t *testing.T) {
	s := structuralSchema(t)
	per := map[string]uint64{}
	estimated := estimatedCost(t, s, true, 1, "", per)
	for rule, c := range per {
		require.LessOrEqual(t, c, uint64(apiextensionsvalidation.StaticEstimatedCostLimit), rule)
	}
	require.Less(t, estimated, uint64(apiextensionsvalidation.StaticEstimatedCRDCostLimit))
	errs, remaining := cel.NewValidator(s, true, celconfig.PerCallLimit).Validate(t.Context(), nil, s, atTheLimits(t), nil, celconfig.RuntimeCELCostBudget)
	require.Empty(t, errs)
	actual := celconfig.RuntimeCELCostBudget - remaining
	t.Logf("CEL cost of the RBLNDriver CRD: estimated %d in all (the largest rule %d; the API server allows %d per rule, %d per CRD); an RBLNDriver at every size limit costs %d (runtime budget %d)",
		estimated, maxOf(per), apiextensionsvalidation.StaticEstimatedCostLimit, apiextensionsvalidation.StaticEstimatedCRDCostLimit, actual, celconfig.RuntimeCELCostBudget)
}

// BenchmarkCELValidate: the CRD rules of one RBLNDriver as the API server evaluates them on a
// create — a typical one, and one at every size limit; reports their cost.
func BenchmarkCELValidate(b *testing.B) {
	s := structuralSchema(b)
	typical, err := runtime.DefaultUnstructuredConverter.ToUnstructured(driver("rbln-driver-atom-canary",
		map[string]string{operator.LabelFamily: "atom", "env": "canary"}, func(s *v1alpha1.RBLNDriverSpec) {
			s.ImagePullSecrets, s.Annotations = []string{"drivercred"}, map[string]string{"example.com/team": "npu"}
		}))
	require.NoError(b, err)
	for _, tc := range []struct {
		name string
		obj  map[string]any
	}{{"typical", typical}, {"at-the-limits", atTheLimits(b)}} {
		b.Run(tc.name, func(b *testing.B) {
			v := cel.NewValidator(s, true, celconfig.PerCallLimit)
			var cost int64
			b.ReportAllocs()
			for b.Loop() {
				errs, remaining := v.Validate(b.Context(), nil, s, tc.obj, nil, celconfig.RuntimeCELCostBudget)
				if len(errs) > 0 {
					b.Fatal(errs)
				}
				cost = celconfig.RuntimeCELCostBudget - remaining
			}
			b.ReportMetric(float64(cost), "cel-cost/op")
		})
	}
}

func maxOf(m map[string]uint64) uint64 {
	var out uint64
	for _, v := range m {
		out = max(out, v)
	}
	return out
}

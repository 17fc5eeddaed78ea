package crd

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/operator"
)

// withoutRules is the CRD schema as controller-gen writes it, before hack/crdrules: no CEL
// rules, none of the limits of v.
func withoutRules(s *apiextensionsv1.JSONSchemaProps, v validation.CRDValidation) {
	var strip func(s *apiextensionsv1.JSONSchemaProps)
	strip = func(s *apiextensionsv1.JSONSchemaProps) {
		s.XValidations = nil
		for k, p := range s.Properties {
			strip(&p)
			s.Properties[k] = p
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			strip(s.AdditionalProperties.Schema)
		}
		if s.Items != nil && s.Items.Schema != nil {
			strip(s.Items.Schema)
		}
	}
	strip(s)
	for _, l := range v.Limits {
		clearLimit(s, l.Path)
	}
}

// clearLimit removes the limits of the schema at path below s.
func clearLimit(s *apiextensionsv1.JSONSchemaProps, path []string) {
	if len(path) == 0 {
		s.MaxLength, s.MaxItems, s.MaxProperties = nil, nil, nil
		return
	}
	if path[0] == "*" {
		switch {
		case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			clearLimit(s.AdditionalProperties.Schema, path[1:])
		case s.Items != nil && s.Items.Schema != nil:
			clearLimit(s.Items.Schema, path[1:])
		}
		return
	}
	prop, ok := s.Properties[path[0]]
	if !ok {
		return
	}
	clearLimit(&prop, path[1:])
	s.Properties[path[0]] = prop
}

// setSchema replaces the RBLNDriver CRD's schema with edit applied to it, and waits until the
// API server judges with it (probe is refused exactly when want says).
func setSchema(t *testing.T, edit func(*apiextensionsv1.JSONSchemaProps), probe *v1alpha1.RBLNDriver, refused bool) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context()) // also from a cleanup, after the test's context ended
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, suite.c.Get(ctx, client.ObjectKey{Name: "rblndrivers.rebellions.ai"}, &crd))
	edit(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	require.NoError(t, suite.c.Update(ctx, &crd))
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return (served(t, probe) != nil) == refused, nil
	})
	require.NoError(t, err, "the API server did not take the new schema")
}

// TestRatcheting (docs/webhook.md "With the webhook away"): an RBLNDriver stored before the rules (the CRDs without them,
// then upgraded) can still be relabelled and have its version changed; changing its invalid
// field to another invalid value is refused, to a valid one admitted.
func TestRatcheting(t *testing.T) {
	requireSetup(t)
	var ruled apiextensionsv1.CustomResourceDefinition
	require.NoError(t, suite.c.Get(t.Context(), client.ObjectKey{Name: "rblndrivers.rebellions.ai"}, &ruled))
	rules := ruled.Spec.Versions[0].Schema.OpenAPIV3Schema.DeepCopy()
	probe := driver("rbln-driver-probe", map[string]string{"probe key!": "v"})
	t.Cleanup(func() {
		setSchema(t, func(s *apiextensionsv1.JSONSchemaProps) { *s = *rules }, probe, true)
	})

	setSchema(t, func(s *apiextensionsv1.JSONSchemaProps) { withoutRules(s, validation.DriverCRDValidation()) }, probe, false)
	stored := map[string]*v1alpha1.RBLNDriver{
		"key":      driver("rbln-driver-rat-key", map[string]string{"bad key!": "v"}),
		"selector": driver("rbln-driver-rat-selector", nil),
		"version":  driver("rbln-driver-rat-version", map[string]string{"x": "y"}, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "3.2.2+build1" }),
		"name":     driver("rbln-driver-rat.name", map[string]string{"x": "y"}),
		"reserved": driver("rbln-driver-rat-reserved", map[string]string{operator.LabelOwner: "x"}),
	}
	for _, d := range stored {
		require.NotEmpty(t, validation.ValidateDriver(d), "%s is invalid", d.Name)
		require.NoError(t, suite.c.Create(t.Context(), d.DeepCopy()), "stored before the rules: %s", d.Name)
		t.Cleanup(func() { _ = suite.c.Delete(context.Background(), d.DeepCopy()) })
	}
	setSchema(t, func(s *apiextensionsv1.JSONSchemaProps) { *s = *rules }, probe, true)

	update := func(name string, change func(*v1alpha1.RBLNDriver)) error {
		var d v1alpha1.RBLNDriver
		require.NoError(t, suite.c.Get(t.Context(), client.ObjectKey{Name: name}, &d))
		change(&d)
		return suite.c.Update(t.Context(), &d)
	}
	for what, d := range stored {
		t.Run(what, func(t *testing.T) {
			assert.NoError(t, update(d.Name, func(d *v1alpha1.RBLNDriver) { d.Labels = map[string]string{"team": "npu"} }), "relabelled")
			assert.NoError(t, update(d.Name, func(d *v1alpha1.RBLNDriver) {
				if what != "version" {
					d.Spec.Version = "3.3.0"
				}
				d.Spec.ImagePullSecrets = []string{"drivercred"}
			}), "another field changed")
		})
	}
	refused := func(name string, change func(*v1alpha1.RBLNDriver), says string) {
		t.Helper()
		err := update(name, change)
		if assert.Error(t, err, "%s: the invalid field changed to another invalid value", name) {
			assert.Contains(t, err.Error(), says)
		}
	}
	refused(stored["key"].Name, func(d *v1alpha1.RBLNDriver) { d.Spec.NodeSelector = map[string]string{"worse key!": "v"} }, "is not a valid label key")
	refused(stored["version"].Name, func(d *v1alpha1.RBLNDriver) { d.Spec.Version = "3.3.0+build2" }, "cannot start an OCI image tag")
	refused(stored["reserved"].Name, func(d *v1alpha1.RBLNDriver) {
		d.Spec.NodeSelector = map[string]string{operator.LabelDeployDriver: "true"}
	}, "is reserved")
	assert.NoError(t, update(stored["key"].Name, func(d *v1alpha1.RBLNDriver) { d.Spec.NodeSelector = map[string]string{"good": "v"} }), "fixed")
	assert.NoError(t, update(stored["version"].Name, func(d *v1alpha1.RBLNDriver) { d.Spec.Version = "3.3.0" }), "fixed")
	assert.NoError(t, update(stored["selector"].Name, func(d *v1alpha1.RBLNDriver) { d.Spec.NodeSelector = map[string]string{"good": "v"} }), "fixed")
	err := update(stored["selector"].Name, func(d *v1alpha1.RBLNDriver) { d.Spec.NodeSelector = nil })
	assert.ErrorContains(t, err, "only the default resource rbln-driver may have an empty selector", "a fixed selector emptied again")
}

package schema

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

var driverGK = k8sschema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "RBLNDriver"}

// obj is a valid RBLNDriver with top-level fields replaced by set (a nil value removes it).
func obj(t *testing.T, set map[string]any, spec map[string]any) []byte {
	t.Helper()
	s := map[string]any{"registry": "registry.example.com", "image": "rebellions/rbln-driver", "version": "3.2.2",
		"nodeSelector": map[string]any{"example.com/pool": "a"}}
	maps.Copy(s, spec)
	for k, v := range spec {
		if v == "<delete>" {
			delete(s, k)
		}
	}
	o := map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": "RBLNDriver",
		"metadata": map[string]any{"name": "d"}, "spec": s}
	for k, v := range set {
		if v == "<delete>" {
			delete(o, k)
		} else {
			o[k] = v
		}
	}
	data, err := json.Marshal(o)
	require.NoError(t, err)
	return data
}

func TestCreateDecodesAsTheAPIServer(t *testing.T) {
	k, err := For(driverGK)
	require.NoError(t, err)
	require.NotNil(t, k)
	cases := []struct {
		name  string
		data  []byte
		field string // "" when allowed
	}{
		{"valid", obj(t, nil, nil), ""},
		{"no spec", obj(t, map[string]any{"spec": "<delete>"}, nil), "spec"},
		{"spec null", obj(t, map[string]any{"spec": nil}, nil), "spec"},
		{"spec a string", obj(t, map[string]any{"spec": "x"}, nil), "spec"},
		{"version a number", obj(t, nil, map[string]any{"version": 3.2}), "spec.version"},
		{"version an integer", obj(t, nil, map[string]any{"version": 3}), "spec.version"},
		{"selector value null", obj(t, nil, map[string]any{"nodeSelector": map[string]any{"example.com/pool": nil}}), "spec.nodeSelector"},
		{"selector value a number", obj(t, nil, map[string]any{"nodeSelector": map[string]any{"example.com/pool": 1}}), "spec.nodeSelector"},
		{"cpu limit 0.5", obj(t, nil, map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": 0.5}}}), "spec.resources.limits"},
		{"cpu limit \"500m\"", obj(t, nil, map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "500m"}}}), ""},
		{"cpu limit 1", obj(t, nil, map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": 1}}}), ""},
		{"a CEL rule: digest in the version", obj(t, nil, map[string]any{"version": "sha256:" + "a1b2c3d4e5f6a7b8a1b2c3d4e5f6a7b8a1b2c3d4e5f6a7b8a1b2c3d4e5f6a7b8"}), "spec.version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := k.Create(context.Background(), c.data)
			require.NoError(t, err)
			if c.field == "" {
				assert.False(t, res.Refused())
				assert.NoError(t, res.Err())
				return
			}
			require.True(t, res.Refused())
			assert.Contains(t, res.Err().Error(), c.field)
			assert.Contains(t, res.Err().Error(), `RBLNDriver.rebellions.ai "d" is invalid`)
		})
	}
}

func TestCreatePrunesUnknownFieldsWithAWarning(t *testing.T) {
	k, err := For(driverGK)
	require.NoError(t, err)
	res, err := k.Create(context.Background(), obj(t, nil, map[string]any{"nodeSelectr": map[string]any{"a": "b"}}))
	require.NoError(t, err)
	assert.False(t, res.Refused())
	assert.Equal(t, []string{`unknown field "spec.nodeSelectr"`}, res.Warnings)
	_, found := res.Object.Object["spec"].(map[string]any)["nodeSelectr"]
	assert.False(t, found, "pruned as the API server prunes it")
}

// TestUpdateRatchetsUnchangedFieldsOnly: a field the stored object already had wrong is spared
// while the update leaves it alone, and refused once the update changes it.
func TestUpdateRatchetsUnchangedFieldsOnly(t *testing.T) {
	k, err := For(driverGK)
	require.NoError(t, err)
	badPolicy := map[string]any{"imagePullPolicy": "Sometimes"}
	old := obj(t, nil, badPolicy)
	cases := []struct {
		name    string
		data    []byte
		refused bool
	}{
		{"unchanged", old, false},
		{"another field changes", obj(t, nil, map[string]any{"imagePullPolicy": "Sometimes", "version": "3.2.3"}), false},
		{"the invalid field changes to another invalid value", obj(t, nil, map[string]any{"imagePullPolicy": "Never2"}), true},
		{"the invalid field is fixed", obj(t, nil, map[string]any{"imagePullPolicy": "Always"}), false},
		{"a new invalid field", obj(t, nil, map[string]any{"imagePullPolicy": "Sometimes", "version": "sha256:x"}), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := k.Update(context.Background(), c.data, old)
			require.NoError(t, err)
			assert.Equal(t, c.refused, res.Refused(), "%v", res.All())
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	k, err := For(driverGK)
	require.NoError(t, err)
	for _, data := range []string{`{`, `[]`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`} {
		_, err := k.Create(context.Background(), []byte(data))
		assert.Error(t, err, data)
	}
}

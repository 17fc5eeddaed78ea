package render_test

import (
	"bytes"
	"errors"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// renderYAML renders values given as YAML with the embedded chart.
func renderYAML(t *testing.T, values string) (*render.Result, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(file, []byte(values), 0o600))
	vals, err := render.LoadValues(render.ValuesOptions{ValueFiles: []string{file}})
	require.NoError(t, err)
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	return render.Render(ch, vals, render.Options{})
}

func mustRender(t *testing.T, values string) *render.Result {
	t.Helper()
	r, err := renderYAML(t, values)
	require.NoError(t, err)
	return r
}

func driver(t *testing.T, r *render.Result, name string) v1alpha1.RBLNDriverSpec {
	t.Helper()
	for _, d := range r.Drivers {
		if d.Name == name {
			return d.Spec
		}
	}
	t.Fatalf("no RBLNDriver %s among %d", name, len(r.Drivers))
	return v1alpha1.RBLNDriverSpec{}
}

// TestInheritanceRules has one case per row of the inheritance table of docs/values.md "Instances" and per clearing
// rule.
func TestInheritanceRules(t *testing.T) {
	tests := []struct {
		name   string
		values string
		check  func(t *testing.T, r *render.Result)
	}{
		{
			name: "maps/image deep-merges, instance wins",
			values: `driver:
  image: {registry: reg.example, repository: team/drv, tag: "1.0", pullPolicy: Always}
  instances:
    a: {image: {tag: "2.0"}, nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				s := driver(t, r, "rbln-driver-a")
				assert.Equal(t, "reg.example", s.Registry)
				assert.Equal(t, "team/drv", s.Image)
				assert.Equal(t, "2.0", s.Version)
				assert.Equal(t, corev1.PullAlways, s.ImagePullPolicy)
			},
		},
		{
			name: "maps/resources deep-merge key by key",
			values: `driver:
  resources: {limits: {cpu: 500m, memory: 128Mi}, requests: {cpu: 250m}}
  instances:
    a: {resources: {limits: {cpu: "2"}}, nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				s := driver(t, r, "rbln-driver-a")
				require.NotNil(t, s.Resources)
				assert.True(t, s.Resources.Limits.Cpu().Equal(resource.MustParse("2")))
				assert.True(t, s.Resources.Limits.Memory().Equal(resource.MustParse("128Mi")))
				assert.True(t, s.Resources.Requests.Cpu().Equal(resource.MustParse("250m")))
			},
		},
		{
			name: "maps/annotations deep-merge",
			values: `driver:
  annotations: {team: a, keep: "1"}
  instances:
    a: {annotations: {team: b, extra: x}, nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				assert.Equal(t, map[string]string{"team": "b", "keep": "1", "extra": "x"}, driver(t, r, "rbln-driver-a").Annotations)
			},
		},
		{
			name: "maps/manager deep-merges",
			values: `driver:
  instances:
    a: {manager: {image: {tag: v0.3.0}}, nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				m := driver(t, r, "rbln-driver-a").Manager
				require.NotNil(t, m)
				assert.Equal(t, v1alpha1.ManagerSpec{Registry: "docker.io", Image: "rebellions/rbln-k8s-driver-manager", Version: "v0.3.0", ImagePullPolicy: corev1.PullIfNotPresent}, *m)
			},
		},
		{
			name: "maps/smd deep-merges and has no version of its own",
			values: `driver:
  instances:
    a: {smd: {image: {registry: mirror.example}}, nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				assert.Equal(t, &v1alpha1.SMDSpec{Registry: "mirror.example", Image: "rebellions/rbln-smd"}, driver(t, r, "rbln-driver-a").SMD)
			},
		},
		{
			name: "maps/{} on an instance inherits everything",
			values: `driver:
  annotations: {team: a}
  instances:
    a: {annotations: {}, nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				assert.Equal(t, map[string]string{"team": "a"}, driver(t, r, "rbln-driver-a").Annotations)
			},
		},
		{
			name: "lists/tolerations replace whole",
			values: `driver:
  tolerations: [{key: a, operator: Exists}, {key: b, operator: Exists}]
  instances:
    a: {tolerations: [{key: c, operator: Exists}], nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				assert.Equal(t, []corev1.Toleration{{Key: "c", Operator: corev1.TolerationOpExists}}, driver(t, r, "rbln-driver-a").Tolerations)
				assert.Len(t, driver(t, r, "rbln-driver").Tolerations, 2)
			},
		},
		{
			name: "lists/env replaces whole",
			values: `driver:
  env: [{name: A, value: "1"}, {name: B, value: "2"}]
  instances:
    a: {env: [{name: B, value: "3"}], nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				assert.Equal(t, []corev1.EnvVar{{Name: "B", Value: "3"}}, driver(t, r, "rbln-driver-a").Env)
			},
		},
		{
			name: "lists/imagePullSecrets replace whole",
			values: `driver:
  imagePullSecrets: [one, two]
  instances:
    a: {imagePullSecrets: [three], nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				assert.Equal(t, []string{"three"}, driver(t, r, "rbln-driver-a").ImagePullSecrets)
			},
		},
		{
			name: "lists/[] clears",
			values: `driver:
  imagePullSecrets: [one]
  tolerations: [{operator: Exists}]
  env: [{name: A}]
  instances:
    a: {imagePullSecrets: [], tolerations: [], env: [], nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				s := driver(t, r, "rbln-driver-a")
				assert.Empty(t, s.ImagePullSecrets)
				assert.Empty(t, s.Tolerations)
				assert.Empty(t, s.Env)
			},
		},
		{
			name: "scalars/priorityClassName overridden",
			values: `driver:
  priorityClassName: low
  instances:
    a: {priorityClassName: high, nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				assert.Equal(t, "high", driver(t, r, "rbln-driver-a").PriorityClassName)
				assert.Equal(t, "low", driver(t, r, "rbln-driver").PriorityClassName)
			},
		},
		{
			name: `scalars/"" clears`,
			values: `driver:
  priorityClassName: low
  instances:
    a: {priorityClassName: "", nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				assert.Empty(t, driver(t, r, "rbln-driver-a").PriorityClassName)
			},
		},
		{
			name: "nodeSelector/never inherited",
			values: `driver:
  nodeSelector: {pool: npu}
  instances:
    a: {nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				assert.Equal(t, map[string]string{"k": "a"}, driver(t, r, "rbln-driver-a").NodeSelector)
				assert.Equal(t, map[string]string{"pool": "npu"}, driver(t, r, "rbln-driver").NodeSelector)
			},
		},
		{
			name: "null/on an instance map key removes the inherited key",
			values: `driver:
  annotations: {team: a, drop: x}
  instances:
    a: {annotations: {drop: null}, image: {pullPolicy: null}, nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				s := driver(t, r, "rbln-driver-a")
				assert.Equal(t, map[string]string{"team": "a"}, s.Annotations)
				assert.Empty(t, s.ImagePullPolicy)
			},
		},
		{
			name: "null/on an instance field removes the inherited field",
			values: `driver:
  tolerations: [{operator: Exists}]
  priorityClassName: low
  instances:
    a: {tolerations: null, manager: null, priorityClassName: null, nodeSelector: {k: a}}`,
			check: func(t *testing.T, r *render.Result) {
				s := driver(t, r, "rbln-driver-a")
				assert.Nil(t, s.Tolerations)
				assert.Nil(t, s.Manager)
				assert.Empty(t, s.PriorityClassName)
			},
		},
		{
			name: "null/at the top level removes the chart default",
			values: `driver:
  image: {pullPolicy: null}
  manager: null`,
			check: func(t *testing.T, r *render.Result) {
				s := driver(t, r, "rbln-driver")
				assert.Empty(t, s.ImagePullPolicy)
				assert.Nil(t, s.Manager)
			},
		},
		{
			name:   "deployDefault/false renders only instances",
			values: "driver: {deployDefault: false, instances: {a: {nodeSelector: {k: a}}}}",
			check: func(t *testing.T, r *render.Result) {
				require.Len(t, r.Drivers, 1)
				assert.Equal(t, "rbln-driver-a", r.Drivers[0].Name)
			},
		},
		{
			name:   "enabled/false renders no RBLNDriver but the cluster policy",
			values: "driver: {enabled: false}",
			check: func(t *testing.T, r *render.Result) {
				assert.Empty(t, r.Drivers)
				assert.Equal(t, v1alpha1.ClusterPolicyName, r.ClusterPolicy.Name)
			},
		},
		{
			name:   "names/default is rbln-driver, instance K is rbln-driver-K, 40-char keys allowed",
			values: "driver: {instances: {abcdefghij-abcdefghij-abcdefghij-abcdefg: {nodeSelector: {k: a}}}}",
			check: func(t *testing.T, r *render.Result) {
				require.Len(t, r.Drivers, 2)
				assert.Equal(t, "rbln-driver", r.Drivers[0].Name)
				assert.Equal(t, "rbln-driver-abcdefghij-abcdefghij-abcdefghij-abcdefg", r.Drivers[1].Name)
				assert.LessOrEqual(t, len(r.Drivers[1].Name), 63)
			},
		},
		{
			name: "upgradePolicy/rendered once onto the cluster policy with the chart defaults",
			values: `driver:
  upgradePolicy: {autoUpgrade: true, drain: {enable: true}}`,
			check: func(t *testing.T, r *render.Result) {
				up := r.ClusterPolicy.Spec.Driver.UpgradePolicy
				assert.True(t, up.AutoUpgrade)
				assert.True(t, up.Drain.Enable)
				assert.EqualValues(t, 300, up.Drain.TimeoutSeconds)
				assert.EqualValues(t, 1, up.MaxParallelUpgrades)
				assert.EqualValues(t, 300, up.NPUPodDeletion.TimeoutSeconds)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, mustRender(t, tt.values))
		})
	}
}

// TestValidationErrors covers every error case of docs/values.md "Instances" and "Errors"; each message names the values path.
func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name, values, want string
	}{
		{"unknown instance field with did-you-mean", "driver: {instances: {a: {imgae: {tag: x}, nodeSelector: {k: a}}}}", `driver.instances.a.imgae: Unsupported value: "imgae": unknown field, did you mean "image"?`},
		{"unknown nested field", "driver: {instances: {a: {image: {tga: x}, nodeSelector: {k: a}}}}", `did you mean "tag"?`},
		{"unknown top-level driver field", "driver: {imagePullSecret: [a]}", `driver.imagePullSecret: Unsupported value: "imagePullSecret": unknown field, did you mean "imagePullSecrets"?`},
		{"upgradePolicy is not an instance field", "driver: {instances: {a: {upgradePolicy: {}, nodeSelector: {k: a}}}}", "driver.instances.a.upgradePolicy: Forbidden: upgradePolicy is cluster-wide"},
		{"enabled is not an instance field", "driver: {instances: {a: {enabled: true, nodeSelector: {k: a}}}}", "driver.instances.a.enabled: Forbidden"},
		{"deployDefault is not an instance field", "driver: {instances: {a: {deployDefault: true, nodeSelector: {k: a}}}}", "driver.instances.a.deployDefault: Forbidden"},
		{"instances is not an instance field", "driver: {instances: {a: {instances: {}, nodeSelector: {k: a}}}}", "driver.instances.a.instances: Forbidden"},
		{"instance key longer than 40", "driver: {instances: {abcdefghij-abcdefghij-abcdefghij-abcdefgh: {nodeSelector: {k: a}}}}", "is 41 characters; at most 40 are allowed"},
		{"instance key with uppercase", "driver: {instances: {Atom: {nodeSelector: {k: a}}}}", "driver.instances.Atom: Invalid value"},
		{"instance key ending in a dash", "driver: {instances: {atom-: {nodeSelector: {k: a}}}}", "driver.instances.atom-: Invalid value"},
		{"instance without nodeSelector", "driver: {instances: {a: {image: {tag: x}}}}", "driver.instances.a.nodeSelector: Required value"},
		{"instance with empty nodeSelector", "driver: {instances: {a: {nodeSelector: {}}}}", "driver.instances.a.nodeSelector: Required value: must not be empty"},
		{"reserved owner key on an instance", "driver: {instances: {a: {nodeSelector: {rebellions.ai/npu.driver.owner: x}}}}", "driver.instances.a.nodeSelector[rebellions.ai/npu.driver.owner]: Forbidden"},
		{"reserved deploy key on the base selector", `driver: {nodeSelector: {rebellions.ai/npu.deploy.driver: "true"}}`, "driver.nodeSelector[rebellions.ai/npu.deploy.driver]: Forbidden"},
		{"invalid label key", `driver: {instances: {a: {nodeSelector: {"bad key": x}}}}`, "selector key is not a valid label key"},
		{"invalid label value", `driver: {instances: {a: {nodeSelector: {k: "bad value"}}}}`, "selector value is not a valid label value"},
		{"label value that is not a string", "driver: {instances: {a: {nodeSelector: {k: 2}}}}", "label values are strings"},
		{"deployDefault false without instances", "driver: {deployDefault: false}", "driver.deployDefault: Invalid value: false"},
		{"instances with enabled false", "driver: {enabled: false, instances: {a: {nodeSelector: {k: a}}}}", "driver.instances: Forbidden: driver.enabled is false"},
		{"numeric tag", "driver: {image: {tag: 3.10}}", "driver.image.tag: Invalid value: 3.1: must be a string"},
		{"tag that cannot be an OCI tag", `driver: {image: {tag: "1.0+x"}}`, "cannot start an OCI image tag"},
		{"null removes a required inherited value", "driver: {instances: {a: {image: {registry: null}, nodeSelector: {k: a}}}}", "driver.instances.a.image.registry: Required value: spec.registry would be empty"},
		{"smd tag", `driver: {smd: {image: {tag: "1"}}}`, "driver.smd.image.tag: Forbidden"},
		{"negative count", "driver: {upgradePolicy: {drain: {timeoutSeconds: -5}}}", "driver.upgradePolicy.drain.timeoutSeconds: Invalid value: -5: must be 0 or greater"},
		{"null removes a required upgradePolicy default", "driver: {upgradePolicy: {autoUpgrade: null}}", "driver.upgradePolicy.autoUpgrade: Required value"},
		{"unknown root key", "drivre: {}", `drivre: Unsupported value: "drivre": unknown field, did you mean "driver"?`},
		{"toleration typo", "driver: {tolerations: [{key: a, efect: NoSchedule}]}", `driver.tolerations[0].efect: Unsupported value: "efect": unknown field, did you mean "effect"?`},
		{"toleration null item", "driver: {tolerations: [null]}", "driver.tolerations[0]: Invalid value"},
		{"bad toleration operator", "driver: {tolerations: [{operator: Maybe}]}", `driver.tolerations[0].operator: Unsupported value: "Maybe"`},
		{"bad quantity", "driver: {resources: {limits: {cpu: lots}}}", "driver.resources.limits[cpu]: Invalid value"},
		{"zero audit interval", "webhook: {audit: {interval: 0s}}", `webhook.audit.interval: Invalid value: "0s": must be a duration from 10s to 24h in whole hours, minutes and seconds, such as 10m, 90s or 1h30m`},
		{"audit interval without a unit", "webhook: {audit: {imageInterval: '60'}}", `webhook.audit.imageInterval: Invalid value: "60": must be a duration from 1m to 24h`},
		{"audit interval below serve's 10s", "webhook: {audit: {interval: 5s}}", `webhook.audit.interval: Invalid value: "5s": must be a duration from 10s to 24h`},
		{"audit interval above serve's 24h", "webhook: {audit: {interval: 24h1s}}", `webhook.audit.interval: Invalid value: "24h1s": must be a duration from 10s to 24h`},
		{"audit interval in nanoseconds", "webhook: {audit: {interval: 1ns}}", `webhook.audit.interval: Invalid value: "1ns": must be a duration from 10s to 24h`},
		{"image interval below serve's 1m", "webhook: {audit: {imageInterval: 59s}}", `webhook.audit.imageInterval: Invalid value: "59s": must be a duration from 1m to 24h`},
		{"no audit results", "webhook: {audit: {maxResults: 0}}", "webhook.audit.maxResults: Invalid value: 0: must be 1 or greater"},
		{"audit interval that rounds to zero", "webhook: {audit: {interval: 0.0001ns}}", `webhook.audit.interval: Invalid value: "0.0001ns": must be a duration from 10s to 24h`},
		{"audit interval that overflows", "webhook: {audit: {interval: 99999999h}}", `webhook.audit.interval: Invalid value: "99999999h": must be a duration from 10s to 24h`},
		{"audit interval too long to add up", "webhook: {audit: {interval: 99999h99999h99999h99999h99999h99999h}}", `webhook.audit.interval: Invalid value: "99999h99999h99999h99999h99999h99999h"`},
		{"null audit interval", "webhook: {audit: {interval: null}}", `webhook.audit.interval: Required value`},
		{"bad pull secret name", "driver: {imagePullSecrets: [Bad_Name]}", "driver.imagePullSecrets[0]: Invalid value"},
		// A wrong type says what belongs there, from the schema's titles.
		{"image not a map", "driver: {image: 5}", "driver.image: Invalid value: 5: must be a map of registry, repository, tag and pullPolicy"},
		{"selector not a map", "driver: {nodeSelector: [a]}", `driver.nodeSelector: Invalid value: "<list>": must be a map of label key to label value`},
		{"env not a list", "driver: {env: {a: b}}", `driver.env: Invalid value: "<map>": must be a list of environment variables`},
		{"limits not a map", "driver: {resources: {limits: 7}}", "driver.resources.limits: Invalid value: 7: must be a map of resource name to quantity"},
		{"instance annotations not a map", "driver: {instances: {a: {annotations: [1], nodeSelector: {k: a}}}}", `driver.instances.a.annotations: Invalid value: "<list>": must be a map of annotation key to string value`},
		{"instance not a map", "driver: {instances: {a: 4}}", "driver.instances.a: Invalid value: 4: must be a map of driver fields (at least nodeSelector)"},
		{"pull secret not a string", "driver: {imagePullSecrets: [3]}", "driver.imagePullSecrets[0]: Invalid value: 3: must be the name of a Secret (a string)"},
		{"env without name", "driver: {env: [{value: x}]}", "driver.env[0].name: Required value: the variable's name"},
		{"too many pull secrets", "driver: {imagePullSecrets: [" + strings.Repeat("a,", 64) + "a]}", "driver.imagePullSecrets: Too many: 65: must have at most 64 pull secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := renderYAML(t, tt.values)
			require.Error(t, err)
			assert.Nil(t, r, "nothing is rendered on invalid input")
			var invalid *render.InvalidValuesError
			require.True(t, errors.As(err, &invalid), "want *InvalidValuesError, got %T: %v", err, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestAllErrorsReportedAtOnce: all-or-nothing, every problem listed.
func TestAllErrorsReportedAtOnce(t *testing.T) {
	_, err := renderYAML(t, `driver:
  instances:
    a: {imgae: {}, nodeSelector: {k: a}}
    B: {nodeSelector: {k: b}}
    c: {nodeSelector: {}}`)
	var invalid *render.InvalidValuesError
	require.ErrorAs(t, err, &invalid)
	assert.Len(t, invalid.Errs, 3, "%v", err)
}

// TestNullRuleMatchesHelm documents the null rule observed in real helm: a null for a key the
// chart has a default for is removed by helm's coalescing before templates run; a null on an
// instance (which has no chart default) survives coalescing and then removes the inherited
// value. Both paths end in "null removes the value"; the differential test proves the chart agrees.
func TestNullRuleMatchesHelm(t *testing.T) {
	r := mustRender(t, `driver:
  image: {pullPolicy: null}
  instances:
    a: {image: {pullPolicy: Always}, nodeSelector: {k: a}}
    b: {image: {pullPolicy: null}, nodeSelector: {k: b}}`)
	assert.Empty(t, driver(t, r, "rbln-driver").ImagePullPolicy, "top-level null removes the chart default")
	assert.Equal(t, corev1.PullAlways, driver(t, r, "rbln-driver-a").ImagePullPolicy)
	assert.Empty(t, driver(t, r, "rbln-driver-b").ImagePullPolicy)
}

func TestProvenance(t *testing.T) {
	r := mustRender(t, `driver:
  image: {tag: "3.2.2"}
  annotations: {team: a, drop: x}
  instances:
    canary:
      image: {tag: "3.3.0"}
      annotations: {drop: null}
      tolerations: []
      nodeSelector: {k: a}`)
	byField := map[string]render.FieldOrigin{}
	for _, f := range r.ProvenanceOf("rbln-driver-canary") {
		byField[f.Field] = f
	}
	assert.Equal(t, render.FieldOrigin{Field: "version", ValuesPath: "driver.instances.canary.image.tag", Origin: render.OriginInstance, Value: "3.3.0"}, byField["version"])
	assert.Equal(t, render.FieldOrigin{Field: "registry", ValuesPath: "driver.image.registry", Origin: render.OriginChartDefault, Value: "repo.rebellions.ai"}, byField["registry"])
	assert.Equal(t, render.FieldOrigin{Field: "annotations[team]", ValuesPath: "driver.annotations.team", Origin: render.OriginValues, Value: "a"}, byField["annotations[team]"])
	assert.Equal(t, render.OriginCleared, byField["annotations[drop]"].Origin)
	assert.Equal(t, render.OriginCleared, byField["tolerations"].Origin)
	assert.Equal(t, render.OriginInstance, byField["nodeSelector"].Origin)
	assert.True(t, byField["registry"].Inherited())
	assert.False(t, byField["version"].Inherited())

	def := map[string]render.FieldOrigin{}
	for _, f := range r.ProvenanceOf("rbln-driver") {
		def[f.Field] = f
	}
	assert.Equal(t, render.OriginValues, def["version"].Origin)
	assert.Equal(t, render.OriginChartDefault, def["registry"].Origin)
}

func TestSkipProvenance(t *testing.T) {
	file := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(file, []byte("driver: {instances: {a: {nodeSelector: {k: a}}}}"), 0o600))
	vals, err := render.LoadValues(render.ValuesOptions{ValueFiles: []string{file}})
	require.NoError(t, err)
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	r, err := render.Render(ch, vals, render.Options{SkipProvenance: true})
	require.NoError(t, err)
	assert.Len(t, r.Drivers, 2)
	assert.Nil(t, r.ProvenanceOf("rbln-driver-a"))
	r, err = render.Render(ch, vals, render.Options{})
	require.NoError(t, err)
	assert.NotEmpty(t, r.ProvenanceOf("rbln-driver-a"))
	assert.Equal(t, r.ProvenanceOf("rbln-driver-a"), r.Provenance["rbln-driver-a"], "computed once, kept")
	assert.Nil(t, r.ProvenanceOf("nope"))
}

func TestWarnSameAsDefault(t *testing.T) {
	r := mustRender(t, "driver: {instances: {same: {nodeSelector: {k: a}}, pinned: {image: {tag: \"9.0\"}, nodeSelector: {k: b}}}}")
	require.Len(t, r.Warnings, 1)
	assert.Equal(t, "rbln-driver-same", r.Warnings[0].Resource)
	assert.Contains(t, r.Warnings[0].Message, "differs from rbln-driver only by its nodeSelector")
}

func TestWarnRebootWithoutDrain(t *testing.T) {
	r := mustRender(t, "driver: {upgradePolicy: {reboot: {enable: true}}}")
	require.Len(t, r.Warnings, 1)
	assert.Equal(t, v1alpha1.ClusterPolicyName, r.Warnings[0].Resource)
	assert.Contains(t, r.Warnings[0].Message, "enable them together")
}

// TestValuesPrecedence: -f files in order, then --set, as helm does.
func TestValuesPrecedence(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	require.NoError(t, os.WriteFile(a, []byte("driver: {image: {tag: \"1\", pullPolicy: Always}}"), 0o600))
	require.NoError(t, os.WriteFile(b, []byte("driver: {image: {tag: \"2\"}}"), 0o600))
	vals, err := render.LoadValues(render.ValuesOptions{ValueFiles: []string{a, b}, StringValues: []string{"driver.instances.x.nodeSelector.gen=2"}})
	require.NoError(t, err)
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	r, err := render.Render(ch, vals, render.Options{})
	require.NoError(t, err)
	assert.Equal(t, "2", driver(t, r, "rbln-driver").Version)
	assert.Equal(t, corev1.PullAlways, driver(t, r, "rbln-driver").ImagePullPolicy)
	assert.Equal(t, map[string]string{"gen": "2"}, driver(t, r, "rbln-driver-x").NodeSelector)

	vals, err = render.LoadValues(render.ValuesOptions{Values: []string{"driver.instances.x.nodeSelector.gen=2"}})
	require.NoError(t, err)
	_, err = render.Render(ch, vals, render.Options{})
	require.ErrorContains(t, err, "label values are strings", "--set types numbers; --set-string is needed")
}

// TestManifestStable: output is byte-for-byte stable across runs.
func TestManifestStable(t *testing.T) {
	values := "driver: {instances: {b: {nodeSelector: {k: b, j: c}}, a: {nodeSelector: {k: a}, annotations: {z: \"1\", y: \"2\"}}}}"
	first, err := render.Manifest(mustRender(t, values))
	require.NoError(t, err)
	for range 20 {
		again, err := render.Manifest(mustRender(t, values))
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
	var docs []map[string]any
	for _, doc := range splitDocs(first) {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
		docs = append(docs, m)
	}
	require.Len(t, docs, 4)
	assert.Equal(t, "RBLNClusterPolicy", docs[0]["kind"])
}

func splitDocs(b []byte) []string {
	var out []string
	for _, d := range strings.Split(string(b), "---\n") {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// TestTypeClashLogsNothing: a value of the wrong kind where the chart has a map (or a map where
// it has none) is rejected by the schema with its field path; Helm's own "cannot overwrite
// table with non table" log lines, which would print above that error, are not written, and
// the user's values are left as they were.
func TestTypeClashLogsNothing(t *testing.T) {
	var logged bytes.Buffer
	out, flags := log.Writer(), log.Flags()
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(out); log.SetFlags(flags) })

	values := "driver: {image: 5, env: {a: b}, upgradePolicy: {drain: 1}}\nwebhook: {image: x}"
	r, err := renderYAML(t, values)
	require.Error(t, err)
	assert.Nil(t, r)
	for _, want := range []string{
		"driver.image: Invalid value: 5: must be a map of registry, repository, tag and pullPolicy",
		`driver.env: Invalid value: "<map>": must be a list of environment variables`,
		"driver.upgradePolicy.drain: Invalid value: 1: must be a map",
		`webhook.image: Invalid value: "x": must be a map of registry, repository, tag and pullPolicy`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Empty(t, logged.String(), "Helm's coalescing warnings")
}

package validation

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

func TestValidateInstanceKey(t *testing.T) {
	tests := []struct {
		key  string
		ok   bool
		want string
	}{
		{"atom", true, ""},
		{"0", true, ""},
		{"atom-canary", true, ""},
		{strings.Repeat("a", 40), true, ""},
		{strings.Repeat("a", 41), false, "is 41 characters; at most 40"},
		{"", false, "lowercase DNS-1123 label"},
		{"Atom", false, "lowercase DNS-1123 label"},
		{"atom_canary", false, "lowercase DNS-1123 label"},
		{"-atom", false, "lowercase DNS-1123 label"},
		{"atom-", false, "lowercase DNS-1123 label"},
		{"a.b", false, "lowercase DNS-1123 label"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			errs := ValidateInstanceKey(tt.key, field.NewPath("driver", "instances", tt.key))
			if tt.ok {
				assert.Empty(t, errs)
				return
			}
			assert.Len(t, errs, 1)
			assert.Contains(t, errs.ToAggregate().Error(), tt.want)
		})
	}
}

func TestValidateNodeSelector(t *testing.T) {
	tests := []struct {
		name string
		sel  map[string]string
		want []string
	}{
		{"empty", nil, nil},
		{"family and env", map[string]string{operator.LabelFamily: "atom", "env": "canary"}, nil},
		{"empty value is a valid label value", map[string]string{"env": ""}, nil},
		{"reserved owner", map[string]string{operator.LabelOwner: "x"}, []string{"Forbidden", "reserved"}},
		{"reserved deploy", map[string]string{operator.LabelDeployDriver: "true"}, []string{"Forbidden", "reserved"}},
		{"bad key", map[string]string{"a b": "x"}, []string{"not a valid label key"}},
		{"prefix too long", map[string]string{strings.Repeat("a", 254) + "/k": "x"}, []string{"not a valid label key"}},
		{"bad value", map[string]string{"k": "a b"}, []string{"not a valid label value"}},
		{"value too long", map[string]string{"k": strings.Repeat("v", 64)}, []string{"63"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateNodeSelector(tt.sel, field.NewPath("spec", "nodeSelector"))
			if len(tt.want) == 0 {
				assert.Empty(t, errs)
				return
			}
			msg := errs.ToAggregate().Error()
			for _, w := range tt.want {
				assert.Contains(t, msg, w)
			}
			assert.Contains(t, msg, "spec.nodeSelector[", "the error names the key")
		})
	}
}

func TestValidateDriverSpec(t *testing.T) {
	valid := func() *v1alpha1.RBLNDriverSpec {
		return &v1alpha1.RBLNDriverSpec{Registry: "r.example", Image: "org/drv", Version: "3.2.2", NodeSelector: map[string]string{"k": "v"}}
	}
	assert.Empty(t, ValidateDriverSpec("rbln-driver-a", valid(), field.NewPath("spec")))

	empty := valid()
	empty.NodeSelector = nil
	assert.Empty(t, ValidateDriverSpec(v1alpha1.DefaultDriverName, empty, field.NewPath("spec")), "the default may have an empty selector")
	assert.Contains(t, ValidateDriverSpec("rbln-driver-a", empty, field.NewPath("spec")).ToAggregate().Error(), "spec.nodeSelector: Required value: only the default resource rbln-driver may have an empty selector")

	owner := valid()
	owner.NodeSelector = map[string]string{operator.LabelOwner: "rbln-driver"}
	assert.Contains(t, ValidateDriverSpec("rbln-driver-a", owner, field.NewPath("spec")).ToAggregate().Error(),
		"rebellions.ai/npu.driver.owner is reserved: rbln-npu-operator writes it onto nodes itself")

	missing := &v1alpha1.RBLNDriverSpec{NodeSelector: map[string]string{"k": "v"}}
	msg := ValidateDriverSpec("x", missing, field.NewPath("spec")).ToAggregate().Error()
	for _, f := range []string{"spec.registry", "spec.image", "spec.version"} {
		assert.Contains(t, msg, f)
	}

	plus := valid()
	plus.Version = "3.2.2+build"
	assert.Contains(t, ValidateDriverSpec("x", plus, field.NewPath("spec")).ToAggregate().Error(), "cannot start an OCI image tag")

	// A digest: rbln-npu-operator cannot build a driver image from it, and the message says so.
	for _, tc := range []struct{ image, version, field string }{
		{"org/drv@sha256:" + strings.Repeat("a", 64), "3.2.2", "spec.image"},
		{"org/drv", "sha256:" + strings.Repeat("a", 64), "spec.version"},
		{"org/drv", "3.2.2-sha256:ab", "spec.version"},
	} {
		d := valid()
		d.Image, d.Version = tc.image, tc.version
		errs := ValidateDriverSpec("x", d, field.NewPath("spec"))
		require.Len(t, errs, 1, "%+v", tc)
		assert.Equal(t, tc.field, errs[0].Field)
		assert.Contains(t, errs[0].Error(), "rbln-npu-operator cannot build a driver image from a digest")
	}
	at := valid()
	at.Image = "org/drv@x" // a bare @ the operator does not refuse; no digest message
	assert.Empty(t, ValidateDriverSpec("x", at, field.NewPath("spec")))

	pull := valid()
	pull.ImagePullPolicy = "Sometimes"
	assert.Contains(t, ValidateDriverSpec("x", pull, field.NewPath("spec")).ToAggregate().Error(), `spec.imagePullPolicy: Unsupported value: "Sometimes"`)

	// Annotation keys are judged as render judges them (the driver pods get them).
	ann := valid()
	ann.Annotations = map[string]string{"team": "npu", "example.com/owner": "a", "bad key!": "x"}
	errs := ValidateDriverSpec("x", ann, field.NewPath("spec"))
	require.Len(t, errs, 1)
	assert.Contains(t, errs.ToAggregate().Error(), `spec.annotations[bad key!]: Invalid value: "bad key!": annotation key is not valid`)
}

func TestValidateDriverName(t *testing.T) {
	assert.Empty(t, ValidateDriverName("rbln-driver-"+strings.Repeat("a", 40), field.NewPath("metadata", "name")))
	assert.NotEmpty(t, ValidateDriverName(strings.Repeat("a", 64), field.NewPath("metadata", "name")))
	assert.NotEmpty(t, ValidateDriverName("rbln.driver", field.NewPath("metadata", "name")), "a dot is not allowed in a label value-safe DNS label")
}

func TestValidateUpgradePolicy(t *testing.T) {
	up := &v1alpha1.UpgradePolicy{MaxParallelUpgrades: -1}
	up.Drain.TimeoutSeconds = -3
	up.Reboot.Enable = true
	errs, warnings := ValidateUpgradePolicy(up, field.NewPath("spec", "driver", "upgradePolicy"))
	assert.Len(t, errs, 2)
	assert.Contains(t, errs.ToAggregate().Error(), "spec.driver.upgradePolicy.maxParallelUpgrades: Invalid value: -1: must be 0 or greater")
	assert.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "enable them together")
	assert.Contains(t, warnings[0], "enable them together: set spec.driver.upgradePolicy.drain.enable: true (values: driver.upgradePolicy.drain.enable), or turn reboot off")
	_, warnings = ValidateUpgradePolicy(up, field.NewPath("driver", "upgradePolicy"))
	assert.Equal(t, []string{"driver.upgradePolicy.reboot.enable is true but driver.upgradePolicy.drain.enable is false: the node would reboot without being drained, " +
		"its workloads still running; enable them together: set driver.upgradePolicy.drain.enable: true, or turn reboot off"}, warnings, "the values path is not named twice")

	up = &v1alpha1.UpgradePolicy{}
	up.Reboot.Enable, up.Drain.Enable = true, true
	errs, warnings = ValidateUpgradePolicy(up, field.NewPath("x"))
	assert.Empty(t, errs)
	assert.Empty(t, warnings)
}

func TestIsValidTag(t *testing.T) {
	for tag, ok := range map[string]bool{
		"3.2.2-6.8.0-90-generic-ubuntu22.04":         true,
		"3.2.2-5.14.0-284.11.1.el9_2.x86_64-rhel9.2": true,
		"3.2.2-6.8.0-1015-AWS-ubuntu22.04":           true,
		"3.2.2-6.1.0+rpt-rpi-v8-debian12":            false,
		"":                                           false,
		".hidden":                                    false,
		strings.Repeat("a", 128):                     true,
		strings.Repeat("a", 129):                     false,
	} {
		assert.Equal(t, ok, IsValidTag(tag), tag)
	}
}

// TestSizeLimits: a spec over a size limit is reported once per field, whatever its size, and
// an over-long selector is not judged key by key.
func TestSizeLimits(t *testing.T) {
	spec := func(edit func(s *v1alpha1.RBLNDriverSpec)) *v1alpha1.RBLNDriverSpec {
		s := &v1alpha1.RBLNDriverSpec{Registry: "r.example", Image: "org/drv", Version: "1.0", NodeSelector: map[string]string{"a": "b"}}
		edit(s)
		return s
	}
	many := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("not a key %d!", i)] = "not a value!"
		}
		return m
	}
	// annotations of size bytes in all, keys and values
	sized := func(size int) map[string]string {
		m := map[string]string{}
		for i := 0; size > 0; i++ {
			k := fmt.Sprintf("k%03d", i)
			v := strings.Repeat("v", min(size-len(k), 4096))
			m[k] = v
			size -= len(k) + len(v)
		}
		return m
	}
	tests := []struct {
		name  string
		spec  *v1alpha1.RBLNDriverSpec
		field string // "" = no error
		// typ is the error's type (FieldValueTooMany when empty), detail what it says.
		typ    field.ErrorType
		detail string
	}{
		{"64 selector keys", spec(func(s *v1alpha1.RBLNDriverSpec) {
			s.NodeSelector = map[string]string{}
			maps.Copy(s.NodeSelector, valid(64))
		}), "", "", ""},
		{"100,000 invalid selector keys", spec(func(s *v1alpha1.RBLNDriverSpec) { s.NodeSelector = many(100_000) }), "spec.nodeSelector", "", ""},
		{"256 tolerations", spec(func(s *v1alpha1.RBLNDriverSpec) { s.Tolerations = make([]corev1.Toleration, MaxTolerations) }), "", "", ""},
		{"257 tolerations", spec(func(s *v1alpha1.RBLNDriverSpec) { s.Tolerations = make([]corev1.Toleration, MaxTolerations+1) }), "spec.tolerations", "", ""},
		{"257 env", spec(func(s *v1alpha1.RBLNDriverSpec) { s.Env = make([]corev1.EnvVar, MaxEnv+1) }), "spec.env", "", ""},
		{"65 pull secrets", spec(func(s *v1alpha1.RBLNDriverSpec) { s.ImagePullSecrets = make([]string, MaxPullSecrets+1) }), "spec.imagePullSecrets", "", ""},
		{"257 annotations", spec(func(s *v1alpha1.RBLNDriverSpec) { s.Annotations = valid(MaxAnnotations + 1) }), "spec.annotations", "", ""},
		{"annotations of 256 KiB", spec(func(s *v1alpha1.RBLNDriverSpec) { s.Annotations = sized(MaxAnnotationBytes) }), "", "", ""},
		{"annotations of 256 KiB and a byte", spec(func(s *v1alpha1.RBLNDriverSpec) { s.Annotations = sized(MaxAnnotationBytes + 1) }), "spec.annotations",
			field.ErrorTypeTooLong, "annotations size 262145 is larger than limit 262144 (bytes of keys and values together: Kubernetes' limit on the annotations of the driver pods)"},
		{"one annotation of 1 MiB", spec(func(s *v1alpha1.RBLNDriverSpec) { s.Annotations = map[string]string{"a": strings.Repeat("v", 1<<20)} }), "spec.annotations",
			field.ErrorTypeTooLong, "annotations size 1048577 is larger than limit 262144"},
		{"257 annotations of 1 MiB: reported once, by their count", spec(func(s *v1alpha1.RBLNDriverSpec) {
			s.Annotations = valid(MaxAnnotations + 1)
			s.Annotations["k0"] = strings.Repeat("v", 1<<20)
		}), "spec.annotations", "", ""},
		{"65 resource limits", spec(func(s *v1alpha1.RBLNDriverSpec) {
			s.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{}}
			for k := range valid(MaxResourceNames + 1) {
				s.Resources.Limits[corev1.ResourceName(k)] = resource.MustParse("1")
			}
		}), "spec.resources.limits", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateDriverSpec("rbln-driver-x", tt.spec, field.NewPath("spec"))
			if tt.field == "" {
				assert.Empty(t, errs)
				return
			}
			if tt.typ == "" {
				tt.typ, tt.detail = field.ErrorTypeTooMany, "must have at most"
			}
			if assert.Len(t, errs, 1) {
				assert.Equal(t, tt.typ, errs[0].Type)
				assert.Equal(t, tt.field, errs[0].Field)
				assert.Contains(t, errs[0].Detail, tt.detail)
				assert.Less(t, len(errs[0].Error()), 500)
			}
		})
	}
}

func valid(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

// TestQuotable: long values and long field paths (a path holds map keys) are cut, with their
// length.
func TestQuotable(t *testing.T) {
	long := strings.Repeat("k", 1<<20)
	errs := Quotable(field.ErrorList{field.Invalid(field.NewPath("spec", "nodeSelector").Key(long), long, "bad")})
	assert.LessOrEqual(t, len(errs[0].Field), MaxFieldPath+32)
	assert.Contains(t, errs[0].Field, "(1048595 bytes)")
	assert.Contains(t, errs[0].Error(), "(1048576 bytes)")
	assert.Less(t, len(errs[0].Error()), 1024)
	assert.Equal(t, "short", Truncate("short", 10))
	assert.Equal(t, "é... (3 bytes)", Truncate("éa", 2), "cut at a character boundary")
}

// BenchmarkValidateDriver judges a valid RBLNDriver, as the webhook does on every request:
// the common case builds no field path and sorts nothing (what allocates is apimachinery's
// label-key check splitting a prefixed key).
func BenchmarkValidateDriver(b *testing.B) {
	d := &v1alpha1.RBLNDriver{Spec: v1alpha1.RBLNDriverSpec{
		Registry: "registry.example", Image: "rebellions/rbln-driver", Version: "3.2.2", ImagePullPolicy: "IfNotPresent",
		NodeSelector: map[string]string{operator.LabelFamily: "rebel", "rack": "r7"},
		Annotations:  map[string]string{"example.com/team": "npu"},
		Manager:      &v1alpha1.ManagerSpec{ImagePullPolicy: "Always"},
	}}
	d.Name = "rbln-driver-perf"
	b.ReportAllocs()
	for b.Loop() {
		if errs := ValidateDriver(d); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// TestValidateDriverPathsOfSharedAndOtherRoots: the paths built once for the object's spec
// and those built for another root name the same fields.
func TestValidateDriverPathsOfSharedAndOtherRoots(t *testing.T) {
	spec := &v1alpha1.RBLNDriverSpec{ImagePullPolicy: "Sometimes", Manager: &v1alpha1.ManagerSpec{ImagePullPolicy: "Rarely"},
		NodeSelector: map[string]string{"bad key!": "v", operator.LabelFamily: "atom"}, Annotations: map[string]string{"bad key!": "x"}}
	fields := func(errs field.ErrorList, prefix string) []string {
		var out []string
		for _, e := range errs {
			out = append(out, strings.TrimPrefix(e.Field, prefix))
		}
		return out
	}
	shared := fields(ValidateDriverSpec("rbln-driver-x", spec, objectSpecPath), "spec")
	other := fields(ValidateDriverSpec("rbln-driver-x", spec, field.NewPath("driver", "instances").Key("x")), "driver.instances[x]")
	assert.Equal(t, []string{".registry", ".image", ".version", ".imagePullPolicy", ".manager.imagePullPolicy", ".nodeSelector[bad key!]", ".annotations[bad key!]"}, shared)
	assert.Equal(t, shared, other)
}

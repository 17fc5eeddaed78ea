package crd

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/operator"
)

// driver is a valid RBLNDriver: name, its selector, then whatever change makes the case.
func driver(name string, sel map[string]string, change ...func(*v1alpha1.RBLNDriverSpec)) *v1alpha1.RBLNDriver {
	d := &v1alpha1.RBLNDriver{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RBLNDriver"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RBLNDriverSpec{
			Registry: "registry.example.com", Image: "rebellions/rbln-driver", Version: "3.2.2", NodeSelector: sel,
		},
	}
	for _, c := range change {
		c(&d.Spec)
	}
	return d
}

type driverCase struct {
	name string
	obj  *v1alpha1.RBLNDriver
}

func n(c byte, k int) string { return strings.Repeat(string(c), k) }

// prefix of length k (a DNS subdomain of labels of at most 63 characters).
func prefix(k int) string {
	var parts []string
	for k > 0 {
		l := min(k, 63)
		if k-l == 1 { // a label of 1 would leave a trailing dot: shorten this one
			l--
		}
		parts = append(parts, n('p', l))
		k -= l + 1
	}
	return strings.Join(parts, ".")
}

// handCases are the object-local cases of the webhook's tests (api/validation, test/e2e
// TestDriverSyntaxRules, the examples), each rule at and around its boundary.
func handCases() []driverCase {
	key := "syntax.e2e/case"
	sel := map[string]string{key: "a"}
	selOf := func(k, v string) map[string]string { return map[string]string{k: v} }
	many := func(k int) map[string]string {
		m := map[string]string{}
		for i := range k {
			m[fmt.Sprintf("example.com/k%d", i)] = "v"
		}
		return m
	}
	annotations := func(k int) func(*v1alpha1.RBLNDriverSpec) {
		return func(s *v1alpha1.RBLNDriverSpec) {
			s.Annotations = map[string]string{}
			for i := range k {
				s.Annotations[fmt.Sprintf("example.com/a%d", i)] = "v"
			}
		}
	}
	sized := func(total int, unit string) func(*v1alpha1.RBLNDriverSpec) {
		return func(s *v1alpha1.RBLNDriverSpec) {
			key := "example.com/big"
			s.Annotations = map[string]string{key: strings.Repeat(unit, (total-len(key))/len(unit))}
		}
	}
	cases := []driverCase{
		{"default resource with an empty selector", driver(v1alpha1.DefaultDriverName, nil)},
		{"instance with a selector", driver("rbln-driver-syntax", sel)},
		{"empty selector on an instance", driver("rbln-driver-syntax", nil)},
		{"empty map selector on an instance", driver("rbln-driver-syntax", map[string]string{})},
		{"reserved owner key", driver("rbln-driver-syntax", map[string]string{operator.LabelOwner: "rbln-driver", key: "a"})},
		{"reserved deploy key", driver("rbln-driver-syntax", selOf(operator.LabelDeployDriver, "true"))},
		{"invalid label key", driver("rbln-driver-syntax", selOf("bad key!", "a"))},
		{"key with two slashes", driver("rbln-driver-syntax", selOf("a/b/c", "a"))},
		{"uppercase prefix", driver("rbln-driver-syntax", selOf("UPPER.example.com/x", "a"))},
		{"invalid label value", driver("rbln-driver-syntax", selOf(key, "two words"))},
		{"empty label value", driver("rbln-driver-syntax", selOf(key, ""))},
		{"label value of 63", driver("rbln-driver-syntax", selOf(key, n('v', 63)))},
		{"label value of 64", driver("rbln-driver-syntax", selOf(key, n('v', 64)))},
		{"key name of 63", driver("rbln-driver-syntax", selOf(n('k', 63), "a"))},
		{"key name of 64", driver("rbln-driver-syntax", selOf(n('k', 64), "a"))},
		{"key prefix of 253", driver("rbln-driver-syntax", selOf(prefix(253)+"/k", "a"))},
		{"key prefix of 254", driver("rbln-driver-syntax", selOf(prefix(254)+"/k", "a"))},
		{"name with dots", driver("rbln-driver-a.b", sel)},
		{"name of 63", driver("rbln-driver-"+n('x', 51), sel)},
		{"name of 64", driver("rbln-driver-"+n('x', 52), sel)},
		{"instance key of 40", driver("rbln-driver-"+n('k', 40), sel)},
		{"instance key of 41", driver("rbln-driver-"+n('k', 41), sel)},
		{"version with +", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "3.2.2+build1" })},
		{"version with _", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "3.2.2_rc1" })},
		{"version starting with .", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = ".3" })},
		{"version starting with -", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "-3" })},
		{"version of 128", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = n('3', 128) })},
		{"version of 129", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = n('3', 129) })},
		{"empty version", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "" })},
		{"digest version", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "sha256:" + n('a', 64) })},
		{"digest in a version", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Version = "3.2.2-sha256:1" })},
		{"digest image", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Image = "rebellions/rbln-driver@sha256:" + n('a', 64) })},
		{"bare @ in the image", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Image = "rebellions/rbln-driver@x" })},
		{"empty registry", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Registry = "" })},
		{"empty image", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Image = "" })},
		{"pull policy Always", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.ImagePullPolicy = corev1.PullAlways })},
		{"pull policy Sometimes", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.ImagePullPolicy = "Sometimes" })},
		{"manager pull policy Never", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) {
			s.Manager = &v1alpha1.ManagerSpec{ImagePullPolicy: corev1.PullNever}
		})},
		{"manager pull policy lowercase", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) {
			s.Manager = &v1alpha1.ManagerSpec{ImagePullPolicy: "always"}
		})},
		{"64 selector keys", driver("rbln-driver-syntax", many(64))},
		{"65 selector keys", driver("rbln-driver-syntax", many(65))},
		{"64 annotations", driver("rbln-driver-syntax", sel, annotations(64))},
		{"65 annotations", driver("rbln-driver-syntax", sel, annotations(65))},
		{"invalid annotation key", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Annotations = map[string]string{"a b": "x"} })},
		{"annotations of 256 KiB", driver("rbln-driver-syntax", sel, sized(validation.MaxAnnotationBytes, "a"))},
		{"annotations of 256 KiB and a byte", driver("rbln-driver-syntax", sel, sized(validation.MaxAnnotationBytes+1, "a"))},
		{"annotations of 256 KiB in 3-byte runes", driver("rbln-driver-syntax", sel, sized(validation.MaxAnnotationBytes, "한"))},
		{"annotations over 256 KiB in 3-byte runes", driver("rbln-driver-syntax", sel, sized(validation.MaxAnnotationBytes+3, "한"))},
		{"256 tolerations", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Tolerations = make([]corev1.Toleration, 256) })},
		{"257 tolerations", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.Tolerations = make([]corev1.Toleration, 257) })},
		{"64 pull secrets", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.ImagePullSecrets = strings.Split(n('s', 64), "") })},
		{"65 pull secrets", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) { s.ImagePullSecrets = strings.Split(n('s', 65), "") })},
		{"65 resource limits", driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) {
			s.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{}}
			for i := range 65 {
				s.Resources.Limits[corev1.ResourceName(fmt.Sprintf("example.com/r%d", i))] = resource.MustParse("1")
			}
		})},
	}
	for i, env := range []int{256, 257} {
		cases = append(cases, driverCase{fmt.Sprintf("%d env variables", env), driver("rbln-driver-syntax", sel, func(s *v1alpha1.RBLNDriverSpec) {
			for j := range env {
				s.Env = append(s.Env, corev1.EnvVar{Name: fmt.Sprintf("V%d_%d", i, j)})
			}
		})})
	}
	return cases
}

// generatedCases are count specs around the boundaries: valid drivers with one to three
// things changed, each to a value at, just inside or just outside a limit of docs/webhook.md "Decisions". Every
// other case stays inside every limit (at the boundary), so that both verdicts are common.
func generatedCases(r *rand.Rand, count int) []driverCase {
	var out []driverCase
	for i := range count {
		valid := i%2 == 0
		pick := func(inside, outside []func() string) string {
			if valid || r.IntN(2) == 0 {
				return inside[r.IntN(len(inside))]()
			}
			return outside[r.IntN(len(outside))]()
		}
		keys := func() string {
			return pick([]func() string{
				func() string { return "example.com/" + n('k', 61+r.IntN(3)) }, // 61..63
				func() string { return prefix(251+r.IntN(3)) + "/k" },          // 251..253
				func() string { return n('k', 1+r.IntN(63)) },
				func() string { return []string{"a.b/C_d.e-f", "A", "a-b_c.d", "x.y/z"}[r.IntN(4)] },
			}, []func() string{
				func() string { return "example.com/" + n('k', 64+r.IntN(2)) },
				func() string { return prefix(254+r.IntN(2)) + "/k" },
				func() string { return []string{operator.LabelOwner, operator.LabelDeployDriver}[r.IntN(2)] },
				func() string {
					return []string{"a b", "-a", "a-", "_a", "a/", "/a", "a/b/c", "A.B/c", "a..b/c", "한"}[r.IntN(10)]
				},
			})
		}
		vals := func() string {
			return pick([]func() string{
				func() string { return n('v', 61+r.IntN(3)) },
				func() string { return "" },
				func() string { return []string{"a_b", "A.b-C", "v1", "3.2.2"}[r.IntN(4)] },
			}, []func() string{
				func() string { return n('v', 64+r.IntN(2)) },
				func() string { return []string{"a b", "-a", "a-", "한", ".a", "a."}[r.IntN(6)] },
			})
		}
		name := fmt.Sprintf("rbln-driver-g%d", i)
		switch r.IntN(6) {
		case 0:
			name = v1alpha1.DefaultDriverName
		case 1:
			name = pick([]func() string{
				func() string { return "rbln-driver-" + n('x', 49+r.IntN(3)) }, // 61..63 characters
				func() string { return "rbln-driver-" + n('k', 40) },
			}, []func() string{
				func() string { return "rbln-driver-" + n('x', 52+r.IntN(2)) },
				func() string {
					return []string{"rbln-driver-a.b", "rbln.driver", "rbln-driver-" + n('k', 41)}[r.IntN(3)]
				},
			})
		}
		sel := map[string]string{}
		for range 1 + r.IntN(3) {
			sel[keys()] = vals()
		}
		if name == v1alpha1.DefaultDriverName && r.IntN(2) == 0 {
			sel = nil
		}
		if !valid && r.IntN(8) == 0 {
			sel = nil // an instance without a selector
		}
		if r.IntN(8) == 0 { // the count limit
			if sel == nil {
				sel = map[string]string{}
			}
			limit := validation.MaxSelectorKeys - len(sel) - 2 + r.IntN(3)
			if !valid {
				limit += 2
			}
			for j := range limit {
				sel[fmt.Sprintf("example.com/c%d", j)] = "v"
			}
		}
		d := driver(name, sel)
		for range r.IntN(3) {
			switch r.IntN(5) {
			case 0:
				d.Spec.Version = pick([]func() string{
					func() string { return n('3', 126+r.IntN(3)) },
					func() string { return []string{"3.2.2", "3.2.2_rc", "_3", "3-", "v3.3.0-rc1", "3.10"}[r.IntN(6)] },
				}, []func() string{
					func() string { return n('3', 129+r.IntN(2)) },
					func() string { return []string{"3.2.2+b", ".3", "-3", "3 2", ""}[r.IntN(5)] },
				})
			case 1:
				d.Spec.ImagePullPolicy = corev1.PullPolicy(pick([]func() string{
					func() string { return []string{"", "Always", "IfNotPresent", "Never"}[r.IntN(4)] },
				}, []func() string{
					func() string { return []string{"always", "Sometimes", "Never "}[r.IntN(3)] },
				}))
			case 2:
				d.Spec.Annotations = map[string]string{}
				limit := validation.MaxAnnotations - 2 + r.IntN(3)
				if !valid {
					limit += 2
				}
				for j := range limit {
					d.Spec.Annotations[fmt.Sprintf("example.com/a%d", j)] = "v"
				}
			case 3:
				d.Spec.Annotations = map[string]string{keys(): "v"}
			case 4:
				limit := validation.MaxPullSecrets - 2 + r.IntN(3)
				if !valid {
					limit += 2
				}
				d.Spec.ImagePullSecrets = strings.Split(n('s', limit), "")
			}
		}
		out = append(out, driverCase{fmt.Sprintf("generated %d", i), d})
	}
	return out
}

// TestCRDAgreesWithTheWebhook (docs/webhook.md "With the webhook away"): every object-local case of the webhook and 1,200
// generated around the boundaries go through Go's validator and through the API server with
// the CRDs alone (no webhook): the CRD refuses every object Go denies and admits every object
// Go admits.
func TestCRDAgreesWithTheWebhook(t *testing.T) {
	requireSetup(t)
	cases := append(handCases(), generatedCases(rand.New(rand.NewPCG(13, 32)), 1200)...)
	var denied, disagree int
	for _, tc := range cases {
		errs := validation.ValidateDriver(tc.obj)
		err := served(t, tc.obj)
		if len(errs) > 0 {
			denied++
		}
		if (len(errs) == 0) != (err == nil) {
			disagree++
			assert.Fail(t, "the CRD and the webhook disagree", "%s (%s): Go: %v; the API server: %v", tc.name, tc.obj.Name, errs.ToAggregate(), err)
		}
	}
	t.Logf("%d RBLNDrivers: %d denied by Go and by the CRD, %d admitted by both; %d disagreements", len(cases), denied, len(cases)-denied, disagree)
	assert.Greater(t, denied, 300, "the corpus is mostly about the boundaries")
	assert.Greater(t, len(cases)-denied, 300)
}

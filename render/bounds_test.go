package render_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// TestErrorsAreCapped: an *InvalidValuesError lists the first MaxListedErrors problems and
// counts the rest, whatever the values hold.
func TestErrorsAreCapped(t *testing.T) {
	var many strings.Builder
	many.WriteString("driver:\n  annotations:\n")
	for i := range 60 { // under the 64 annotations an RBLNDriver may carry
		fmt.Fprintf(&many, "    k%04d: %d\n", i, i)
	}
	hugeKey := strings.Repeat("k", 1<<20)
	tests := []struct {
		name    string
		opts    render.ValuesOptions
		values  string
		total   int
		maxSize int
	}{
		{name: "65,537 list items from one --set: over the size limit, reported once", opts: render.ValuesOptions{Values: []string{"driver.tolerations[65536]=x"}}, total: 1, maxSize: 500},
		{name: "200 list items from one --set", opts: render.ValuesOptions{Values: []string{"driver.tolerations[199]=x"}}, total: 200, maxSize: 5000},
		{name: "60 annotations that are numbers", values: many.String(), total: 60, maxSize: 20000},
		{name: "a 1 MB unknown key", opts: render.ValuesOptions{Values: []string{"driver." + hugeKey + "=1"}}, total: 1, maxSize: 3000},
		{name: "a 1 MB label key", values: "driver:\n  nodeSelector:\n    ? " + hugeKey + "\n    : x\n", total: 1, maxSize: 5000},
		{name: "a 1 MB label key given to --set", opts: render.ValuesOptions{Values: []string{"driver.nodeSelector." + hugeKey + "=1"}}, total: 1, maxSize: 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.values != "" {
				tt.opts.ValueFiles = []string{writeFiles(t, map[string]string{"values.yaml": tt.values})["values.yaml"]}
			}
			err := renderWithSources(t, tt.opts)
			var invalid *render.InvalidValuesError
			require.ErrorAs(t, err, &invalid)
			assert.Equal(t, tt.total, invalid.Total())
			assert.LessOrEqual(t, len(invalid.Errs), render.MaxListedErrors)
			lines := strings.Split(err.Error(), "\n")
			assert.LessOrEqual(t, len(lines), render.MaxListedErrors+2)
			if tt.total > render.MaxListedErrors {
				assert.Equal(t, fmt.Sprintf("  ... and %d more (%d problems in all)", tt.total-render.MaxListedErrors, tt.total), lines[len(lines)-1])
			}
			assert.LessOrEqual(t, len(err.Error()), tt.maxSize)
		})
	}
}

// TestValueAndInstanceErrorsAtOnce: the instance errors of converting values to specs (a null
// that removes a required image field) come with every other problem, not after they are
// fixed.
func TestValueAndInstanceErrorsAtOnce(t *testing.T) {
	_, err := renderYAML(t, `driver:
  image:
    tag: 3.10
  instances:
    a:
      image: {tag: null}
      nodeSelector: {x: y}
    b:
      imgae: {}
      nodeSelector: {x: z}
    c:
      image: null
      nodeSelector: {x: c}`)
	var invalid *render.InvalidValuesError
	require.ErrorAs(t, err, &invalid)
	var fields []string
	for _, e := range invalid.Errs {
		fields = append(fields, e.Field)
	}
	assert.Equal(t, []string{
		"driver.image.tag",
		"driver.instances.a.image.tag",
		"driver.instances.a.nodeSelector[x]",
		"driver.instances.b.imgae",
		"driver.instances.c.image.registry",
		"driver.instances.c.image.repository",
		"driver.instances.c.image.tag",
	}, fields, "%v", err)
	assert.Contains(t, err.Error(), "driver.instances.a.image.tag: Required value: spec.version would be empty: a null on this instance removed the inherited driver.image.tag")
}

// TestMergedMapsWithinTheSizeLimits: an instance's annotations and resource names are counted
// once merged with those it inherits (each side within its limit, the RBLNDriver over it); a
// null removes an inherited key, and at the limit it renders.
func TestMergedMapsWithinTheSizeLimits(t *testing.T) {
	mapOf := func(prefix string, n int, value string) string {
		entries := make([]string, n)
		for i := range entries {
			entries[i] = fmt.Sprintf("%s%d: %s", prefix, i, value)
		}
		return "{" + strings.Join(entries, ", ") + "}"
	}
	values := func(own string) string {
		return "driver:\n  annotations: " + mapOf("a", 33, "x") + "\n  resources: {limits: " + mapOf("example.com/r", 40, "1") + "}\n" +
			"  instances:\n    a:\n      nodeSelector: {x: z}\n" + own
	}
	_, err := renderYAML(t, values("      annotations: "+mapOf("b", 33, "x")+"\n      resources: {limits: "+mapOf("example.com/s", 40, "1")+"}\n"))
	var invalid *render.InvalidValuesError
	require.ErrorAs(t, err, &invalid)
	require.Len(t, invalid.Errs, 2, "%v", err)
	assert.Equal(t, "driver.instances.a.annotations", invalid.Errs[0].Field)
	assert.Contains(t, err.Error(), "driver.instances.a.annotations: Too many: 66: its RBLNDriver would carry 66 annotations, 33 of its own and 33 inherited from driver.annotations; at most 64 are allowed")
	assert.Contains(t, err.Error(), "driver.instances.a.resources.limits: Too many: 80: its RBLNDriver would carry 80 resources, 40 of its own and 40 inherited from driver.resources.limits; at most 64 are allowed")

	// 33 of its own, 2 overriding inherited ones and 2 removing them with null: 35 of its
	// own and 29 inherited, 64.
	r, err := renderYAML(t, values("      annotations: "+strings.TrimSuffix(mapOf("b", 33, "x"), "}")+
		", a0: null, a1: null, a2: w, a3: w}\n"))
	require.NoError(t, err)
	assert.Len(t, driver(t, r, "rbln-driver-a").Annotations, 64)
}

// TestAnnotationBytes: the annotations an RBLNDriver carries hold at most 256 KiB of keys and
// values (Kubernetes' limit, which the webhook applies): over it, the top-level block's, an
// instance's own or an instance's merged with what it inherits are refused once, naming the
// field; at the limit, and below it once a null removes an inherited one, they render.
func TestAnnotationBytes(t *testing.T) {
	const kib = 1 << 10
	// entry is one annotation of n bytes, key and value: key k<name>.
	entry := func(name string, n int) string {
		k := "k" + name
		return fmt.Sprintf("%s: %s", k, strings.Repeat("v", n-len(k)))
	}
	block := func(entries ...string) string { return "{" + strings.Join(entries, ", ") + "}" }
	values := func(top, own string) string {
		v := "driver:\n"
		if top != "" {
			v += "  annotations: " + top + "\n"
		}
		v += "  instances:\n    a:\n      nodeSelector: {x: z}\n"
		if own != "" {
			v += "      annotations: " + own + "\n"
		}
		return v
	}
	tests := []struct {
		name   string
		values string
		want   string // the one error, "" when it renders
	}{
		{"256 KiB on the default", values(block(entry("1", 128*kib), entry("2", 128*kib)), ""), ""},
		{"256 KiB and a byte on the default", values(block(entry("1", 128*kib), entry("2", 128*kib+1)), ""),
			"driver.annotations: Too long: annotations size 262145 is larger than limit 262144 (bytes of keys and values together: Kubernetes' limit on the annotations of the driver pods)"},
		{"256 KiB and a byte of an instance's own", values("", block(entry("1", 256*kib+1))),
			"driver.instances.a.annotations: Too long: annotations size 262145 is larger than limit 262144"},
		{"200 KiB inherited and 100 KiB of its own", values(block(entry("1", 200*kib)), block(entry("2", 100*kib))),
			"driver.instances.a.annotations: Too long: its RBLNDriver would carry 307200 bytes of annotations (keys and values), 102400 of its own and 204800 inherited from driver.annotations; at most 262144 (256 KiB, Kubernetes' limit on the annotations of the driver pods) are allowed: set fewer, or remove inherited ones with null"},
		{"an inherited one overridden", values(block(entry("1", 200*kib)), block(entry("1", 100*kib))), ""},
		{"an inherited one removed with null", values(block(entry("1", 200*kib), entry("3", 10)), block(entry("2", 100*kib), "k1: null")), ""},
		{"a 1 MiB annotation", values(block(entry("1", 1<<20)), ""), "driver.annotations: Too long: annotations size 1048576 is larger than limit 262144"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := renderYAML(t, tt.values)
			if tt.want == "" {
				require.NoError(t, err)
				for _, d := range r.Drivers {
					assert.Empty(t, validation.ValidateDriver(&d), d.Name)
				}
				return
			}
			var invalid *render.InvalidValuesError
			require.ErrorAs(t, err, &invalid)
			require.Len(t, invalid.Errs, 1, "%v", err)
			assert.Equal(t, field.ErrorTypeTooLong, invalid.Errs[0].Type)
			assert.Contains(t, err.Error(), "\n  "+tt.want)
			assert.Less(t, len(err.Error()), 1000)
		})
	}
}

// TestBoundsBeforeTheSchema: what is over the schema's size bounds is reported by the bounds
// pass and never reaches the schema's validator or the decoding, so its cost is bounded by the
// schema, not by what the user sends: 40 instances with 65,537 env items and tolerations each
// (one --set each), a 16 MB tag.
func TestBoundsBeforeTheSchema(t *testing.T) {
	var sets []string
	for i := range 40 {
		sets = append(sets, fmt.Sprintf("driver.instances.i%d.env[65536].name=x", i),
			fmt.Sprintf("driver.instances.i%d.tolerations[65536].key=x", i),
			fmt.Sprintf("driver.instances.i%d.nodeSelector.a=b", i))
	}
	tests := []struct {
		name     string
		opts     render.ValuesOptions
		want     string
		total    int
		maxAlloc uint64
	}{
		{name: "40 instances of 65,537 env items and tolerations", opts: render.ValuesOptions{Values: sets},
			want: "driver.instances.i0.env: Too many: 65537: must have at most 256 environment variables", total: 80, maxAlloc: 256 << 20},
		{name: "a 16 MB tag", opts: render.ValuesOptions{Values: []string{"driver.image.tag=" + strings.Repeat("a", 16<<20)}},
			want: "cannot start an OCI image tag", total: 1, maxAlloc: 8 << 20},
		{name: "a 16 MB pull secret", opts: render.ValuesOptions{Values: []string{"driver.imagePullSecrets[0]=" + strings.Repeat("a", 16<<20)}},
			want: "driver.imagePullSecrets[0]: Invalid value", total: 1, maxAlloc: 8 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, src, err := render.Load(context.Background(), tt.opts)
			require.NoError(t, err)
			ch, err := charts.Driverguard()
			require.NoError(t, err)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err = render.Render(ch, vals, render.Options{Sources: src})
			runtime.ReadMemStats(&after)
			t.Logf("%d MB allocated", (after.TotalAlloc-before.TotalAlloc)>>20)
			var invalid *render.InvalidValuesError
			require.ErrorAs(t, err, &invalid)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, tt.total, invalid.Total())
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, tt.maxAlloc, "bytes allocated")
		})
	}
}

// TestUnknownKeysAreCounted: of a map's unknown keys only those that can be listed are worded
// (did-you-mean, the known keys); the others are counted. 200,000 unknown keys under driver.
func TestUnknownKeysAreCounted(t *testing.T) {
	driver := map[string]any{}
	for i := range 200000 {
		driver[fmt.Sprintf("u%07d", i)] = 1
	}
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = render.Render(ch, map[string]any{"driver": driver}, render.Options{})
	runtime.ReadMemStats(&after)
	t.Logf("%d MB allocated", (after.TotalAlloc-before.TotalAlloc)>>20)
	var invalid *render.InvalidValuesError
	require.ErrorAs(t, err, &invalid)
	assert.Equal(t, 200000, invalid.Total())
	assert.Contains(t, err.Error(), "driver.u0000000: Unsupported value: \"u0000000\": unknown field (known: ")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(200<<20), "bytes allocated")
}

// TestControlCharactersInKeysAreQuoted: a key with a character that is not printable (an
// escape sequence) is quoted in every field path printed, never sent to the terminal raw.
func TestControlCharactersInKeysAreQuoted(t *testing.T) {
	values := "driver:\n  \"\\e]0;pwned\\a\\e[2J\": 1\n  annotations: {\"k\\e\": v}\n  nodeSelector: {\"k\\e[2J\": v, \"a\\e\": {b: c}}\n" +
		"  instances:\n    \"x\\ty\": {nodeSelector: {a: b}, annotations: {\"k\\e\": 1}}\n"
	err := renderWithSources(t, render.ValuesOptions{ValueFiles: []string{writeFiles(t, map[string]string{"values.yaml": values})["values.yaml"]}})
	var invalid *render.InvalidValuesError
	require.ErrorAs(t, err, &invalid)
	msg := err.Error()
	for _, c := range "\x1b\a\t" {
		assert.NotContains(t, msg, string(c))
	}
	for _, want := range []string{`driver."\x1b]0;pwned\a\x1b[2J": Unsupported value`, `driver.annotations["k\x1b"]: Invalid value`,
		`driver.nodeSelector["k\x1b[2J"]: Invalid value`, `driver.instances."x\ty": Invalid value`, `driver.instances."x\ty".annotations["k\x1b"]`} {
		assert.Contains(t, msg, want)
	}
	assert.Equal(t, 1, strings.Count(msg, `driver.annotations["k\x1b"]`), "one problem per field")
}

// TestLongRulesAreSaidOnce: a long rule every bad name of a list breaks (the RFC 1123
// paragraph) is said at the first; the others point to it.
func TestLongRulesAreSaidOnce(t *testing.T) {
	for _, list := range []string{"webhook.policy.configMaps", "driver.imagePullSecrets"} {
		t.Run(list, func(t *testing.T) {
			var sets []string
			for i := range 60 {
				sets = append(sets, fmt.Sprintf("%s[%d]=Bad_%d", list, i, i))
			}
			err := renderWithSources(t, render.ValuesOptions{Values: []string{strings.Join(sets, ",")}})
			var invalid *render.InvalidValuesError
			require.ErrorAs(t, err, &invalid)
			msg := err.Error()
			assert.Equal(t, 1, strings.Count(msg, "RFC 1123"), msg)
			assert.Contains(t, msg, list+"[1]: Invalid value: \"Bad_1\": breaks the same rule as "+list+"[0] (above)")
			assert.Less(t, len(msg), 7000)
		})
	}
}

// TestSplitKeyHintOnlyForSet: a map where a label value belongs is --set's splitting a key at
// its dots only when --set gave it; from a values file the message says what belongs, no more.
func TestSplitKeyHintOnlyForSet(t *testing.T) {
	hint := `escape its dots: --set 'driver.nodeSelector.rebellions\.ai/npu\.family=atom'`
	err := renderWithSources(t, render.ValuesOptions{Values: []string{"driver.nodeSelector.rebellions.ai/npu.family=atom"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), hint)

	file := writeFiles(t, map[string]string{"values.yaml": "driver:\n  nodeSelector:\n    rebellions:\n      ai/npu: {family: atom}\n"})["values.yaml"]
	err = renderWithSources(t, render.ValuesOptions{ValueFiles: []string{file}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `driver.nodeSelector[rebellions]: Invalid value: "<map>": label values are strings, not maps`)
	assert.NotContains(t, err.Error(), "--set")

	deep := "driver:\n  nodeSelector:\n    a: " + strings.Repeat("{a: ", 10000) + "x" + strings.Repeat("}", 10000) + "\n"
	file = writeFiles(t, map[string]string{"values.yaml": deep})["values.yaml"]
	err = renderWithSources(t, render.ValuesOptions{ValueFiles: []string{file}})
	if err != nil && strings.Contains(err.Error(), "label values are strings") {
		assert.Less(t, len(err.Error()), 1000)
	}
}

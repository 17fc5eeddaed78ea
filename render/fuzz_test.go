package render_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// maxLoadErrorBytes bounds the text of an error of Load on a values file read from stdin and
// one --set: a prefix ("failed to parse <stdin>: ", "failed parsing --set data: ") and a
// library's message cut to 1000 bytes with its length ("... (N bytes)").
const maxLoadErrorBytes = 64 + 1000 + 32

// maxValuesErrorBytes bounds the text of an *InvalidValuesError: its first line, at most
// MaxListedErrors problems of one line each ("\n  " and the line, cut to 2000 bytes with its
// length), and the count of the rest. Problems quote values cut to 80 bytes and field paths
// to 160; the 2000 bytes of a line are the backstop for the rest (a hint quoting the user's
// text, the known fields of an unknown one).
const maxValuesErrorBytes = 64 + render.MaxListedErrors*(3+2000+32) + 80

// FuzzValues reads arbitrary bytes as a values file (from standard input, as -f - does) and
// an arbitrary --set, and renders them with the embedded chart, through the calls `render`
// makes (render.Load, then render.RenderContext with the values' sources): whatever the
// values, there is no panic, and the answer is either objects or an error, never both; an
// error of the values is an *InvalidValuesError of at most MaxListedErrors problems with a
// bounded text; every RBLNDriver rendered passes validation.ValidateDriver (the webhook's rules:
// the size limits among them) and the cluster policy ValidateUpgradePolicy. Seeds: every file
// of test/testdata/values and the pathological cases of bounds_test.go cut down.
// `make fuzz` runs it for a fixed time; `go test` runs the seeds.
func FuzzValues(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "test", "testdata", "values", "*.yaml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b, "")
		}
	}
	var numbers strings.Builder
	numbers.WriteString("driver:\n  annotations:\n")
	for i := range 60 {
		fmt.Fprintf(&numbers, "    k%02d: %d\n", i, i)
	}
	long := strings.Repeat("k", 300)
	for _, seed := range []struct{ values, set string }{
		{"", "driver.tolerations[300]=x"}, // over the size limit: reported once
		{"", "driver.tolerations[60]=x"},  // more problems than are listed
		{numbers.String(), ""},
		{"", "driver." + long + "=1"},
		{"driver:\n  nodeSelector:\n    ? " + long + "\n    : x\n", ""},
		{"", "driver.nodeSelector." + long + "=1"},
		{"driver:\n  image:\n    tag: 3.10\n", ""},
		{"driver:\n  image:\n    tag: " + strings.Repeat("1", 300) + "\n", ""},
		{"driver:\n  image:\n    tag: 3.10\n  instances:\n    a:\n      image: {tag: null}\n      nodeSelector: {x: y}\n    b:\n      imgae: {}\n      nodeSelector: {x: z}\n    c:\n      image: null\n      nodeSelector: {x: c}\n", ""},
		{"driver:\n  instances:\n    a:\n      nodeSelector: {rebellions.ai/npu.family: atom}\n", "driver.instances.a.image.tag=3.3.0"},
		{"", "driver.instances.a.nodeSelector.rebellions.ai/npu.family=atom"},
		{"", "driver.image.tag=3.10,driver.image.pullPolicy=true"},
		{"a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n", ""},
		{"driver:\n  annotations: &ann {a: x, b: y}\n  instances:\n    a: {nodeSelector: {x: y}, annotations: *ann}\n", ""},
		{"driver:\n  resources: {limits: {cpu: 1, memory: 1Gi}}\n  instances:\n    a: {nodeSelector: {x: y}, resources: {requests: {cpu: x}}}\n", ""},
		{"{\"driver\": {\"image\": {\"tag\": \"3.2.2\"}}}", ""},
		{"- a\n- b\n", ""},
		{"driver: [unclosed\n", ""},
		{"driver:\n  enabled: false\n---\ndriver: {enabled: true}\n", ""},
		{"driver:\n  image:\n    tag: \"\xff\xfe\"\n", ""},
		{"driver:\n  image:\n    tag: a\x00b\n", ""},
		{"", "driver.upgradePolicy.maxParallelUpgrades=-1"},
	} {
		f.Add([]byte(seed.values), seed.set)
	}

	ch, err := charts.Driverguard()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, values []byte, set string) {
		ctx := context.Background()
		opts := render.ValuesOptions{ValueFiles: []string{"-"}, Stdin: bytes.NewReader(values)}
		if set != "" {
			opts.Values = []string{set}
		}
		vals, src, err := render.Load(ctx, opts)
		if err != nil {
			if vals != nil || src != nil {
				t.Fatalf("Load returned values and an error: %v", err)
			}
			if n := len(err.Error()); n > maxLoadErrorBytes {
				t.Fatalf("a %d-byte error of Load: %.300s", n, err)
			}
			return
		}
		r, err := render.RenderContext(ctx, ch, vals, render.Options{Sources: src})
		if err != nil {
			if r != nil {
				t.Fatalf("a result and an error: %v", err)
			}
			checkInvalidValues(t, err)
			return
		}
		if r == nil {
			t.Fatal("neither a result nor an error")
		}
		for i := range r.Drivers {
			if errs := validation.ValidateDriver(&r.Drivers[i]); len(errs) > 0 {
				t.Fatalf("rendered %s, which the webhook denies: %.1000v", r.Drivers[i].Name, errs)
			}
		}
		if errs, _ := validation.ValidateUpgradePolicy(&r.ClusterPolicy.Spec.Driver.UpgradePolicy, nil); len(errs) > 0 {
			t.Fatalf("rendered an upgrade policy the webhook denies: %.1000v", errs)
		}
		if _, err := render.Manifest(r); err != nil {
			t.Fatalf("rendered objects that cannot be written: %v", err)
		}
	})
}

// checkInvalidValues fails unless err is an *InvalidValuesError listing between 1 and
// MaxListedErrors problems, one line each, in at most maxValuesErrorBytes.
func checkInvalidValues(t *testing.T, err error) {
	t.Helper()
	var invalid *render.InvalidValuesError
	if !errors.As(err, &invalid) {
		t.Fatalf("an error that is not an *InvalidValuesError (%T): %.2000v", err, err)
	}
	if len(invalid.Errs) == 0 || len(invalid.Errs) > render.MaxListedErrors || invalid.Omitted < 0 {
		t.Fatalf("%d problems listed, %d omitted", len(invalid.Errs), invalid.Omitted)
	}
	msg := err.Error()
	if len(msg) > maxValuesErrorBytes {
		t.Fatalf("a %d-byte error: %.2000s", len(msg), msg)
	}
	lines := strings.Count(msg, "\n")
	want := len(invalid.Errs)
	if invalid.Omitted > 0 {
		want++
	}
	if lines != want {
		t.Fatalf("%d lines for %d problems (%d omitted): %.2000s", lines+1, len(invalid.Errs), invalid.Omitted, msg)
	}
}

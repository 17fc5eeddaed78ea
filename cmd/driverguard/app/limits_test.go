package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestInputLimits: every input is read through a size limit; going over it is exit 2 with the
// file, the limit and the flag that raises it.
func TestInputLimits(t *testing.T) {
	values := writeTemp(t, "values.yaml", "driver:\n  image:\n    tag: \""+strings.Repeat("a", 2000)+"\"\n")
	nodes := writeTemp(t, "nodes.yaml", strings.Repeat("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n", 100))
	policyDir := filepath.Dir(writeTemp(t, "big.rego", "package driverguard.big\n\n# "+strings.Repeat("x", 4000)+"\n"))
	review := writeTemp(t, "review.json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":{"x":"`+strings.Repeat("a", 8<<20)+`"}}}`)
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"a values file", "", []string{"render", "-f", values, "--max-values-size", "1Ki"},
			"reading values: " + values + " is larger than the limit of 1Ki (1024 bytes); raise the limit with --max-values-size"},
		{"values on stdin", strings.Repeat("#", 5000), []string{"render", "-f", "-", "--max-values-size", "4096"},
			"reading values: <stdin> is larger than the limit of 4Ki (4096 bytes); raise the limit with --max-values-size"},
		{"a --set-file file", "", []string{"render", "--set-file", "driver.image.tag=" + values, "--max-values-size", "1000"},
			values + " is larger than the limit of 1000 bytes; raise the limit with --max-values-size"},
		{"a node inventory", "", []string{"check", "-f", exampleValues, "--nodes", nodes, "--max-inventory-size", "2Ki"},
			"reading nodes: " + nodes + " is larger than the limit of 2Ki (2048 bytes); raise the limit with --max-inventory-size"},
		{"drivers for route", "", []string{"route", "--drivers", nodes, "--nodes", exampleNodes, "--max-inventory-size", "100"},
			"reading drivers: " + nodes + " is larger than the limit of 100 bytes; raise the limit with --max-inventory-size"},
		{"pods for plan", "", []string{"plan", "--nodes", writeTemp(t, "few.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n"), "--pods", nodes, "--max-inventory-size", "3000"},
			"reading --pods: " + nodes + " is larger than the limit of 3000 bytes"},
		{"an AdmissionReview over the webhook's 7 MiB", "", []string{"review", "-f", review},
			review + " is larger than the limit of 7Mi (7340032 bytes), the webhook's: it would refuse the request (413) unread"},
		{"a policy file for check", "", []string{"check", "-f", exampleValues, "--policy", policyDir, "--max-values-size", "2Ki"},
			"big.rego: is larger than the limit of 2048 bytes for one policy or data file (--max-values-size raises it)"},
		{"a policy file for policy test", "", []string{"policy", "test", policyDir, "--max-values-size", "2Ki"}, "big.rego: is larger than the limit of 2048 bytes"},
		{"a size that is not one", "", []string{"render", "--max-values-size", "lots"}, `invalid argument "lots" for "--max-values-size" flag: not a size`},
		{"a size of zero", "", []string{"check", "--max-inventory-size", "0"}, "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.stdin, tt.args...)
			assert.Equal(t, ExitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.want)
			assert.Empty(t, r.stdout)
			assert.Less(t, len(r.stderr), 1000, "no echo of the input")
		})
	}
	r := run(t, "", "render", "-f", values, "--max-values-size", "1Mi")
	assert.Equal(t, ExitInvalid, r.code, "within a raised limit, the values are judged: %s", r.stderr)
}

// TestInventoryKinds: a cluster-state file that holds objects, but none of the kinds its flag
// takes, is unusable input naming what it holds; an empty file holds none.
func TestInventoryKinds(t *testing.T) {
	cm := writeTemp(t, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n")
	empty := writeTemp(t, "empty.yaml", "")
	emptyList := writeTemp(t, "list.yaml", "apiVersion: v1\nkind: List\nitems: []\n")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"--drivers with a ConfigMap", []string{"check", "-f", exampleValues, "--drivers", cm}, ExitUsage,
			"--drivers " + cm + " holds 1 ConfigMap and no RBLNDriver: give it 'kubectl get rblndrivers -o yaml' output"},
		{"--drivers with nodes", []string{"check", "-f", exampleValues, "--drivers", exampleNodes}, ExitUsage,
			"--drivers " + exampleNodes + " holds 12 Nodes and no RBLNDriver"},
		{"--cluster-policy with nodes", []string{"check", "-f", exampleValues, "--cluster-policy", exampleNodes}, ExitUsage,
			"--cluster-policy " + exampleNodes + " holds 12 Nodes and no RBLNClusterPolicy"},
		{"--nodes with a ConfigMap", []string{"preview", "-f", exampleValues, "--nodes", cm}, ExitUsage, "--nodes " + cm + " holds 1 ConfigMap and no Node"},
		{"route --drivers with a ConfigMap", []string{"route", "--drivers", cm, "--nodes", exampleNodes}, ExitUsage, "holds 1 ConfigMap and no RBLNDriver"},
		{"review --cluster-policy with a ConfigMap", []string{"review", "-f", "-", "--cluster-policy", cm}, ExitUsage, "holds 1 ConfigMap and no RBLNClusterPolicy"},
		{"an empty --drivers file: no drivers", []string{"check", "-f", exampleValues, "--drivers", empty}, ExitOK, ""},
		{"render's output without drivers: no drivers", []string{"route", "--drivers", writeTemp(t, "cp.yaml", "apiVersion: rebellions.ai/v1alpha1\nkind: RBLNClusterPolicy\nmetadata: {name: rbln-cluster-policy}\n"), "--nodes", exampleNodes}, ExitOK, ""},
		{"--cluster-policy with drivers", []string{"check", "-f", exampleValues, "--cluster-policy", writeTemp(t, "drivers.yaml", "apiVersion: rebellions.ai/v1alpha1\nkind: RBLNDriver\nmetadata: {name: rbln-driver}\n")}, ExitUsage,
			"holds 1 RBLNDriver and no RBLNClusterPolicy: give it 'kubectl get rblnclusterpolicies -o yaml' output"},
		{"an empty List of cluster policies: none", []string{"check", "-f", exampleValues, "--cluster-policy", emptyList}, ExitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.args...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.want)
		})
	}
}

// TestMessagesAreCapped: every message caps quoted values and lists of problems.
func TestMessagesAreCapped(t *testing.T) {
	list := writeTemp(t, "list.yaml", "driver:\n  image:\n    tag: ["+strings.Repeat(`"abcdefghij",`, 100_000)+"x]\n")
	tag := writeTemp(t, "tag.yaml", "driver:\n  image:\n    tag: 3.10\n  instances:\n    a:\n      image: {tag: null}\n      nodeSelector: {x: y}\n")
	var many strings.Builder
	many.WriteString("driver:\n  annotations:\n")
	for i := range 60 { // under the 64 annotations an RBLNDriver may carry
		fmt.Fprintf(&many, "    k%d: %d\n", i, i)
	}
	manyFile := writeTemp(t, "many.yaml", many.String())
	tests := []struct {
		name     string
		args     []string
		want     []string
		maxLines int
		maxBytes int
	}{
		{"65,537 list items from one --set", []string{"render", "--set", "driver.tolerations[65536]=x"},
			[]string{"driver.tolerations: Too many: 65537: must have at most 256 tolerations"}, 3, 300},
		{"200 list items from one --set", []string{"render", "--set", "driver.tolerations[199]=x"},
			[]string{"driver.tolerations[0]: Invalid value", "  ... and 150 more (200 problems in all)"}, 60, 6000},
		{"a 1 MB list where a string belongs", []string{"render", "-f", list}, []string{`driver.image.tag: Invalid value: "<list>": must be a string`}, 3, 300},
		{"60 annotations that are numbers, with hints", []string{"check", "-f", manyFile},
			[]string{"YAML reads the unquoted 0 at " + manyFile + ":3:9 as the number 0: quote it: \"0\"", "... and 10 more (60 problems in all)"}, 60, 20000},
		{"hints quote the source; every value error at once", []string{"render", "-f", tag},
			[]string{`driver.image.tag: Invalid value: 3.1: must be a string; YAML reads the unquoted 3.10 at ` + tag + `:3:10 as the number 3.1: quote it: "3.10"`,
				`driver.instances.a.image.tag: Required value: spec.version would be empty`,
				`driver.instances.a.nodeSelector[x]: Invalid value: true: label values are strings: YAML reads the unquoted y at ` + tag + `:7:25 as the boolean true: quote it: "y"`}, 5, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.args...)
			assert.Equal(t, ExitInvalid, r.code, r.stderr)
			for _, w := range tt.want {
				assert.Contains(t, r.stderr, w)
			}
			assert.LessOrEqual(t, strings.Count(r.stderr, "\n"), tt.maxLines)
			assert.LessOrEqual(t, len(r.stderr), tt.maxBytes)
		})
	}
}

// TestInterruptedRun: a run whose context a signal cancelled ends with 128 + the signal,
// even while it waits for input that never comes.
func TestInterruptedRun(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			stdin, w := io.Pipe() // nobody writes: a stalled standard input
			defer w.Close()
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(100*time.Millisecond, func() { cancel(Interrupted{Signal: tt.sig}) })
			var out, errOut bytes.Buffer
			start := time.Now()
			code := Run(ctx, Streams{In: stdin, Out: &out, Err: &errOut}, []string{"check", "-f", exampleValues, "--nodes", "-"})
			assert.Equal(t, tt.code, code, errOut.String())
			assert.Less(t, time.Since(start), 2*time.Second)
			assert.Equal(t, "Error: "+Interrupted{Signal: tt.sig}.Error()+"\n", errOut.String())
			assert.Empty(t, out.String())
		})
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("not a signal"))
	r := Run(ctx, Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, []string{"render", "-f", exampleValues})
	assert.Equal(t, ExitUsage, r, "a context cancelled otherwise is no signal")
}

// TestServeStopsOnItsOwnTerms: SIGTERM is serve's normal stop; main waits for its graceful
// shutdown (delay and timeout) instead of a second, and its exit code is its own.
func TestServeStopsOnItsOwnTerms(t *testing.T) {
	t.Cleanup(func() { stopGrace.Store(0) })
	assert.Equal(t, defaultStopGrace, StopGrace())
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(Interrupted{Signal: syscall.SIGTERM})
	var errOut bytes.Buffer
	code := Run(ctx, Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errOut},
		[]string{"serve", "--log-level", "bogus", "--shutdown-delay", "2s", "--shutdown-timeout", "3s"})
	assert.Equal(t, ExitUsage, code, "serve's own exit code, not the signal's: %s", errOut.String())
	assert.Equal(t, 10*time.Second, StopGrace(), "the shutdown delay and timeout, and 5 s more")
}

package policy_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// perf3 are the three checks of webhook's BenchmarkServeHTTP (the OPA-server anchor of the
// perf harness).
const perf3 = `package driverguard.perf

deny contains msg if {
	input.object.spec.version in {"latest", "stable", "main"}
	msg := "spec.version is a moving tag"
}

deny contains msg if {
	not startswith(input.object.spec.registry, "repo.rebellions.ai")
	msg := "registry not allowed"
}

deny contains msg if {
	some k, _ in input.object.spec.nodeSelector
	startswith(k, "rebellions.ai/npu.driver.")
	msg := "reserved selector key"
}
`

// serveState is webhook's benchState: n nodes and d drivers, the default driver, one per family
// and instances selecting a family and a pool label.
func serveState(n, d int) *webhook.StaticState {
	families := []string{"atom", "rebel", "atom-max"}
	drivers := []v1alpha1.RBLNDriver{*wt.Driver("rbln-driver", nil)}
	for _, f := range families {
		drivers = append(drivers, *wt.Driver("rbln-driver-"+f, wt.Sel(v1alpha1.LabelFamily, f)))
	}
	for i := len(drivers); i < d; i++ {
		drivers = append(drivers, *wt.Driver(fmt.Sprintf("rbln-driver-p%04d", i), wt.Sel(v1alpha1.LabelFamily, families[i%3], "pool", fmt.Sprintf("p%d", i))))
	}
	nodes := make([]routing.Node, n)
	for i := range nodes {
		l := wt.PoolLabels(families[i%3], "ubuntu", "22.04", "6.8.0-90-generic")
		l[v1alpha1.LabelDeployDriver] = "true"
		l["pool"] = fmt.Sprintf("p%d", i%max(d, 1))
		l["kubernetes.io/hostname"] = fmt.Sprintf("node-%05d", i)
		l["topology.kubernetes.io/zone"] = fmt.Sprintf("zone-%d", i%4)
		nodes[i] = routing.Node{Name: fmt.Sprintf("node-%05d", i), Labels: l}
	}
	return webhook.NewStaticState(drivers, nodes, nil)
}

// BenchmarkServeHTTP is webhook's BenchmarkServeHTTP at 10,000 nodes and 500 drivers (one
// RBLNDriver CREATE AdmissionReview through the webhook's HTTP handler: decoding, the decision
// with policies, the response), run three ways in one run: as built (custom), with OPA's own
// JSON conversion instead of parseJSONValue (opa-json), and without the node-name term cache
// (no-node-cache). update-rebel is an informational request whose input lists thousands of
// node names: a version bump of rbln-driver-rebel, which owns ~2,200 nodes.
func BenchmarkServeHTTP(b *testing.B) {
	dir := b.TempDir()
	writeFile(b, dir, "perf.rego", perf3)
	create := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create,
		wt.Driver("rbln-driver-bench", wt.Sel(v1alpha1.LabelFamily, "rebel", "pool", "p7", "topology.kubernetes.io/zone", "zone-3")), nil)))
	old := wt.Driver("rbln-driver-rebel", wt.Sel(v1alpha1.LabelFamily, "rebel"))
	bumped := old.DeepCopy()
	bumped.Spec.Version = "3.2.3"
	update := wt.MustJSON(wt.Review(wt.Request(admissionv1.Update, bumped, old)))
	variants := []struct {
		name               string
		opaJSON, nodeCache bool
	}{
		{"custom", false, true},
		{"opa-json", true, true},
		{"no-node-cache", false, false},
	}
	for _, set := range []struct {
		name string
		opts policy.Options
		body []byte
	}{
		{"3-checks", policy.Options{Dirs: []string{dir}, ExcludeLibrary: true}, create},
		{"library", policy.Options{}, create},
		{"library/update-rebel", policy.Options{}, update},
	} {
		set.opts.Metrics = prometheus.NewRegistry()
		engine, err := policy.New(context.Background(), set.opts)
		if err != nil {
			b.Fatal(err)
		}
		state := serveState(10_000, 500)
		h := webhook.New(state, webhook.Options{Policy: engine}).Handlers()[webhook.PathValidateDriver]
		if _, err := state.Snapshot(context.Background()); err != nil {
			b.Fatal(err)
		}
		serve := func(b *testing.B) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, webhook.PathValidateDriver, bytes.NewReader(set.body))
			req.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
		prefix := "nodes=10000/drivers=500/" + set.name
		for _, v := range variants {
			b.Run(prefix+"/"+v.name, func(b *testing.B) {
				defer policy.SetConversion(v.opaJSON, v.nodeCache)()
				b.ReportAllocs()
				for b.Loop() {
					serve(b)
				}
			})
		}
		// The variants one request each in turn, each timed: on a shared machine, load that
		// comes and goes falls on all of them alike. <variant>-p50-ns is the median request.
		b.Run(prefix+"/interleaved", func(b *testing.B) {
			defer policy.SetConversion(false, true)()
			spent := make([][]time.Duration, len(variants))
			for b.Loop() {
				for i, v := range variants {
					policy.SetConversion(v.opaJSON, v.nodeCache)
					start := time.Now()
					serve(b)
					spent[i] = append(spent[i], time.Since(start))
				}
			}
			for i, v := range variants {
				slices.Sort(spent[i])
				b.ReportMetric(float64(spent[i][len(spent[i])/2].Nanoseconds()), v.name+"-p50-ns")
			}
		})
	}
}

package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// benchState is a cluster of n nodes and d drivers: the default driver, and instances selecting
// a family and a pool label (a strict superset of the family-only drivers).
func benchState(n, d int) webhook.State {
	families := []string{"atom", "rebel", "atom-max"}
	drivers := []v1alpha1.RBLNDriver{*wt.Driver("rbln-driver", nil)}
	for _, f := range families {
		drivers = append(drivers, *wt.Driver("rbln-driver-"+f, wt.Sel(operator.LabelFamily, f)))
	}
	for i := len(drivers); i < d; i++ {
		drivers = append(drivers, *wt.Driver(fmt.Sprintf("rbln-driver-p%04d", i), wt.Sel(operator.LabelFamily, families[i%3], "pool", fmt.Sprintf("p%d", i))))
	}
	nodes := make([]routing.Node, n)
	for i := range nodes {
		l := wt.PoolLabels(families[i%3], "ubuntu", "22.04", "6.8.0-90-generic")
		l[operator.LabelDeployDriver] = "true"
		l["pool"] = fmt.Sprintf("p%d", i%max(d, 1))
		l["kubernetes.io/hostname"] = fmt.Sprintf("node-%05d", i)
		l["topology.kubernetes.io/zone"] = fmt.Sprintf("zone-%d", i%4)
		nodes[i] = routing.Node{Name: fmt.Sprintf("node-%05d", i), Labels: l}
	}
	return cluster.NewStatic(cluster.FromLists(nodes, drivers, nil, nil))
}

// latencies records one duration per iteration and reports p50 and p99.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	at := func(q float64) float64 { return float64(l[int(q*float64(len(l)-1))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

// BenchmarkAdmission measures one RBLNDriver CREATE (syntax, conflicts against every node and
// driver) and one driver DaemonSet mutation: in-process (the typed decision; and the admission
// handler with decoding and response mapping) next to the full HTTP path (an AdmissionReview
// over TLS 1.3 on loopback to controller-runtime's webhook server, response decoded), one
// request at a time on a kept-alive connection. p50-ns and p99-ns are per request.
func BenchmarkAdmission(b *testing.B) {
	for _, size := range []struct{ nodes, drivers int }{{100, 10}, {10_000, 500}, {100_000, 1000}} {
		state := benchState(size.nodes, size.drivers)
		hooks := webhook.New(state, webhook.Options{})
		if _, err := state.Snapshot(context.Background()); err != nil {
			b.Fatal(err)
		}
		drv := wt.Driver("rbln-driver-bench", wt.Sel(operator.LabelFamily, "atom", "pool", "p3", "env", "canary"))
		ds := wt.DaemonSet("npu", "rbln-driver-atom-pool", "rbln-driver-atom", "driver", wt.PoolLabels("atom", "ubuntu", "22.04", "6.8.0-90-generic"))
		reqs := map[string]admission.Request{
			"driver":    wt.Request(admissionv1.Create, drv, nil),
			"daemonset": wt.Request(admissionv1.Create, ds, nil),
		}
		paths := map[string]string{"driver": webhook.PathValidateDriver, "daemonset": webhook.PathMutateDaemonSet}
		srv := startServer(b, hooks)
		for _, kind := range []string{"driver", "daemonset"} {
			req := reqs[kind]
			prefix := fmt.Sprintf("nodes=%d/drivers=%d/%s", size.nodes, size.drivers, kind)
			if kind == "driver" {
				b.Run(prefix+"/decision", func(b *testing.B) {
					var lat latencies
					ctx := context.Background()
					decider := &decision.Decider{}
					req := decision.Request[*v1alpha1.RBLNDriver]{Operation: policy.OperationCreate, Object: drv, Source: policy.SourceAdmission}
					for b.Loop() {
						start := time.Now()
						snap, err := state.Snapshot(ctx)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := decider.Driver(ctx, snap.Index(), req); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(start))
					}
					lat.report(b)
				})
			}
			b.Run(prefix+"/in-process", func(b *testing.B) {
				h := hooks.Webhook(paths[kind])
				var lat latencies
				ctx := context.Background()
				for b.Loop() {
					start := time.Now()
					if resp := h.Handle(ctx, req); !resp.Allowed {
						b.Fatalf("denied: %v", resp.Result)
					}
					lat = append(lat, time.Since(start))
				}
				lat.report(b)
			})
			b.Run(prefix+"/https", func(b *testing.B) {
				body := wt.MustJSON(wt.Review(req))
				url := srv.url + paths[kind]
				var lat latencies
				for b.Loop() {
					start := time.Now()
					resp, err := srv.client.Post(url, "application/json", bytes.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					var review admissionv1.AdmissionReview
					err = json.NewDecoder(resp.Body).Decode(&review)
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil || review.Response == nil || !review.Response.Allowed {
						b.Fatalf("response %+v, %v", review.Response, err)
					}
					lat = append(lat, time.Since(start))
				}
				lat.report(b)
			})
		}
	}
}

type benchServer struct {
	url    string
	client *http.Client
}

// startServer serves hooks with the webhook server `serve` runs (TLS 1.3, HTTP/1.1, a freshly
// generated certificate, the default connection limits).
func startServer(b testing.TB, hooks *webhook.Webhooks) *benchServer {
	b.Helper()
	return startServerWith(b, hooks, webhook.Limits{})
}

// startServerWith is startServer with the server's connection limits and timeouts.
func startServerWith(b testing.TB, hooks *webhook.Webhooks, limits webhook.Limits) *benchServer {
	b.Helper()
	dir := b.TempDir()
	caPEM := writeCert(b, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := webhook.NewServer(ctrlwebhook.Options{
		Host: "127.0.0.1", Port: port, CertDir: dir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS13; c.NextProtos = []string{"http/1.1"} }},
	}, limits, logr.Discard())
	hooks.Register(srv)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	started := make(chan error, 1)
	go func() { started <- srv.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for srv.StartedChecker()(nil) != nil {
		select {
		case err := <-started:
			b.Fatalf("the webhook server stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			b.Fatal("the webhook server did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &benchServer{
		url:    "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		client: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}, MaxIdleConnsPerHost: 1}},
	}
}

// writeCert writes a serving certificate for 127.0.0.1 into dir (tls.crt, tls.key) and
// returns its CA.
func writeCert(b testing.TB, dir string) []byte {
	b.Helper()
	ca := wt.NewCA(b, "driverguard-bench")
	wt.WriteKeyPair(b, dir, ca.Issue(b, "driverguard-bench", x509.ExtKeyUsageServerAuth, "127.0.0.1"))
	return ca.PEM
}

// BenchmarkNewSnapshot is the cost of one rebuild of the cluster view (what cluster.Informed pays
// after a change, never per request).
func BenchmarkNewSnapshot(b *testing.B) {
	state := benchState(10_000, 500)
	snap, err := state.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	drivers, nodes := snap.Drivers(), snap.Nodes()
	b.ReportAllocs()
	for b.Loop() {
		_ = cluster.NewSnapshot(slices.Clone(drivers), slices.Clone(nodes), nil)
	}
}

// BenchmarkAdmissionWithPolicies is BenchmarkAdmission's RBLNDriver CREATE with the bundled
// policy library evaluated (what `serve` runs by default): in-process and over HTTPS.
func BenchmarkAdmissionWithPolicies(b *testing.B) {
	engine, err := policy.New(context.Background(), policy.Options{Metrics: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct{ nodes, drivers int }{{100, 10}, {10_000, 500}, {100_000, 1000}} {
		hooks := webhook.New(benchState(size.nodes, size.drivers), webhook.Options{Policy: engine})
		drv := wt.Driver("rbln-driver-bench", wt.Sel(operator.LabelFamily, "atom", "pool", "p3", "env", "canary"))
		req := wt.Request(admissionv1.Create, drv, nil)
		srv := startServer(b, hooks)
		prefix := fmt.Sprintf("nodes=%d/drivers=%d/driver+policies", size.nodes, size.drivers)
		b.Run(prefix+"/in-process", func(b *testing.B) {
			h := hooks.Webhook(webhook.PathValidateDriver)
			var lat latencies
			for b.Loop() {
				start := time.Now()
				if resp := h.Handle(context.Background(), req); resp.Result != nil && resp.Result.Code >= 500 {
					b.Fatalf("%v", resp.Result)
				}
				lat = append(lat, time.Since(start))
			}
			lat.report(b)
		})
		b.Run(prefix+"/https", func(b *testing.B) {
			body := wt.MustJSON(wt.Review(req))
			var lat latencies
			for b.Loop() {
				start := time.Now()
				resp, err := srv.client.Post(srv.url+webhook.PathValidateDriver, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(start))
			}
			lat.report(b)
		})
	}
}

// perf3 are the three checks of hack/perf (policy3/perf.rego; opa3 is the OPA-server anchor of
// the perf harness) on driverguard's input.
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

// BenchmarkServeHTTP is one RBLNDriver CREATE AdmissionReview through the webhook's HTTP
// handler (body decoding, the decision with policies, the response), the work the served
// webhook does per request minus TLS: the three checks alone and the bundled library, on a
// small and a large cluster. Its cost must not grow with the cluster (docs/webhook.md "Cost").
func BenchmarkServeHTTP(b *testing.B) {
	benchServeHTTP(b, benchState, wt.Driver("rbln-driver-bench", wt.Sel(operator.LabelFamily, "rebel", "pool", "p7", "topology.kubernetes.io/zone", "zone-3")))
}

// benchServeHTTP runs drv's CREATE through the handler with the three checks and with the
// library, on the clusters cluster builds with 100 nodes × 10 drivers and 10,000 × 500.
func benchServeHTTP(b *testing.B, cluster func(nodes, drivers int) webhook.State, drv *v1alpha1.RBLNDriver) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "perf.rego"), []byte(perf3), 0o600); err != nil {
		b.Fatal(err)
	}
	sets := []struct {
		name string
		opts policy.Options
	}{
		{"3-checks", policy.Options{Dirs: []string{dir}, ExcludeLibrary: true}},
		{"library", policy.Options{}},
	}
	body := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, drv, nil)))
	for _, size := range []struct{ nodes, drivers int }{{100, 10}, {10_000, 500}, {100_000, 1000}} {
		state := cluster(size.nodes, size.drivers)
		if _, err := state.Snapshot(context.Background()); err != nil {
			b.Fatal(err)
		}
		for _, set := range sets {
			set.opts.Metrics = prometheus.NewRegistry()
			engine, err := policy.New(context.Background(), set.opts)
			if err != nil {
				b.Fatal(err)
			}
			h := webhook.New(state, webhook.Options{Policy: engine}).Handlers()[webhook.PathValidateDriver]
			b.Run(fmt.Sprintf("nodes=%d/drivers=%d/%s", size.nodes, size.drivers, set.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					req := httptest.NewRequest(http.MethodPost, webhook.PathValidateDriver, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
				}
			})
		}
	}
}

// rackState is the cluster of the side-by-side harness (hack/perf): n nodes alternating
// ATOM and REBEL over 50 racks, two OS versions and five kernels, and d drivers: the default
// one and one per ATOM rack slot.
func rackState(n, d int) webhook.State {
	kernels := []string{"6.8.0-90-generic", "6.8.0-94-generic", "6.8.0-45-generic", "5.15.0-130-generic", "6.8.0-101-generic"}
	nodes := make([]routing.Node, n)
	for i := range nodes {
		l := wt.PoolLabels([]string{"atom", "rebel"}[i%2], "ubuntu", []string{"22.04", "24.04"}[(i/2)%2], kernels[i%len(kernels)])
		l[operator.LabelDeployDriver] = "true"
		l["rack"] = fmt.Sprintf("r%d", i%50)
		l["topology.kubernetes.io/zone"] = fmt.Sprintf("zone-%d", i%3)
		l["kubernetes.io/hostname"] = fmt.Sprintf("npu-%05d", i)
		nodes[i] = routing.Node{Name: fmt.Sprintf("npu-%05d", i), Labels: l}
	}
	drivers := []v1alpha1.RBLNDriver{*wt.Driver("rbln-driver", nil)}
	for i := 1; i < d; i++ {
		drivers = append(drivers, *wt.Driver(fmt.Sprintf("rbln-driver-d%04d", i), wt.Sel(operator.LabelFamily, "atom", "rack", fmt.Sprintf("r%d", i%50), "slot", fmt.Sprintf("s%d", i))))
	}
	return cluster.NewStatic(cluster.FromLists(nodes, drivers, nil, nil))
}

// BenchmarkServeHTTPRack is BenchmarkServeHTTP with the side-by-side harness's cluster and
// request: a REBEL rack, whose nodes (2 of 100, 200 of 10,000) span ten pools. The request's
// matched nodes grow with the cluster; its cost should not (the issue #35 goal: 10,000 / 100
// nodes ≥ 0.95 in throughput).
func BenchmarkServeHTTPRack(b *testing.B) {
	benchServeHTTP(b, rackState, wt.Driver("rbln-driver-perf", wt.Sel(operator.LabelFamily, "rebel", "rack", "r7")))
}

//go:build !race

// Package load holds the sustained-load test of the served webhook: admission requests through
// a real kube-apiserver at a steady rate while the serving certificate rotates, the policies
// reload and the API server restarts. It is built without -race (make test runs it on its own):
// the race detector slows the webhook several times over, and the rate is the point.
package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/test/controlplane"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

const (
	rate    = 250 // requests per second, over 8 connections
	workers = 8
	nodes   = 100
)

const teamPolicy = `package driverguard.load

warn contains "load policy %s" if input.object.metadata.annotations.load == "yes"
`

// generator sends dry-run admission requests through the API server at a steady rate: RBLNDriver
// CREATEs, and every tenth an UPDATE of rbln-driver-atom with a new version.
type generator struct {
	c        client.Client
	warnings *controlplane.Warnings
	ok, fail atomic.Int64
	mu       sync.Mutex
	errs     []string
	seq      atomic.Int64
}

func (g *generator) one(ctx context.Context) {
	n := g.seq.Add(1)
	var err error
	if n%10 == 0 {
		var d v1alpha1.RBLNDriver
		if err = g.c.Get(ctx, client.ObjectKey{Name: "rbln-driver-atom"}, &d); err == nil {
			d.Spec.Version = fmt.Sprintf("3.%d.0", n%7)
			err = g.c.Update(ctx, &d, client.DryRunAll)
		}
	} else {
		d := wt.Driver(fmt.Sprintf("rbln-driver-load-%d", n), wt.Sel(operator.LabelFamily, "rebel", "rack", fmt.Sprintf("r%d", n%10)))
		d.Annotations = map[string]string{"load": "yes"}
		err = g.c.Create(ctx, d, client.DryRunAll)
	}
	if err != nil {
		g.fail.Add(1)
		g.mu.Lock()
		if len(g.errs) < 10 {
			g.errs = append(g.errs, err.Error())
		}
		g.mu.Unlock()
		return
	}
	g.ok.Add(1)
}

// run sends requests at rate until ctx ends and returns the achieved rate of answered ones.
func (g *generator) run(ctx context.Context) float64 {
	start := time.Now()
	okBefore := g.ok.Load()
	slots := make(chan struct{}, workers)
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	var wg sync.WaitGroup
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			select {
			case slots <- struct{}{}:
				wg.Go(func() {
					defer func() { <-slots }()
					rctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
					defer cancel()
					g.one(rctx)
				})
			default: // all connections busy: the rate is not reached, which the result shows
			}
		}
	}
	wg.Wait()
	return float64(g.ok.Load()-okBefore) / time.Since(start).Seconds()
}

func (g *generator) failures() (int64, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fail.Load(), slices.Clone(g.errs)
}

// TestSustainedLoad: ≥ 200 admission requests/s through the API server for 25 s, during which
// the serving certificate is replaced by one of a new CA and the policies are reloaded, with
// zero failed requests; then the API server restarts, a node is relabelled before the webhook's
// informers are back, and the webhook's next decisions see the new label.
func TestSustainedLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("sustained load takes a minute")
	}
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	policyDir := t.TempDir()
	writePolicy(t, policyDir, "v1")
	engine, err := policy.New(ctx, policy.Options{Dirs: []string{policyDir}, PollInterval: 200 * time.Millisecond, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = engine.Start(ctx) }()
	plane, err := controlplane.Start(controlplane.Options{Server: serve.Options{Options: webhook.Options{Policy: engine}}, Restartable: true})
	if errors.Is(err, controlplane.ErrNoAssets) {
		t.Fatalf("%v (make test builds them)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plane.Stop() }()

	cfg := rest.CopyConfig(plane.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	warnings := &controlplane.Warnings{}
	cfg.WarningHandler = warnings
	c, err := client.New(cfg, client.Options{Scheme: plane.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		fam := []string{"atom", "rebel"}[i%2]
		l := wt.PoolLabels(fam, "ubuntu", "22.04", "6.8.0-90-generic")
		l[operator.LabelDeployDriver] = "true"
		l["rack"] = fmt.Sprintf("r%d", i%10)
		create(t, c, wt.Node(fmt.Sprintf("load-%03d", i), l))
	}
	create(t, c, wt.Driver("rbln-driver", nil))
	create(t, c, wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom")))
	waitView(t, plane, func(s *cluster.Snapshot) bool { return len(s.Nodes()) == nodes && len(s.Drivers()) == 2 })

	// Phase A: 25 s of load; the certificate rotates at 5 s, the policies reload at 12 s.
	g := &generator{c: c, warnings: warnings}
	loadCtx, stopLoad := context.WithTimeout(ctx, 25*time.Second)
	defer stopLoad()
	achieved := make(chan float64, 1)
	go func() { achieved <- g.run(loadCtx) }()

	time.Sleep(5 * time.Second)
	rotateCertificate(t, c, plane)
	t.Logf("certificate rotated at %d requests", g.ok.Load())

	time.Sleep(7 * time.Second)
	gen := engine.Status().Generation
	writePolicy(t, policyDir, "v2")
	deadline := time.Now().Add(10 * time.Second)
	for engine.Status().Generation == gen && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if engine.Status().Generation == gen {
		t.Fatal("the policy reload did not happen")
	}
	t.Logf("policies reloaded at %d requests", g.ok.Load())

	rps := <-achieved
	failed, errs := g.failures()
	t.Logf("phase A: %d requests answered in 25 s (%.0f req/s, target %d), %d failed", g.ok.Load(), rps, rate, failed)
	if failed > 0 {
		t.Errorf("%d requests failed during certificate rotation and policy reload; first: %s", failed, strings.Join(errs, "\n"))
	}
	if !slices.ContainsFunc(warnings.Take(), func(w string) bool { return strings.Contains(w, "load policy v2") }) {
		t.Error("no response carried the reloaded policy's warning")
	}

	// Phase B: the API server restarts; a node is relabelled as soon as it answers again, while
	// the webhook's informers may still be reconnecting. A driver that ties with
	// rbln-driver-atom only on that node is then denied: the webhook has seen the relabel.
	tie := wt.Driver("rbln-driver-restart", wt.Sel("zone", "after-restart"))
	if err := c.Create(ctx, tie.DeepCopy(), client.DryRunAll); err != nil {
		t.Fatalf("before the relabel the driver must be allowed: %v", err)
	}
	down := time.Now()
	if err := plane.RestartAPIServer(func() { time.Sleep(2 * time.Second) }); err != nil {
		t.Fatal(err)
	}
	relabelled := relabel(t, c, "load-000", "zone", "after-restart")
	t.Logf("API server back after %s; node relabelled at %s", relabelled.Sub(down).Round(time.Millisecond), relabelled.Format(time.TimeOnly))
	var seen time.Time
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		err := c.Create(ctx, tie.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "load-000") {
			seen = time.Now()
			break
		}
	}
	if seen.IsZero() {
		t.Fatal("after the API server restart the webhook never saw the relabelled node")
	}
	t.Logf("the webhook decided with the relabelled node %s after the relabel", seen.Sub(relabelled).Round(time.Millisecond))

	g2 := &generator{c: c, warnings: warnings}
	after, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	rps = g2.run(after)
	failed, errs = g2.failures()
	t.Logf("after the restart: %.0f req/s, %d failed", rps, failed)
	if failed > 0 {
		t.Errorf("%d requests failed after the API server was back; first: %s", failed, strings.Join(errs, "\n"))
	}
}

func writePolicy(t *testing.T, dir, version string) {
	t.Helper()
	tmp := filepath.Join(dir, ".load.rego.tmp")
	if err := os.WriteFile(tmp, fmt.Appendf(nil, teamPolicy, version), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "load.rego")); err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

func waitView(t *testing.T, plane *controlplane.Plane, cond func(*cluster.Snapshot) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := plane.State.WaitFor(ctx, cond); err != nil {
		t.Fatalf("the webhook's view: %v", err)
	}
}

// relabel sets a label on a node, retrying until the API server answers, and returns when.
func relabel(t *testing.T, c client.Client, name, key, value string) time.Time {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var n corev1.Node
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
			continue
		}
		n.Labels[key] = value
		if err := c.Update(context.Background(), &n); err == nil {
			return time.Now()
		}
	}
	t.Fatal("the API server did not come back")
	return time.Time{}
}

// rotateCertificate replaces the webhook's serving certificate by one of a new CA, the way a
// rotation does it without a failed request: the new CA joins the webhook configurations'
// caBundle first, then the certificate files change (the server reloads them), and the
// server is checked to present the new certificate.
func rotateCertificate(t *testing.T, c client.Client, plane *controlplane.Plane) {
	t.Helper()
	ctx := context.Background()
	ca := wt.NewCA(t, "rotated-ca")
	caPEM := ca.PEM

	var vs admissionregistrationv1.ValidatingWebhookConfigurationList
	var ms admissionregistrationv1.MutatingWebhookConfigurationList
	if err := c.List(ctx, &vs); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &ms); err != nil {
		t.Fatal(err)
	}
	for i := range vs.Items {
		for j := range vs.Items[i].Webhooks {
			w := &vs.Items[i].Webhooks[j]
			w.ClientConfig.CABundle = append(append([]byte{}, w.ClientConfig.CABundle...), caPEM...)
		}
		if err := c.Update(ctx, &vs.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ms.Items {
		for j := range ms.Items[i].Webhooks {
			w := &ms.Items[i].Webhooks[j]
			w.ClientConfig.CABundle = append(append([]byte{}, w.ClientConfig.CABundle...), caPEM...)
		}
		if err := c.Update(ctx, &ms.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // the API server's webhook configuration informer

	wio := plane.Env.WebhookInstallOptions
	wt.WriteKeyPair(t, wio.LocalServingCertDir, ca.Issue(t, "webhook", x509.ExtKeyUsageServerAuth, "localhost", wio.LocalServingHost, "127.0.0.1"))
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	addr := net.JoinHostPort(wio.LocalServingHost, fmt.Sprint(wio.LocalServingPort))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: wio.LocalServingHost, MinVersion: tls.VersionTLS12})
		if err == nil {
			conn.Close()
			return
		}
	}
	t.Fatal("the webhook does not present the rotated certificate")
}

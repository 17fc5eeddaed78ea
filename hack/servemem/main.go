// Command servemem measures `driverguard serve`'s resident memory on a large cluster: it starts
// a real kube-apiserver and etcd (envtest, bin/), creates the nodes and RBLNDrivers, runs the
// driverguard binary's serve against them as its own process, and reads the process's VmRSS
// and VmHWM from /proc: once the cluster view is ready, and after a spell of RBLNDriver
// admission requests over TLS. hack/bench.sh runs it; it prints one line. With -audit, serve
// audits too (serve --audit, one replica) and, while the admission load runs, nodes are
// relabelled one at a time (the time until the driver's ClusterReport shows it, p50/p99), then
// 1,000 at once (how often any one report was written within a second).
//
//	go run ./hack/servemem -bin bin/driverguard -nodes 10000 -drivers 500 [-audit]
//
// With -large-kubeconfig it measures on clusters hack/perf/envup made instead (hack/bench-scale.sh,
// make bench-scale; see scale.go): serve as the chart runs it, paired admission rounds against
// the -small-kubeconfig cluster, and the audit CLI.
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

func main() {
	bin := flag.String("bin", "bin/driverguard", "the driverguard binary to measure")
	assets := flag.String("assets", "bin", "directory with kube-apiserver and etcd")
	crds := flag.String("crds", "config/crd/bases", "the CRDs")
	nodes := flag.Int("nodes", 10000, "nodes to create")
	drivers := flag.Int("drivers", 500, "RBLNDrivers to create")
	load := flag.Duration("load", 10*time.Second, "how long to send admission requests (8 connections)")
	memLimit := flag.String("memory-limit", "256Mi", "serve --memory-limit: the memory limit serve is given, as the chart's container limit gives it (empty: none)")
	withAudit := flag.Bool("audit", false, "serve --audit, and measure relabel-to-report latency and report writes under a burst")
	reportCRD := flag.String("report-crd", "charts/driverguard/crds/openreports.io_clusterreports.yaml", "openreports' ClusterReport CRD (-audit)")
	var sc scaleRun
	flag.StringVar(&sc.large, "large-kubeconfig", "", "measure on this existing cluster (hack/perf/envup's, with the ClusterReport CRD) instead of starting one: the scale benchmark (scale.go)")
	flag.StringVar(&sc.small, "small-kubeconfig", "", "with -large-kubeconfig: the small cluster admission is paired against")
	flag.StringVar(&sc.smallSize, "small-size", "100 nodes", "with -large-kubeconfig: how the small cluster is named in the output")
	flag.IntVar(&sc.rounds, "rounds", 3, "with -large-kubeconfig: paired admission rounds")
	flag.StringVar(&sc.body, "body", "hack/perf/driver-create.json", "with -large-kubeconfig: the AdmissionReview the paired rounds post (hack/perf's)")
	flag.Parse()
	if sc.large != "" {
		sc.bin, sc.memLimit, sc.nodes, sc.drivers, sc.load = *bin, *memLimit, *nodes, *drivers, *load
		if err := sc.run(); err != nil {
			fmt.Fprintln(os.Stderr, "servemem:", err)
			os.Exit(1)
		}
		return
	}
	var auditCRD string
	if *withAudit {
		auditCRD = *reportCRD
	}
	if err := run(*bin, *assets, *crds, auditCRD, *memLimit, *nodes, *drivers, *load); err != nil {
		fmt.Fprintln(os.Stderr, "servemem:", err)
		os.Exit(1)
	}
}

// run measures serve; a reportCRD turns the audit on.
func run(bin, assets, crds, reportCRD, memLimit string, nodes, drivers int, load time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := openreports.Install(scheme); err != nil {
		return err
	}
	crdPaths := []string{crds}
	if reportCRD != "" {
		crdPaths = append(crdPaths, reportCRD)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: crdPaths, ErrorIfCRDPathMissing: true, Scheme: scheme}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	start := time.Now()
	if err := populate(ctx, c, nodes, drivers); err != nil {
		return err
	}
	populated := time.Since(start)

	dir, err := os.MkdirTemp("", "servemem")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	user, err := env.AddUser(envtest.User{Name: "servemem", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return err
	}
	if err := selfSigned(dir); err != nil {
		return err
	}
	port, health, metrics := freePort(), freePort(), freePort()
	if port == 0 || health == 0 || metrics == 0 {
		return errors.New("no free port")
	}
	var serveLog bytes.Buffer
	args := []string{"serve", "--kubeconfig", kubeconfig, "--cert-dir", dir, "--host", "127.0.0.1",
		"--port", strconv.Itoa(port), "--health-addr", fmt.Sprintf("127.0.0.1:%d", health), "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", metrics), "--log-level", "error"}
	if reportCRD != "" {
		args = append(args, "--audit", "--leader-elect=false")
	}
	if memLimit != "" {
		args = append(args, "--memory-limit", memLimit)
	}
	serve := exec.CommandContext(ctx, bin, args...)
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	if err := serve.Start(); err != nil {
		return err
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	start = time.Now()
	if err := waitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", health)); err != nil {
		return fmt.Errorf("%w\n%s", err, serveLog.String())
	}
	ready := time.Since(start)
	if reportCRD != "" {
		// The first pass has written every report.
		if err := waitReport(ctx, c, "driverguard-cluster", time.Minute, func(*openreports.ClusterReport) bool { return true }); err != nil {
			return fmt.Errorf("the audit's first pass: %w\n%s", err, serveLog.String())
		}
	}
	time.Sleep(2 * time.Second) // the first rebuild settles
	idle, _, err := memory(serve.Process.Pid)
	if err != nil {
		return err
	}
	var (
		relabels []time.Duration
		auditErr error
		auditWG  sync.WaitGroup
	)
	if reportCRD != "" {
		// Relabel one node at a time while the admission load runs.
		auditWG.Go(func() { relabels, auditErr = relabelOneByOne(ctx, c, load) })
	}
	drv := wt.Driver("rbln-driver-servemem", wt.Sel(operator.LabelFamily, "rebel", "rack", "r7"))
	rps, err := sendLoad(ctx, fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.PathValidateDriver), wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, drv, nil))), load)
	auditWG.Wait()
	if err != nil {
		return err
	}
	if auditErr != nil {
		return fmt.Errorf("%w\n%s", auditErr, serveLog.String())
	}
	rss, hwm, err := memory(serve.Process.Pid)
	if err != nil {
		return err
	}
	audited := ""
	if reportCRD != "" {
		audited = " with the audit"
	}
	if memLimit != "" {
		audited += " (--memory-limit " + memLimit + ")"
	}
	fmt.Printf("serve%s with %d nodes, %d RBLNDrivers (created in %s): ready in %s; RSS %d MiB idle, %d MiB after %s of admission load (%.0f req/s), peak %d MiB\n",
		audited, nodes, drivers, populated.Round(time.Second), ready.Round(100*time.Millisecond), idle>>10, rss>>10, load, rps, hwm>>10)
	if reportCRD == "" {
		return nil
	}
	slices.Sort(relabels)
	fmt.Printf("audit: node relabel -> report updated, %d relabels under the load: p50 %s, p99 %s, max %s (goal p99 <= 2 s)\n", len(relabels),
		percentile(relabels, 50), percentile(relabels, 99), relabels[len(relabels)-1].Round(time.Millisecond))
	burst, err := relabelBurst(ctx, c, 1000)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, serveLog.String())
	}
	_, hwm, err = memory(serve.Process.Pid)
	if err != nil {
		return err
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", serve.Process.Pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "RssAnon") || strings.HasPrefix(line, "RssFile") {
				fmt.Fprintln(os.Stderr, line)
			}
		}
	}
	fmt.Printf("audit: 1,000 nodes relabelled at once: %d reports written %d times in %s; any one report at most %d time(s) within a second (goal 1); peak RSS %d MiB\n",
		burst.reports, burst.writes, burst.settled.Round(100*time.Millisecond), burst.maxPerSecond, hwm>>10)
	return nil
}

// slotDriver is the driver a relabelled node moves to: node 2j (family atom, rack r(2j%50))
// gets slot s<i> of driver i, whose rack is the node's; nodes 2j and 2j+500 share a driver.
func slotDriver(j int) int { return (2*j)%50 + 50*((j/25)%10) }

// relabel gives node 2j its driver's slot label and returns the driver's name.
func relabel(ctx context.Context, c client.Client, j int) (string, error) {
	i := slotDriver(j)
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{"slot":"s%d"}}}`, i)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("npu-%05d", 2*j)}}
	if err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", fmt.Errorf("relabelling node %s: %w", n.Name, err)
	}
	return fmt.Sprintf("rbln-driver-d%04d", i), nil
}

// relabelOneByOne moves nodes to drivers one at a time for d, each once the previous one
// shows in its driver's report (a StaleOwnerLabel finding: the node has no owner label yet),
// and returns how long each took to show.
func relabelOneByOne(ctx context.Context, c client.Client, d time.Duration) ([]time.Duration, error) {
	var out []time.Duration
	for j, stop := 0, time.Now().Add(d); time.Now().Before(stop) && j < 250; j++ {
		driver, err := relabel(ctx, c, j)
		if err != nil {
			return nil, err
		}
		node := fmt.Sprintf("npu-%05d", 2*j)
		start := time.Now()
		if err := waitReport(ctx, c, driver, time.Minute, func(cr *openreports.ClusterReport) bool {
			for _, r := range cr.Results {
				if r.Rule == "StaleOwnerLabel" && strings.Contains(r.Description, node) {
					return true
				}
			}
			return false
		}); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	if len(out) == 0 {
		return nil, errors.New("no relabel measured")
	}
	return out, nil
}

type burstResult struct {
	reports, writes, maxPerSecond int
	settled                       time.Duration
}

// relabelBurst moves n nodes (after those relabelOneByOne used) to their drivers at once, 32
// at a time, watching the ClusterReports until no write came for 3 s: how many reports were
// written, how often, and the most writes of one report within any second.
func relabelBurst(ctx context.Context, c client.WithWatch, n int) (burstResult, error) {
	w, err := c.Watch(ctx, &openreports.ClusterReportList{})
	if err != nil {
		return burstResult{}, err
	}
	defer w.Stop()
	writes := map[string][]time.Time{}
	var mu sync.Mutex
	last := time.Now()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			cr, ok := ev.Object.(*openreports.ClusterReport)
			if !ok {
				continue
			}
			mu.Lock()
			writes[cr.Name] = append(writes[cr.Name], time.Now())
			last = time.Now()
			mu.Unlock()
		}
	}()
	start := time.Now()
	work := make(chan int)
	var (
		wg    sync.WaitGroup
		first atomic.Pointer[error]
	)
	for range 32 {
		wg.Go(func() {
			for j := range work {
				if _, err := relabel(ctx, c, j); err != nil {
					first.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	for j := 250; j < 250+n; j++ {
		work <- j
	}
	close(work)
	wg.Wait()
	if err := first.Load(); err != nil {
		return burstResult{}, *err
	}
	for {
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		quiet := time.Since(last) > 3*time.Second
		mu.Unlock()
		if quiet {
			break
		}
	}
	w.Stop()
	<-watched
	res := burstResult{reports: len(writes), settled: last.Sub(start)}
	for _, ts := range writes {
		res.writes += len(ts)
		for i := range ts {
			k := i
			for k < len(ts) && ts[k].Sub(ts[i]) < time.Second {
				k++
			}
			res.maxPerSecond = max(res.maxPerSecond, k-i)
		}
	}
	return res, nil
}

// waitReport polls the ClusterReport name until cond holds (for within at most).
func waitReport(ctx context.Context, c client.Client, name string, within time.Duration, cond func(*openreports.ClusterReport) bool) error {
	deadline := time.Now().Add(within)
	for {
		cr := &openreports.ClusterReport{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, cr)
		if err == nil && cond(cr) {
			return nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ClusterReport %s did not show the change within %s", name, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)].Round(time.Millisecond)
}

// populate creates the nodes (families atom and rebel, 50 racks, 3 zones) and the drivers (one
// per atom rack and slot), 32 at a time.
func populate(ctx context.Context, c client.Client, nodes, drivers int) error {
	objs := make([]client.Object, 0, nodes+drivers)
	for i := range nodes {
		fam := []string{"atom", "rebel"}[i%2]
		l := wt.PoolLabels(fam, "ubuntu", "22.04", "6.8.0-90-generic")
		l[operator.LabelDeployDriver] = "true"
		l["rack"] = fmt.Sprintf("r%d", i%50)
		l["topology.kubernetes.io/zone"] = fmt.Sprintf("zone-%d", i%3)
		l["kubernetes.io/hostname"] = fmt.Sprintf("npu-%05d", i)
		objs = append(objs, wt.Node(fmt.Sprintf("npu-%05d", i), l))
	}
	for i := range drivers {
		objs = append(objs, wt.Driver(fmt.Sprintf("rbln-driver-d%04d", i), wt.Sel(operator.LabelFamily, "atom", "rack", fmt.Sprintf("r%d", i%50), "slot", fmt.Sprintf("s%d", i))))
	}
	work := make(chan client.Object)
	var (
		wg    sync.WaitGroup
		first atomic.Pointer[error]
	)
	for range 32 {
		wg.Go(func() {
			for obj := range work {
				if err := c.Create(ctx, obj); err != nil {
					first.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	if err := first.Load(); err != nil {
		return fmt.Errorf("creating the cluster: %w", *err)
	}
	return nil
}

// sendLoad posts body (an AdmissionReview) over 8 kept-alive TLS connections for d and
// returns the rate of allowed answers.
func sendLoad(ctx context.Context, url string, body []byte, d time.Duration) (float64, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 8} //nolint:gosec // the self-signed test certificate
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var (
		ok   atomic.Int64
		bad  atomic.Pointer[string]
		wg   sync.WaitGroup
		stop = time.Now().Add(d)
	)
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(stop) && ctx.Err() == nil {
				resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					msg := err.Error()
					bad.CompareAndSwap(nil, &msg)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.Contains(b, []byte(`"allowed":true`)) {
					msg := string(b)
					bad.CompareAndSwap(nil, &msg)
					return
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if msg := bad.Load(); msg != nil {
		return 0, fmt.Errorf("admission request failed: %s", *msg)
	}
	return float64(ok.Load()) / d.Seconds(), nil
}

// memory reads a process's VmRSS and VmHWM in KiB.
func memory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm, nil
}

func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil { //nolint:noctx // a local probe with its own deadline loop
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New("serve did not become ready within 5 minutes")
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// selfSigned writes a one-day certificate for 127.0.0.1 as tls.crt and tls.key into dir.
func selfSigned(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "servemem"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

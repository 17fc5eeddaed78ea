// Command servemem measures `driverguard serve`'s resident memory on a large cluster: it starts
// a real kube-apiserver and etcd (envtest, bin/), creates the nodes and RBLNDrivers, runs the
// driverguard binary's serve against them as its own process, and reads the process's VmRSS
// and VmHWM from /proc: once the cluster view is ready, and after a spell of RBLNDriver
// admission requests over TLS. hack/bench.sh runs it; it prints one line.
//
//	go run ./hack/servemem -bin bin/driverguard -nodes 10000 -drivers 500
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/api/v1alpha1"
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
	flag.Parse()
	if err := run(*bin, *assets, *crds, *nodes, *drivers, *load); err != nil {
		fmt.Fprintln(os.Stderr, "servemem:", err)
		os.Exit(1)
	}
}

func run(bin, assets, crds string, nodes, drivers int, load time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: []string{crds}, ErrorIfCRDPathMissing: true, Scheme: scheme}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
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
	serve := exec.CommandContext(ctx, bin, "serve", "--kubeconfig", kubeconfig, "--cert-dir", dir, "--host", "127.0.0.1",
		"--port", strconv.Itoa(port), "--health-addr", fmt.Sprintf("127.0.0.1:%d", health), "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", metrics), "--log-level", "error")
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
	time.Sleep(2 * time.Second) // the first rebuild settles
	idle, _, err := memory(serve.Process.Pid)
	if err != nil {
		return err
	}
	rps, err := sendLoad(ctx, fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.PathValidateDriver), load)
	if err != nil {
		return err
	}
	rss, hwm, err := memory(serve.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("serve with %d nodes, %d RBLNDrivers (created in %s): ready in %s; RSS %d MiB idle, %d MiB after %s of admission load (%.0f req/s), peak %d MiB\n",
		nodes, drivers, populated.Round(time.Second), ready.Round(100*time.Millisecond), idle>>10, rss>>10, load, rps, hwm>>10)
	return nil
}

// populate creates the nodes (families atom and rebel, 50 racks, 3 zones) and the drivers (one
// per atom rack and slot), 32 at a time.
func populate(ctx context.Context, c client.Client, nodes, drivers int) error {
	objs := make([]client.Object, 0, nodes+drivers)
	for i := range nodes {
		fam := []string{"atom", "rebel"}[i%2]
		l := wt.PoolLabels(fam, "ubuntu", "22.04", "6.8.0-90-generic")
		l[v1alpha1.LabelDeployDriver] = "true"
		l["rack"] = fmt.Sprintf("r%d", i%50)
		l["topology.kubernetes.io/zone"] = fmt.Sprintf("zone-%d", i%3)
		l["kubernetes.io/hostname"] = fmt.Sprintf("npu-%05d", i)
		objs = append(objs, wt.Node(fmt.Sprintf("npu-%05d", i), l))
	}
	for i := range drivers {
		objs = append(objs, wt.Driver(fmt.Sprintf("rbln-driver-d%04d", i), wt.Sel(v1alpha1.LabelFamily, "atom", "rack", fmt.Sprintf("r%d", i%50), "slot", fmt.Sprintf("s%d", i))))
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

// sendLoad posts one RBLNDriver CREATE review over 8 kept-alive TLS connections for d and
// returns the rate of allowed answers.
func sendLoad(ctx context.Context, url string, d time.Duration) (float64, error) {
	drv := wt.Driver("rbln-driver-servemem", wt.Sel(v1alpha1.LabelFamily, "rebel", "rack", "r7"))
	body := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, drv, nil)))
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 8} //nolint:gosec // the self-signed test certificate
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

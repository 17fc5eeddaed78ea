package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// The suite starts one control plane (kube-apiserver + etcd from KUBEBUILDER_ASSETS or
// <repo>/bin) per `go test` run, installs the CRDs and the chart's own webhook configurations
// (rewritten by envtest to point at this process), and runs `driverguard serve`'s server
// (webhook.Run: informer caches, TLS, health, metrics) in-process. Every test talks to the API
// server; none calls a handler.

const (
	// chartRelease and chartNamespace are what the chart's webhook configurations are
	// rendered with (envtest replaces their service reference by a local URL).
	chartRelease   = "dg"
	chartNamespace = "driverguard-system"
	// driverNamespace holds the driver DaemonSets of the tests.
	driverNamespace = "rbln-system"
)

var suite struct {
	env        *envtest.Environment
	cfg        *rest.Config
	scheme     *runtime.Scheme
	root       string
	healthAddr string
	metricsURL string
	policy     *wt.Evaluator
	engine     *policy.Engine // the OPA engine: bundled library + policyDir, watched
	policyDir  string         // a policy directory the served webhook watches, like a mounted ConfigMap
	setupErr   error
	stop       func() // stops the webhook server and waits for it
}

func TestMain(m *testing.M) {
	flag.Parse()
	suite.setupErr = setup()
	code := m.Run()
	if suite.stop != nil {
		suite.stop()
	}
	if suite.env != nil {
		if err := suite.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	if suite.policyDir != "" {
		_ = os.RemoveAll(suite.policyDir)
	}
	os.Exit(code)
}

// requireEnv fails the test (or skips it with -short) when the control plane is not running.
func requireEnv(t *testing.T) {
	t.Helper()
	if suite.setupErr == nil {
		return
	}
	if testing.Short() && errors.Is(suite.setupErr, errNoAssets) {
		t.Skip(suite.setupErr)
	}
	t.Fatal(suite.setupErr)
}

var errNoAssets = errors.New("kube-apiserver and etcd not found")

func setup() error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	suite.root = root
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return fmt.Errorf("%w in %s: run make tools (hack/tools.sh builds them from Go modules)", errNoAssets, assets)
		}
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctrllog.SetLogger(log)

	validating, mutating, err := chartWebhookConfigurations()
	if err != nil {
		return err
	}
	suite.scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(suite.scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(suite.scheme); err != nil {
		return err
	}
	suite.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                suite.scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			ValidatingWebhooks: validating,
			MutatingWebhooks:   mutating,
		},
	}
	cfg, err := suite.env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	suite.cfg = cfg

	healthAddr, err := freeAddr()
	if err != nil {
		return err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	suite.healthAddr, suite.metricsURL = healthAddr, "http://"+metricsAddr+"/metrics"
	// The bundled policy library (as `serve` and `review` use it) plus a fake policy driven by
	// annotations (policy.test/deny, /warn, /error) for the policy-hook tests.
	suite.policy = wt.AnnotationPolicy()
	ctx, cancel := context.WithCancel(context.Background())
	if suite.policyDir, err = os.MkdirTemp("", "driverguard-e2e-policies-"); err != nil {
		cancel()
		return err
	}
	engine, err := policy.New(ctx, policy.Options{Metrics: prometheus.NewRegistry(), Dirs: []string{suite.policyDir}, PollInterval: 200 * time.Millisecond})
	if err != nil {
		cancel()
		return fmt.Errorf("loading the bundled policies: %w", err)
	}
	suite.engine = engine
	go func() { _ = engine.Start(ctx) }() // watches policyDir until ctx ends
	wio := &suite.env.WebhookInstallOptions
	ready := make(chan struct{})
	stopped := make(chan struct{})
	suite.stop = func() {
		cancel()
		<-stopped
	}
	var once sync.Once
	go func() {
		defer close(stopped)
		err := webhook.Run(ctx, cfg, webhook.ServerOptions{
			Options:      webhook.Options{Policy: wt.Combine(engine, suite.policy)},
			Host:         wio.LocalServingHost,
			Port:         wio.LocalServingPort,
			CertDir:      wio.LocalServingCertDir,
			HealthAddr:   healthAddr,
			MetricsAddr:  metricsAddr,
			RebuildDelay: 20 * time.Millisecond,
			Logger:       log,
			OnReady:      func() { once.Do(func() { close(ready) }) },
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "the webhook server stopped:", err)
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		return errors.New("the webhook server did not become ready within 60s")
	}
	c, err := client.New(cfg, client.Options{Scheme: suite.scheme})
	if err != nil {
		return err
	}
	for _, ns := range []string{chartNamespace, driverNamespace} {
		if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// chartWebhookConfigurations renders the chart's webhook configurations (Helm hooks) with the
// embedded chart, as `helm install` would.
func chartWebhookConfigurations() ([]*admissionregistrationv1.ValidatingWebhookConfiguration, []*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	ch, err := charts.Driverguard()
	if err != nil {
		return nil, nil, err
	}
	inst := action.NewInstall(&action.Configuration{})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = chartRelease, chartNamespace
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	rel, err := inst.Run(ch, map[string]any{})
	if err != nil {
		return nil, nil, fmt.Errorf("rendering the chart: %w", err)
	}
	var (
		val []*admissionregistrationv1.ValidatingWebhookConfiguration
		mut []*admissionregistrationv1.MutatingWebhookConfiguration
	)
	for _, h := range rel.Hooks {
		docs, err := splitYAML([]byte(h.Manifest))
		if err != nil {
			return nil, nil, err
		}
		for _, doc := range docs {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return nil, nil, err
			}
			switch meta.Kind {
			case "ValidatingWebhookConfiguration":
				var v admissionregistrationv1.ValidatingWebhookConfiguration
				if err := yaml.UnmarshalStrict(doc, &v); err != nil {
					return nil, nil, err
				}
				val = append(val, &v)
			case "MutatingWebhookConfiguration":
				var m admissionregistrationv1.MutatingWebhookConfiguration
				if err := yaml.UnmarshalStrict(doc, &m); err != nil {
					return nil, nil, err
				}
				mut = append(mut, &m)
			}
		}
	}
	if len(val) != 1 || len(mut) != 1 {
		return nil, nil, fmt.Errorf("the chart rendered %d validating and %d mutating webhook configurations, want 1 and 1", len(val), len(mut))
	}
	return val, mut, nil
}

func splitYAML(data []byte) ([][]byte, error) {
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// warnings collects the admission warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// take returns the warnings collected since the last call.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// newClient returns a client of the API server and the collector of its warnings.
func newClient(t *testing.T) (client.Client, *warnings) {
	t.Helper()
	requireEnv(t)
	w := &warnings{}
	cfg := rest.CopyConfig(suite.cfg)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: suite.scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// create creates obj and deletes it when the test ends.
func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { deleteAndWait(t, c, obj) })
}

// deleteAndWait deletes obj (if it exists) and waits until it is gone.
func deleteAndWait(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
		return
	}
	eventually(t, 10*time.Second, func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s still exists (%v)", obj.GetName(), err)
	})
}

// eventually polls fn until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resetCluster deletes every RBLNDriver, RBLNClusterPolicy, Node and driver DaemonSet and
// waits until the webhook's view is empty (its metrics report no nodes and no drivers).
func resetCluster(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{&v1alpha1.RBLNDriver{}, &v1alpha1.RBLNClusterPolicy{}, &corev1.Node{}} {
		if err := c.DeleteAllOf(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting every %T: %v", obj, err)
		}
	}
	if err := c.DeleteAllOf(ctx, &appsv1.DaemonSet{}, client.InNamespace(driverNamespace)); err != nil {
		t.Fatal(err)
	}
	waitForView(t, 0, 0)
}

// waitForView waits until the webhook's cluster view holds this many nodes and drivers.
func waitForView(t *testing.T, nodes, drivers int) {
	t.Helper()
	want := map[string]int{"nodes": nodes, "rblndrivers": drivers}
	eventually(t, 10*time.Second, func() error {
		got, err := stateObjects()
		if err != nil {
			return err
		}
		for k, v := range want {
			if got[k] != v {
				return fmt.Errorf("the webhook's view has %v, want %v", got, want)
			}
		}
		return nil
	})
}

// stateObjects reads driverguard_webhook_state_objects from the metrics endpoint.
func stateObjects() (map[string]int, error) {
	resp, err := http.Get(suite.metricsURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, `driverguard_webhook_state_objects{kind="`)
		if !ok {
			continue
		}
		kind, val, _ := strings.Cut(rest, `"} `)
		var n int
		if _, err := fmt.Sscan(val, &n); err != nil {
			return nil, err
		}
		out[kind] = n
	}
	return out, sc.Err()
}

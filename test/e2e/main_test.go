package e2e

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/test/controlplane"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// The suite starts one control plane (kube-apiserver + etcd from KUBEBUILDER_ASSETS or
// <repo>/bin) per `go test` run, installs the CRDs and the chart's own webhook configurations
// (rewritten by envtest to point at this process), and runs `driverguard serve`'s server
// (serve.Run: informer caches, TLS, health, metrics) in-process. Every test talks to the API
// server; none calls a handler.

const (
	// chartRelease and chartNamespace are what the chart's webhook configurations are
	// rendered with (envtest replaces their service reference by a local URL).
	chartRelease   = controlplane.ChartRelease
	chartNamespace = controlplane.ChartNamespace
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
	plane      *controlplane.Plane
	setupErr   error
	stop       func() // stops the policy engine's watch
}

func TestMain(m *testing.M) {
	flag.Parse()
	suite.setupErr = setup()
	code := m.Run()
	if suite.plane != nil {
		if err := suite.plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	if suite.stop != nil {
		suite.stop()
	}
	if suite.policyDir != "" {
		_ = os.RemoveAll(suite.policyDir)
	}
	os.Exit(code)
}

// requireEnv fails the test (or skips it with -short) when the control plane is not running.
func requireEnv(t *testing.T) { controlplane.RequireSetup(t, suite.setupErr) }

func setup() error {
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctrllog.SetLogger(log)
	// The bundled policy library (as `serve` and `review` use it) plus a fake policy driven by
	// annotations (policy.test/deny, /warn, /error) for the policy-hook tests.
	suite.policy = wt.AnnotationPolicy()
	ctx, cancel := context.WithCancel(context.Background())
	var err error
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
	plane, err := controlplane.Start(controlplane.Options{Server: serve.Options{
		Options: webhook.Options{Policy: wt.Combine(engine, suite.policy)},
		Logger:  log,
	}})
	if err != nil {
		cancel()
		return err
	}
	suite.plane = plane
	suite.env, suite.cfg, suite.scheme, suite.root = plane.Env, plane.Config, plane.Scheme, plane.Root
	suite.healthAddr, suite.metricsURL = plane.HealthAddr, "http://"+plane.MetricsAddr+"/metrics"
	suite.stop = cancel
	c, err := client.New(suite.cfg, client.Options{Scheme: suite.scheme})
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

// newClient returns a client of the API server and the collector of its warnings.
func newClient(t *testing.T) (client.Client, *controlplane.Warnings) {
	t.Helper()
	requireEnv(t)
	w := &controlplane.Warnings{}
	c, err := suite.plane.Client(w)
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
		return fmt.Errorf("%s still exists (%w)", obj.GetName(), err)
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

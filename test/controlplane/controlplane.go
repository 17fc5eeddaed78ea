// Package controlplane starts what driverguard's integration suites test against: a real
// kube-apiserver and etcd (envtest, binaries built by hack/tools.sh into bin/), the project's
// CRDs, the chart's own webhook configurations (rewritten by envtest to call this process),
// and `driverguard serve`'s server (serve.Run: informer caches, TLS, health, metrics)
// in-process. Every request a suite makes goes through the API server, which calls the
// webhook over TLS. Suites that need a controller run it themselves (DisruptionControllerBinary:
// test/plan runs Kubernetes' disruption controller).
package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/serve"
)

const (
	// ChartRelease and ChartNamespace are what the chart's webhook configurations are
	// rendered with (envtest replaces their service reference by a local URL).
	ChartRelease   = "dg"
	ChartNamespace = "driverguard-system"
)

// ErrNoAssets means kube-apiserver or etcd (or, for DisruptionControllerBinary, the
// disruption controller) is not built; suites skip with -short.
var ErrNoAssets = errors.New("control-plane binaries not found")

// Plane is a running control plane and webhook server.
type Plane struct {
	Env    *envtest.Environment
	Config *rest.Config
	Scheme *runtime.Scheme
	// ServerVersion is the API server's version (v1.37.2).
	ServerVersion string
	// Root is the repository root.
	Root string
	// HealthAddr and MetricsAddr are the webhook server's health and metrics endpoints.
	HealthAddr  string
	MetricsAddr string
	// State is the webhook's cluster view (wait on it after a write with WaitFor); nil when
	// the webhook runs as a process (Options.ServeBinary).
	State *cluster.Informed
	// Serve is the `driverguard serve` process (Options.ServeBinary), nil when in-process.
	Serve *os.Process

	stop    func()
	cleanup func()
}

// Options configure Start.
type Options struct {
	// Server configures the webhook server; the host, port, certificates, health and metrics
	// addresses and OnReady are set by Start.
	Server serve.Options
	// Restartable keeps the API server's certificates in a directory of the Plane's own, so
	// that RestartAPIServer brings it back on the same address with the same certificates
	// (and every client keeps working).
	Restartable bool
	// ServeBinary, when set, runs the webhook as `ServeBinary serve ServeArgs...` (a
	// driverguard binary) in a process of its own instead of in-process (Server is then
	// unused): for suites that measure its memory or signal it. Its output goes to ServeLog.
	ServeBinary string
	ServeArgs   []string
	ServeLog    io.Writer
}

// Start starts the control plane and serves the webhook until Stop.
func Start(opts Options) (*Plane, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets := assetsDir(root)
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("%w in %s: run make tools (hack/tools.sh builds them from Go modules)", ErrNoAssets, assets)
		}
	}
	validating, mutating, err := ChartWebhookConfigurations()
	if err != nil {
		return nil, err
	}
	p := &Plane{Root: root, Scheme: runtime.NewScheme()}
	if err := clientgoscheme.AddToScheme(p.Scheme); err != nil {
		return nil, err
	}
	if err := openreports.Install(p.Scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(p.Scheme); err != nil {
		return nil, err
	}
	var apiCertDir string
	if opts.Restartable {
		if apiCertDir, err = os.MkdirTemp("", "driverguard-apiserver-"); err != nil {
			return nil, err
		}
		p.cleanup = func() { _ = os.RemoveAll(apiCertDir) }
	}
	p.Env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		// The API's CRDs, and openreports' ClusterReport CRD that the chart ships for the audit.
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(root, "charts", "driverguard", "crds", "openreports.io_clusterreports.yaml")},
		ErrorIfCRDPathMissing: true,
		Scheme:                p.Scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{ValidatingWebhooks: validating, MutatingWebhooks: mutating},
	}
	if apiCertDir != "" {
		p.Env.ControlPlane.APIServer = &envtest.APIServer{CertDir: apiCertDir}
		// With clients and watches open the API server can take longer than envtest's 20 s to stop.
		p.Env.ControlPlaneStopTimeout = 90 * time.Second
	}
	if p.Config, err = p.Env.Start(); err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	if err := p.reportVersion(); err != nil {
		return nil, p.stopEnv(err)
	}
	if p.HealthAddr, err = FreeAddr(); err != nil {
		return nil, p.stopEnv(err)
	}
	if p.MetricsAddr, err = FreeAddr(); err != nil {
		return nil, p.stopEnv(err)
	}

	wio := &p.Env.WebhookInstallOptions
	if opts.ServeBinary != "" {
		if err := p.startProcess(opts); err != nil {
			return nil, p.stopEnv(err)
		}
		return p, nil
	}
	so := opts.Server
	so.Host, so.Port, so.CertDir = wio.LocalServingHost, wio.LocalServingPort, wio.LocalServingCertDir
	so.HealthAddr, so.MetricsAddr = p.HealthAddr, p.MetricsAddr
	if so.RebuildDelay == 0 {
		so.RebuildDelay = 20 * time.Millisecond
	}
	ready := make(chan struct{})
	var once sync.Once
	so.OnReady = func() { once.Do(func() { close(ready) }) }
	onState := so.OnState
	so.OnState = func(s *cluster.Informed) {
		p.State = s
		if onState != nil {
			onState(s)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	p.stop = func() {
		cancel()
		<-stopped
	}
	go func() {
		defer close(stopped)
		if err := serve.Run(ctx, p.Config, so); err != nil {
			fmt.Fprintln(os.Stderr, "the webhook server stopped:", err)
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		return nil, errors.Join(errors.New("the webhook server did not become ready within 60s"), p.Stop())
	}
	return p, nil
}

// startProcess runs `driverguard serve` against the control plane, on the port its webhook
// configurations call, and waits until it is ready.
func (p *Plane) startProcess(opts Options) error {
	wio := &p.Env.WebhookInstallOptions
	r, err := p.startServe(opts.ServeBinary, wio.LocalServingPort, p.HealthAddr, p.MetricsAddr, opts.ServeArgs, opts.ServeLog)
	if err != nil {
		return err
	}
	p.Serve, p.stop = r.Process, r.Stop
	return nil
}

// Replica is a `driverguard serve` process of StartReplica.
type Replica struct {
	Process *os.Process
	// HealthAddr and MetricsAddr are its health and metrics endpoints.
	HealthAddr, MetricsAddr string

	exited chan struct{}
	dir    string
}

// StartReplica runs one more `binary serve args...` against the control plane (a second
// replica: its webhook port is one of its own, which no webhook configuration calls), with
// the webhook's certificates, and waits until it is ready. Stop (or Kill) it when done.
func (p *Plane) StartReplica(binary string, args []string, log io.Writer) (*Replica, error) {
	health, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	webhookAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	_, portText, err := net.SplitHostPort(webhookAddr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, err
	}
	return p.startServe(binary, port, health, metrics, args, log)
}

// startServe runs `binary serve` as a system:masters user on port, health and metrics, and
// waits until it is ready.
func (p *Plane) startServe(binary string, port int, health, metrics string, extra []string, log io.Writer) (*Replica, error) {
	dir, err := os.MkdirTemp("", "driverguard-serve-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(p.Env, envtest.User{Name: "driverguard-serve", Groups: []string{"system:masters"}}, kubeconfig); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	wio := &p.Env.WebhookInstallOptions
	args := append([]string{"serve", "--kubeconfig", kubeconfig,
		"--host", wio.LocalServingHost, "--port", strconv.Itoa(port), "--cert-dir", wio.LocalServingCertDir,
		"--health-addr", health, "--metrics-addr", metrics, "--shutdown-delay", "0s", "--log-format", "text"},
		extra...)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	r := &Replica{Process: cmd.Process, HealthAddr: health, MetricsAddr: metrics, exited: make(chan struct{}), dir: dir}
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(r.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-r.exited:
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("%s serve exited before it was ready: %w", binary, waitErr)
		default:
		}
		resp, err := http.Get("http://" + health + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			r.Kill()
			return nil, fmt.Errorf("%s serve was not ready within 60s", binary)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the replica as the kubelet would (SIGTERM, SIGKILL after 30 s).
func (r *Replica) Stop() {
	_ = r.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		_ = r.Process.Kill()
		<-r.exited
	}
	_ = os.RemoveAll(r.dir)
}

// Kill kills the replica (SIGKILL: it releases nothing) and waits until it is gone.
func (r *Replica) Kill() {
	_ = r.Process.Kill()
	<-r.exited
	_ = os.RemoveAll(r.dir)
}

func (p *Plane) stopEnv(err error) error {
	if stopErr := p.Env.Stop(); stopErr != nil {
		return errors.Join(err, stopErr)
	}
	return err
}

// Stop stops the webhook server and the control plane.
func (p *Plane) Stop() error {
	if p.stop != nil {
		p.stop()
	}
	err := p.Env.Stop()
	if p.cleanup != nil {
		p.cleanup()
	}
	return err
}

// RestartAPIServer stops the kube-apiserver and starts it again (etcd and the webhook keep
// running); between the two calls of between, if set, the API server is down. The Plane must
// be Restartable.
func (p *Plane) RestartAPIServer(between func()) error {
	if p.cleanup == nil {
		return errors.New("the control plane was not started Restartable")
	}
	api := p.Env.ControlPlane.APIServer
	start := time.Now()
	if err := api.Stop(); err != nil {
		return fmt.Errorf("stopping the API server (after %s): %w", time.Since(start).Round(time.Millisecond), err)
	}
	if between != nil {
		between()
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting the API server again: %w", err)
	}
	return nil
}

// Client returns a client of the API server that hands every admission warning to w (nil
// for none).
func (p *Plane) Client(w rest.WarningHandler) (client.Client, error) {
	cfg := rest.CopyConfig(p.Config)
	if w != nil {
		cfg.WarningHandler = w
	}
	return client.New(cfg, client.Options{Scheme: p.Scheme})
}

// Warnings collects the admission warnings the API server returns.
type Warnings struct {
	mu   sync.Mutex
	msgs []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *Warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// Take returns the warnings collected since the last call.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// ChartWebhookConfigurations renders the chart's webhook configurations with the embedded
// chart, as `helm install` would, with the webhooks their annotation holds registered as
// `serve --register-webhooks` registers them.
func ChartWebhookConfigurations() ([]*admissionregistrationv1.ValidatingWebhookConfiguration, []*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	ch, err := charts.Driverguard()
	if err != nil {
		return nil, nil, err
	}
	inst := action.NewInstall(&action.Configuration{})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = ChartRelease, ChartNamespace
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	rel, err := inst.Run(ch, map[string]any{})
	if err != nil {
		return nil, nil, fmt.Errorf("rendering the chart: %w", err)
	}
	var (
		val []*admissionregistrationv1.ValidatingWebhookConfiguration
		mut []*admissionregistrationv1.MutatingWebhookConfiguration
	)
	manifests := []string{rel.Manifest}
	for _, h := range rel.Hooks {
		manifests = append(manifests, h.Manifest)
	}
	for _, m := range manifests {
		docs, err := SplitYAML([]byte(m))
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
				if v.Webhooks, err = serve.ValidatingWebhooksOf(&v, nil); err != nil {
					return nil, nil, err
				}
				val = append(val, &v)
			case "MutatingWebhookConfiguration":
				var m admissionregistrationv1.MutatingWebhookConfiguration
				if err := yaml.UnmarshalStrict(doc, &m); err != nil {
					return nil, nil, err
				}
				if m.Webhooks, err = serve.MutatingWebhooksOf(&m, nil); err != nil {
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

// SplitYAML splits a multi-document YAML stream, dropping empty documents.
func SplitYAML(data []byte) ([][]byte, error) {
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

// assetsDir is where the control-plane binaries are: KUBEBUILDER_ASSETS, else <root>/bin.
func (p *Plane) reportVersion() error {
	v, err := ReportVersion(p.Config)
	p.ServerVersion = v
	return err
}

// ReportVersion asks the API server of cfg its version and prints it on stderr, once per
// process: which Kubernetes a test package ran against. With DRIVERGUARD_SERVER_VERSIONS set
// it also appends it to that file (go test shows a passing package's output only with -v):
// make test-matrix runs the packages against several and checks what they ran.
func ReportVersion(cfg *rest.Config) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("asking the API server its version: %w", err)
	}
	versionOnce.Do(func() {
		fmt.Fprintf(os.Stderr, "control plane: kube-apiserver %s\n", v.GitVersion)
		if file := os.Getenv("DRIVERGUARD_SERVER_VERSIONS"); file != "" {
			f, ferr := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if ferr == nil {
				_, ferr = fmt.Fprintf(f, "kube-apiserver %s\n", v.GitVersion)
				ferr = errors.Join(ferr, f.Close())
			}
			err = ferr
		}
	})
	return v.GitVersion, err
}

var versionOnce sync.Once

func assetsDir(root string) string {
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		return assets
	}
	return filepath.Join(root, "bin")
}

// DisruptionControllerBinary is the path of the disruption controller, next to kube-apiserver
// (hack/tools.sh control-plane builds it from hack/tools/disruption-controller: Kubernetes'
// controller, wired as kube-controller-manager wires it; envtest itself runs no controller).
func DisruptionControllerBinary() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(assetsDir(root), "disruption-controller")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%w: no %s: run make tools (hack/tools.sh builds it from Go modules)", ErrNoAssets, bin)
	}
	return bin, nil
}

// RepoRoot is the directory holding go.mod, above the working directory.
func RepoRoot() (string, error) {
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

// FreeAddr returns a free loopback address.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Package lifecycle installs, upgrades, rolls back and uninstalls the chart with the real helm
// v3 and helm v4 binaries (server-side apply and client-side) on a real kube-apiserver, and runs
// the webhook the way its pod would: `driverguard serve` with the Deployment's own arguments,
// reached by the API server through the chart's Service (an EndpointSlice pointing at this
// machine; the API server routes webhooks to endpoints, --enable-aggregator-routing).
//
// envtest runs no kubelet and no controllers: a stand-in (kubelet in this package) marks the
// release's Deployment and PodDisruptionBudget ready as a cluster would — unless its image is
// one that never starts — so that helm's --wait (kstatus, Helm 4's default watcher) has
// something to wait for.
package lifecycle

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/test/controlplane"
)

var suite struct {
	env      *envtest.Environment
	cfg      *rest.Config
	scheme   *runtime.Scheme
	root     string
	bin      string // driverguard
	hostIP   net.IP // where the webhook "pod" listens: an endpoint may not be a loopback address
	setupErr error
}

func TestMain(m *testing.M) {
	flag.Parse()
	suite.setupErr = setup()
	code := m.Run()
	if suite.env != nil {
		if err := suite.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	os.Exit(code)
}

func setup() error {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	suite.root = root
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd", "helm", "helm4"} {
		if _, err := os.Stat(filepath.Join(root, "bin", b)); err != nil && (b == "helm" || b == "helm4") {
			return fmt.Errorf("%w: bin/%s (run make tools)", controlplane.ErrNoAssets, b)
		}
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil && b != "helm" && b != "helm4" {
			return fmt.Errorf("%w: %s in %s (run make tools)", controlplane.ErrNoAssets, b, assets)
		}
	}
	if suite.hostIP, err = hostIP(); err != nil {
		return err
	}
	if suite.bin, err = controlplane.DriverguardBinary(root, "lifecycle"); err != nil {
		return err
	}

	ctrllog.SetLogger(logr.Discard())
	suite.scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(suite.scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(suite.scheme); err != nil {
		return err
	}
	// The chart installs its own CRDs (crds/), as on a real cluster.
	suite.env = &envtest.Environment{BinaryAssetsDirectory: assets, Scheme: suite.scheme}
	suite.env.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	if suite.cfg, err = suite.env.Start(); err != nil {
		suite.env = nil
		return fmt.Errorf("starting the control plane: %w", err)
	}
	_, err = controlplane.ReportVersion(suite.cfg)
	return err
}

// hostIP is the first IPv4 address of this machine that is not a loopback address.
func hostIP() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.To4(), nil
		}
	}
	return nil, errors.New("this machine has no IPv4 address besides loopback: the API server cannot reach a webhook endpoint (Endpoints may not be loopback addresses)")
}

func requireEnv(t *testing.T) { controlplane.RequireSetup(t, suite.setupErr) }

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(suite.cfg, client.Options{Scheme: suite.scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/test/controlplane"
)

// The example cluster every block starts from: the nodes of examples/nodes.yaml, the drivers of
// examples/drivers.yaml and this RBLNClusterPolicy, the drivers and policy as the release
// "driverguard" in the namespace "default" stored them (Helm's ownership annotations), so that
// the docs' `helm install driverguard ...` takes them over as it would on a cluster.
const (
	exampleNodes         = "examples/nodes.yaml"
	exampleDrivers       = "examples/drivers.yaml"
	exampleClusterPolicy = "test/testdata/review/cluster-policy.yaml"
	exampleRelease       = "driverguard"
	exampleNamespace     = "default"
)

// registry is what $REGISTRY is in the docs' commands: a host no command reaches.
const registry = "127.0.0.1:5000"

var suite struct {
	root       string
	dir        string // everything the package writes
	plane      *controlplane.Plane
	client     client.Client
	kubeconfig string
	pathHelm3  string // PATH directory where helm is Helm 3 (with driverguard, helm4, kubectl, opa)
	pathHelm4  string // PATH directory where helm is Helm 4
	bins       map[string]string
	// plugins holds the plugin tarballs hack/plugin.sh built for this platform, once
	// pluginsDone is closed.
	plugins     string
	pluginsErr  error
	pluginsDone chan struct{}
	proxy       *registryProxy
	goEnv       map[string]string
	nodes       []corev1.Node
	drivers     []v1alpha1.RBLNDriver
	policy      v1alpha1.RBLNClusterPolicy
	setupErr    error
}

func TestMain(m *testing.M) {
	flag.Parse()
	suite.setupErr = setup()
	code := m.Run()
	if suite.pluginsDone != nil {
		<-suite.pluginsDone
	}
	if suite.proxy != nil {
		_ = suite.proxy.Close()
	}
	if suite.plane != nil {
		if err := suite.plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	if suite.dir != "" {
		_ = os.RemoveAll(suite.dir)
	}
	os.Exit(code)
}

func setup() error {
	started := time.Now()
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	suite.root = root
	suite.bins = map[string]string{}
	for _, b := range []string{"helm", "helm4", "kubectl"} {
		p := filepath.Join(root, "bin", b)
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w: bin/%s (make test-tools builds it: hack/tools.sh helm control-plane kubectl)", controlplane.ErrNoAssets, b)
		}
		suite.bins[b] = p
	}
	if _, err := exec.LookPath("jq"); err != nil {
		return fmt.Errorf("jq is not on PATH: the docs pipe into it (apt-get install jq; .ci/run installs it): %w", err)
	}
	if err := readGoEnv(); err != nil {
		return err
	}
	if suite.dir, err = os.MkdirTemp("", "driverguard-docs-"); err != nil {
		return err
	}

	// The plugin tarballs build while the control plane starts and the docs before the README
	// run (newSandbox waits for them).
	suite.pluginsDone = make(chan struct{})
	go func() {
		defer close(suite.pluginsDone)
		start := time.Now()
		suite.plugins, suite.pluginsErr = buildPlugins(root, filepath.Join(suite.dir, "plugins"))
		fmt.Fprintf(os.Stderr, "test/docs: hack/plugin.sh took %s\n", time.Since(start).Round(time.Millisecond))
	}()

	if suite.bins["driverguard"], err = controlplane.DriverguardBinary(root, "docs"); err != nil {
		return err
	}
	// opa, the main module's tool: `go tool -n` builds it once into Go's cache and names it.
	goTool := exec.Command("go", "tool", "-n", "opa")
	goTool.Dir = root
	out, err := goTool.Output()
	if err != nil {
		return fmt.Errorf("go tool -n opa: %w", err)
	}
	suite.bins["opa"] = strings.TrimSpace(string(out))

	if suite.proxy, err = startRegistryProxy(suite.dir); err != nil {
		return fmt.Errorf("the registry proxy: %w", err)
	}
	ctrllog.SetLogger(logr.Discard())
	if suite.plane, err = controlplane.Start(controlplane.Options{}); err != nil {
		return err
	}
	suite.kubeconfig = filepath.Join(suite.dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(suite.plane.Env, envtest.User{Name: "docs", Groups: []string{"system:masters"}}, suite.kubeconfig); err != nil {
		return err
	}
	if suite.client, err = suite.plane.Client(nil); err != nil {
		return err
	}

	suite.pathHelm3 = filepath.Join(suite.dir, "bin")
	suite.pathHelm4 = filepath.Join(suite.dir, "bin-helm4")
	for dir, links := range map[string]map[string]string{
		suite.pathHelm3: {"driverguard": suite.bins["driverguard"], "helm": suite.bins["helm"], "helm4": suite.bins["helm4"],
			"kubectl": suite.bins["kubectl"], "opa": suite.bins["opa"]},
		suite.pathHelm4: {"helm": suite.bins["helm4"]},
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for name, target := range links {
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}

	if err := readExamples(root); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range suite.nodes {
		if err := suite.client.Create(ctx, suite.nodes[i].DeepCopy()); err != nil {
			return fmt.Errorf("creating node %s: %w", suite.nodes[i].Name, err)
		}
	}
	if err := restoreExamples(ctx); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "test/docs: setup took %s\n", time.Since(started).Round(time.Millisecond))
	return nil
}

func readExamples(root string) error {
	read := func(rel string) ([]decode.Document, error) { return decode.File(filepath.Join(root, rel), nil) }
	docs, err := read(exampleNodes)
	if err != nil {
		return err
	}
	if suite.nodes, err = decode.Nodes(docs); err != nil {
		return err
	}
	if docs, err = read(exampleDrivers); err != nil {
		return err
	}
	if suite.drivers, err = decode.Drivers(docs); err != nil {
		return err
	}
	if docs, err = read(exampleClusterPolicy); err != nil {
		return err
	}
	policies, err := decode.ClusterPolicies(docs)
	if err != nil {
		return err
	}
	if len(policies) != 1 || len(suite.drivers) == 0 || len(suite.nodes) == 0 {
		return fmt.Errorf("the example cluster: %d nodes, %d drivers, %d cluster policies", len(suite.nodes), len(suite.drivers), len(policies))
	}
	suite.policy = policies[0]
	// Helm takes over an object of the release's name and namespace that carries these.
	own := func(m *map[string]string) {
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)["meta.helm.sh/release-name"] = exampleRelease
		(*m)["meta.helm.sh/release-namespace"] = exampleNamespace
	}
	for i := range suite.drivers {
		own(&suite.drivers[i].Annotations)
	}
	own(&suite.policy.Annotations)
	if suite.policy.Labels == nil {
		suite.policy.Labels = map[string]string{}
	}
	suite.policy.Labels["app.kubernetes.io/managed-by"] = "Helm"
	for _, d := range suite.drivers {
		if d.Labels["app.kubernetes.io/managed-by"] != "Helm" {
			return fmt.Errorf("%s: RBLNDriver %s is not labelled app.kubernetes.io/managed-by: Helm, as the release's drivers are", exampleDrivers, d.Name)
		}
	}
	return nil
}

// restoreExamples makes the cluster's RBLNDrivers and RBLNClusterPolicies the example ones
// again, and waits until the webhook's view has them.
func restoreExamples(ctx context.Context) error {
	c := suite.client
	if err := c.DeleteAllOf(ctx, &v1alpha1.RBLNDriver{}); err != nil {
		return fmt.Errorf("deleting the RBLNDrivers: %w", err)
	}
	if err := c.DeleteAllOf(ctx, &v1alpha1.RBLNClusterPolicy{}); err != nil {
		return fmt.Errorf("deleting the RBLNClusterPolicies: %w", err)
	}
	want := map[string]string{}
	for i := range suite.drivers {
		d := suite.drivers[i].DeepCopy()
		if err := c.Create(ctx, d); err != nil {
			return fmt.Errorf("creating RBLNDriver %s: %w", d.Name, err)
		}
		want[d.Name] = d.ResourceVersion
	}
	p := suite.policy.DeepCopy()
	if err := c.Create(ctx, p); err != nil {
		return fmt.Errorf("creating RBLNClusterPolicy %s: %w", p.Name, err)
	}
	return suite.plane.State.WaitFor(ctx, func(s *cluster.Snapshot) bool {
		drivers := s.Drivers()
		if len(drivers) != len(want) || s.ClusterPolicy() == nil || s.ClusterPolicy().ResourceVersion != p.ResourceVersion {
			return false
		}
		for _, d := range drivers {
			if want[d.Name] != d.ResourceVersion {
				return false
			}
		}
		return true
	})
}

// resetCluster undoes what a block did to the cluster: every Helm release is uninstalled and the
// example drivers and cluster policy are back.
func resetCluster(ctx context.Context) error {
	var secrets corev1.SecretList
	if err := suite.client.List(ctx, &secrets, client.MatchingLabels{"owner": "helm"}); err != nil {
		return fmt.Errorf("listing Helm's release secrets: %w", err)
	}
	var releases []string
	for _, s := range secrets.Items {
		r := s.Labels["name"] + " -n " + s.Namespace
		if s.Labels["status"] == "superseded" || slices.Contains(releases, r) {
			continue
		}
		releases = append(releases, r)
	}
	for _, r := range releases {
		name, ns, _ := strings.Cut(r, " -n ")
		cmd := exec.CommandContext(ctx, suite.bins["helm"], "uninstall", name, "-n", ns, "--kubeconfig", suite.kubeconfig)
		cmd.Env = append(baseEnv(filepath.Join(suite.dir, "reset-home")), "PATH="+suite.pathHelm3+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("helm uninstall %s: %w\n%s", r, err, out)
		}
	}
	return restoreExamples(ctx)
}

// baseEnv is the environment of every command: this process's, without what would point
// driverguard, Helm or kubectl elsewhere, with HOME at home, the test's cluster as the current
// kubeconfig context, Go's caches where they are (make demo builds with them), $REGISTRY, and
// the registry proxy as every HTTP(S) proxy, trusted through SSL_CERT_FILE: no command reaches
// beyond this machine, and image checks ask the in-process registry.
func baseEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "HELM_"), strings.HasPrefix(name, "KUBE"), strings.HasPrefix(name, "XDG_"),
			strings.HasPrefix(name, "DRIVERGUARD_"), strings.HasSuffix(strings.ToUpper(name), "_PROXY"),
			strings.HasPrefix(name, "MAKE"), name == "MFLAGS", // make test's own, not a user's shell's
			name == "HOME", name == "PATH", name == "REGISTRY", name == "GOCACHE", name == "GOMODCACHE", name == "GOPATH",
			name == "SSL_CERT_FILE", name == "SSL_CERT_DIR":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"KUBECONFIG="+suite.kubeconfig,
		"GOCACHE="+suite.goEnv["GOCACHE"], "GOMODCACHE="+suite.goEnv["GOMODCACHE"], "GOPATH="+suite.goEnv["GOPATH"],
		"REGISTRY="+registry,
		"HTTPS_PROXY=http://"+suite.proxy.addr, "HTTP_PROXY=http://"+suite.proxy.addr, "NO_PROXY=127.0.0.1,localhost",
		"SSL_CERT_FILE="+suite.proxy.caFile,
	)
}

// readGoEnv reads the Go caches' locations (`go env -json`) into suite.goEnv.
func readGoEnv() error {
	out, err := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return fmt.Errorf("go env: %w", err)
	}
	if err := json.Unmarshal(out, &suite.goEnv); err != nil {
		return fmt.Errorf("go env -json: %w", err)
	}
	return nil
}

// buildPlugins runs hack/plugin.sh (make plugin) for this platform only into out, unsigned.
func buildPlugins(root, out string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "plugin.sh"))
	cmd.Env = append(os.Environ(), "OUT="+out, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "VERSION=", "SIGN_KEY=",
		"HELM4="+filepath.Join(root, "bin", "helm4"))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/plugin.sh: %w\n%s", err, buf.String())
	}
	return out, nil
}

func requireSetup(t *testing.T) {
	t.Helper()
	controlplane.RequireSetup(t, suite.setupErr)
}

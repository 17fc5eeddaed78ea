package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/test/controlplane"
)

// helm runs one helm binary against the suite's API server as a cluster admin, with a home of
// its own (no plugins, no repositories).
type helm struct {
	name, bin, kubeconfig, home string
	// env is added to helm's environment (HELM_DRIVER=configmap).
	env []string
}

func newHelm(t *testing.T, name, file string) *helm {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(suite.env, envtest.User{Name: "helm-" + name, Groups: []string{"system:masters"}}, path); err != nil {
		t.Fatal(err)
	}
	return &helm{name: name, bin: filepath.Join(suite.root, "bin", file), kubeconfig: path, home: dir}
}

// run runs helm with args; its combined output is returned (and logged when it fails).
func (h *helm) run(args ...string) (string, error) {
	// Not a test's context: cleanups (uninstall) run after it ends.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+h.home, "HELM_CONFIG_HOME="+h.home, "HELM_DATA_HOME="+h.home, "HELM_PLUGINS="+filepath.Join(h.home, "plugins"))
	cmd.Env = append(cmd.Env, h.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// neverReady marks a webhook image whose pods never become ready (the kubelet stand-in keeps
// its Deployment progressing forever).
const neverReady = "never-ready"

// kubelet stands in for the kubelet and the workload controllers of namespace ns until the
// test ends: every Deployment's pods become ready (unless its image is neverReady: then its
// old pods stay, the new ones never come) and every PodDisruptionBudget is satisfied. It
// writes only status, as the controllers would.
func kubelet(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var deps appsv1.DeploymentList
			if err := c.List(ctx, &deps, client.InNamespace(ns)); err == nil {
				for i := range deps.Items {
					readyDeployment(ctx, c, &deps.Items[i])
				}
			}
			var pdbs policyv1.PodDisruptionBudgetList
			if err := c.List(ctx, &pdbs, client.InNamespace(ns)); err == nil {
				for i := range pdbs.Items {
					satisfiedPDB(ctx, c, &pdbs.Items[i])
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

func readyDeployment(ctx context.Context, c client.Client, d *appsv1.Deployment) {
	n := int32(1)
	if d.Spec.Replicas != nil {
		n = *d.Spec.Replicas
	}
	st := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}
	if strings.Contains(d.Spec.Template.Spec.Containers[0].Image, neverReady) {
		// The old pods still serve; none of the new ones becomes ready.
		st.UpdatedReplicas, st.Replicas, st.UnavailableReplicas = 0, n+1, 1
		progressing.Reason = "ReplicaSetUpdated"
	}
	st.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}, progressing}
	if sameStatus(d.Status, st) {
		return
	}
	d.Status = st
	_ = c.Status().Update(ctx, d)
}

func sameStatus(a, b appsv1.DeploymentStatus) bool {
	strip := func(s appsv1.DeploymentStatus) appsv1.DeploymentStatus {
		s.Conditions = append([]appsv1.DeploymentCondition(nil), s.Conditions...)
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime, s.Conditions[i].LastUpdateTime = metav1.Time{}, metav1.Time{}
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

func satisfiedPDB(ctx context.Context, c client.Client, p *policyv1.PodDisruptionBudget) {
	healthy := int32(2)
	want := int32(1)
	if p.Spec.MinAvailable != nil {
		want = p.Spec.MinAvailable.IntVal
	}
	st := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: p.Generation, CurrentHealthy: healthy, DesiredHealthy: want, ExpectedPods: healthy, DisruptionsAllowed: max(healthy-want, 0)}
	if p.Status.ObservedGeneration == st.ObservedGeneration && p.Status.CurrentHealthy == healthy && p.Status.DesiredHealthy == want {
		return
	}
	p.Status = st
	_ = c.Status().Update(ctx, p)
}

// webhookPod is the release's webhook running as its pod would: `driverguard serve` with the
// Deployment's arguments, its certificate Secret "mounted" (copied into a directory as the
// kubelet would), reached through the Service (an EndpointSlice and Endpoints at this machine).
type webhookPod struct {
	cmd       *exec.Cmd
	exited    chan struct{}
	log       *controlplane.LogBuffer
	endpoints []client.Object // the Service's endpoints that point at it
}

// unreachable runs fn while the Service has no endpoints and the pod does not answer, as when
// no webhook pod is ready: the API server keeps its connections to a webhook open, and
// Kubernetes 1.32 sends requests over them after the Service lost its endpoints, so the pod is
// stopped (SIGSTOP) too, and resumed after.
func (p *webhookPod) unreachable(t *testing.T, c client.Client, fn func()) {
	t.Helper()
	for _, o := range p.endpoints {
		require.NoError(t, c.Delete(t.Context(), o))
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
	defer func() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }()
	fn()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGCONT))
	for _, o := range p.endpoints {
		o.SetResourceVersion("")
		o.SetUID("")
		o.SetCreationTimestamp(metav1.Time{})
		o.SetManagedFields(nil)
		require.NoError(t, c.Create(t.Context(), o))
	}
}

func startWebhookPod(t *testing.T, c client.Client, ns, name string) *webhookPod {
	t.Helper()
	var dep appsv1.Deployment
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &dep); err != nil {
		t.Fatalf("the webhook Deployment: %v", err)
	}
	dir := t.TempDir()
	certDir, kubeconfig := filepath.Join(dir, "certs"), filepath.Join(dir, "kubeconfig")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := controlplane.WriteKubeconfig(suite.env, envtest.User{Name: "webhook-" + ns, Groups: []string{"system:masters"}}, kubeconfig); err != nil {
		t.Fatal(err)
	}
	port := controlplane.FreePort(t, suite.hostIP)
	health := controlplane.FreePort(t, net.IPv4(127, 0, 0, 1))
	var args []string
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--cert-dir="), strings.HasPrefix(a, "--port="), strings.HasPrefix(a, "--health-addr="),
			strings.HasPrefix(a, "--metrics-addr="), strings.HasPrefix(a, "--log-format="):
			continue // this "pod"'s own
		}
		args = append(args, a)
	}
	args = append(args, "--cert-dir="+certDir, "--host="+suite.hostIP.String(), "--port="+strconv.Itoa(port),
		"--health-addr=127.0.0.1:"+strconv.Itoa(health), "--metrics-addr=0", "--kubeconfig="+kubeconfig,
		"--shutdown-delay=0s", "--log-format=text")
	p := &webhookPod{cmd: exec.Command(suite.bin, args...), exited: make(chan struct{}), log: &controlplane.LogBuffer{}}
	p.cmd.Env = append(os.Environ(), "POD_NAMESPACE="+ns)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	go mountSecret(ctx, c, ns, name+"-cert", certDir)
	t.Cleanup(func() {
		cancel()
		p.stop()
		if t.Failed() {
			t.Logf("the webhook pod's log:\n%s", p.log.Tail(60))
		}
	})
	p.endpoints = serveEndpoints(t, c, ns, name, port)

	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-p.exited:
			t.Fatalf("the webhook pod exited:\n%s", p.log.Tail(60))
		default:
		}
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook pod was not ready within 90s:\n%s", p.log.Tail(60))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the pod as the kubelet would (SIGTERM, then SIGKILL).
func (p *webhookPod) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// mountSecret copies the certificate Secret's tls.crt and tls.key into dir whenever they
// change, as the kubelet updates a mounted Secret.
func mountSecret(ctx context.Context, c client.Client, ns, name, dir string) {
	var last []byte
	for ctx.Err() == nil {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err == nil && len(s.Data["tls.crt"]) > 0 && !bytes.Equal(s.Data["tls.crt"], last) {
			_ = os.WriteFile(filepath.Join(dir, "ca.crt"), s.Data["ca.crt"], 0o600)
			_ = os.WriteFile(filepath.Join(dir, "tls.key"), s.Data["tls.key"], 0o600)
			_ = os.WriteFile(filepath.Join(dir, "tls.crt"), s.Data["tls.crt"], 0o600)
			last = s.Data["tls.crt"]
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// serveEndpoints points the webhook Service's "webhook" port at this machine's port: the API
// server resolves webhook Services to their endpoints (--enable-aggregator-routing).
func serveEndpoints(t *testing.T, c client.Client, ns, svc string, port int) []client.Object {
	t.Helper()
	portName, proto := "webhook", corev1.ProtocolTCP
	p32 := int32(port)
	ready := true
	objs := []client.Object{
		&corev1.Endpoints{ //nolint:staticcheck // the resolver of older API servers reads Endpoints
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc},
			Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
				Addresses: []corev1.EndpointAddress{{IP: suite.hostIP.String()}},
				Ports:     []corev1.EndpointPort{{Name: portName, Port: p32, Protocol: proto}}, //nolint:staticcheck // as above
			}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-test", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{suite.hostIP.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &p32, Protocol: &proto}},
		},
	}
	for _, o := range objs {
		if err := c.Create(t.Context(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%T: %v", o, err)
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = c.Delete(context.Background(), o)
		}
	})
	return objs
}

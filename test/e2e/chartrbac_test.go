package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cmd/driverguard/app"
	"github.com/driverguard/driverguard/test/controlplane"
)

// serveAsTheChart runs the installed Deployment's `driverguard serve` (its arguments, with
// local ports and directories) as the chart's ServiceAccount, and checks that the RBAC the
// chart grants is all it needs: it takes the audit's Lease, writes a ClusterReport per
// RBLNDriver, the cluster policy's status.audit and, once the reports stand, an Event on the
// driver that breakIt makes fail; it bootstraps its certificate, registers the webhooks and
// becomes ready, records that on its pod, and logs no "forbidden".
func serveAsTheChart(t *testing.T, c client.Client, dep *appsv1.Deployment, breakIt func() (driver string)) {
	ns, sa := dep.Namespace, dep.Spec.Template.Spec.ServiceAccountName
	dir := t.TempDir()
	kubeconfig, certDir := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "certs")
	if err := controlplane.WriteKubeconfig(suite.env, envtest.User{Name: "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}, kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	local := map[string]string{
		"--port":         strconv.Itoa(controlplane.FreePort(t, nil)),
		"--cert-dir":     certDir,
		"--health-addr":  "127.0.0.1:" + strconv.Itoa(controlplane.FreePort(t, nil)),
		"--metrics-addr": "127.0.0.1:" + strconv.Itoa(controlplane.FreePort(t, nil)),
		"--log-format":   "text",
	}
	args := []string{}
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		name, _, _ := strings.Cut(a, "=")
		if v, ok := local[name]; ok {
			a = name + "=" + v
		}
		args = append(args, a)
	}
	if !slices.Contains(args, "--audit") {
		t.Fatalf("the chart's default values do not turn the audit on: %v", args)
	}
	args = append(args, "--kubeconfig", kubeconfig, "--host", "127.0.0.1", "--shutdown-delay", "0s",
		"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms")
	// The Deployment's downward API: the pod's namespace, name and UID.
	downward := map[string]string{}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			downward[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if want := map[string]string{"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name", "POD_UID": "metadata.uid"}; !maps.Equal(downward, want) {
		t.Errorf("the Deployment's downward API: %v, want %v", downward, want)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep.Name + "-0", UID: "0a1b2c3d-chart-rbac"}}
	t.Setenv("POD_NAMESPACE", ns)
	t.Setenv("POD_NAME", pod.Name)
	t.Setenv("POD_UID", string(pod.UID))

	ctx, cancel := context.WithCancel(context.Background())
	var logs controlplane.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, app.Streams{In: bytes.NewReader(nil), Out: io.Discard, Err: &logs}, args)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited with %d; logs:\n%s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s of cancellation")
		}
		if strings.Contains(strings.ToLower(logs.String()), "forbidden") {
			t.Errorf("serve, as the chart's ServiceAccount, was refused something; logs:\n%s", logs.String())
		}
	}()

	// The kubelet would mount the certificate Secret once serve filled it.
	secret := &corev1.Secret{}
	var secretName string
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Name == "certs" && v.Secret != nil {
			secretName = v.Secret.SecretName
		}
	}
	eventually(t, 60*time.Second, func() error {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: secretName}, secret); err != nil {
			return err
		}
		if len(secret.Data["tls.crt"]) == 0 {
			return fmt.Errorf("no certificate in Secret %s yet; logs:\n%s", secretName, logs.Tail(20))
		}
		return nil
	})
	for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certDir, k), secret.Data[k], 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// Ready once it has registered the webhooks with its CA, as the chart's ServiceAccount; it
	// says so on its pod (the chart's Role grants the Events).
	eventually(t, 60*time.Second, func() error {
		resp, err := http.Get("http://" + local["--health-addr"] + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: HTTP %d; logs:\n%s", resp.StatusCode, logs.Tail(20))
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		list := &eventsv1.EventList{}
		if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Pod" && e.Regarding.Name == pod.Name && e.Regarding.UID == pod.UID && e.Reason == "WebhooksRegistered" {
				return nil
			}
		}
		return fmt.Errorf("no WebhooksRegistered Event on Pod %s", pod.Name)
	})
	eventually(t, 60*time.Second, func() error {
		lease := &coordinationv1.Lease{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "driverguard-audit"}, lease); err != nil {
			return fmt.Errorf("the audit's Lease: %w; logs:\n%s", err, logs.Tail(20))
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("the audit's Lease has no holder")
		}
		return nil
	})
	drivers := &v1alpha1.RBLNDriverList{}
	if err := c.List(t.Context(), drivers); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		for _, d := range drivers.Items {
			if err := c.Get(t.Context(), client.ObjectKey{Name: d.Name}, &openreports.ClusterReport{}); err != nil {
				return fmt.Errorf("ClusterReport %s: %w; logs:\n%s", d.Name, err, logs.Tail(20))
			}
		}
		cp := &v1alpha1.RBLNClusterPolicy{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: v1alpha1.ClusterPolicyName}, cp); err != nil {
			return err
		}
		if cp.Status.Audit == nil || int(cp.Status.Audit.Reports) != len(drivers.Items)+1 {
			return fmt.Errorf("status.audit of the cluster policy: %+v", cp.Status.Audit)
		}
		return nil
	})
	// Events mark a failure that appears (not those a new leader finds standing).
	failing := breakIt()
	eventually(t, 60*time.Second, func() error {
		list := &eventsv1.EventList{}
		if err := c.List(t.Context(), list); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "RBLNDriver" && e.Regarding.Name == failing && e.Reason == "AuditFailed" {
				return nil
			}
		}
		return fmt.Errorf("no AuditFailed Event about RBLNDriver %s", failing)
	})
}

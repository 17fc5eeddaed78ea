package audit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	ggcrname "github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/test/controlplane"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// metric reads the sum of the samples of name (any labels) from a replica's /metrics; a
// metric the replica never registered (no pass yet) reads 0.
func metric(t *testing.T, r *controlplane.Replica, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + r.MetricsAddr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(t, err, line)
		sum += v
	}
	require.NoError(t, sc.Err())
	return sum
}

const (
	passesMetric = "driverguard_audit_pass_duration_seconds_count"
	writesMetric = "driverguard_audit_report_writes_total"
)

// TestFailover: two `serve --audit` replicas (processes) with leader election: only the
// leader passes and writes reports; killed (SIGKILL: its Lease is not released), the other
// takes over within the lease duration plus one pass and writes what changed since.
func TestFailover(t *testing.T) {
	prepare(t)
	plane := suite.plane
	c := newClient(t, plane, nil)
	bin, err := controlplane.DriverguardBinary(plane.Root, "audit")
	require.NoError(t, err)
	const lease = 3 * time.Second
	args := []string{"--audit", "--namespace", metav1.NamespaceDefault, "--audit-interval", "10s",
		"--leader-elect-lease-duration", lease.String(), "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms"}
	var logs [2]controlplane.LogBuffer
	var replicas [2]*controlplane.Replica
	for i := range replicas {
		replicas[i], err = plane.StartReplica(bin, args, &logs[i])
		require.NoError(t, err)
		r := replicas[i]
		t.Cleanup(r.Stop)
	}
	create(t, c,
		wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver-atom")),
		wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom")),
		wt.ClusterPolicy(false),
	)
	deadline := time.Now().Add(30 * time.Second)
	leader := -1
	for leader < 0 {
		require.True(t, time.Now().Before(deadline), "no replica audited within 30s; logs:\n%s\n---\n%s", logs[0].Tail(20), logs[1].Tail(20))
		for i, r := range replicas {
			if metric(t, r, passesMetric) > 0 {
				leader = i
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	follower := 1 - leader
	held := &coordinationv1.Lease{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "driverguard-audit"}, held))
	require.NotNil(t, held.Spec.HolderIdentity)
	// Seconds later (the leader's passes after every change) the follower has still neither
	// passed nor written.
	time.Sleep(3 * time.Second)
	assert.Positive(t, metric(t, replicas[leader], passesMetric))
	assert.Zero(t, metric(t, replicas[follower], passesMetric), "the follower audited")
	assert.Zero(t, metric(t, replicas[follower], writesMetric), "the follower wrote reports")

	killed := time.Now()
	replicas[leader].Kill()
	relabel(t, c, "n1", func(l map[string]string) { l[operator.LabelOwner] = "rbln-driver-gone" })
	deadline = time.Now().Add(30 * time.Second)
	for metric(t, replicas[follower], passesMetric) == 0 {
		require.True(t, time.Now().Before(deadline), "the follower did not take over within 30s; logs:\n%s", logs[follower].Tail(30))
		time.Sleep(50 * time.Millisecond)
	}
	tookOver := time.Since(killed)
	t.Logf("the follower's first pass ended %s after the leader was killed (lease duration %s)", tookOver.Round(10*time.Millisecond), lease)
	// Lease duration, then up to one retry period (with client-go's jitter, 1.2×) to acquire, then
	// one pass: 5 s is two seconds of slack on a loaded machine.
	assert.Less(t, tookOver, lease+5*time.Second)
	report(t, c, "rbln-driver-atom", hasRule("StaleOwnerLabel"))
	assert.Positive(t, metric(t, replicas[follower], writesMetric), "the new leader wrote the change")
	now := &coordinationv1.Lease{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "driverguard-audit"}, now))
	assert.NotEqual(t, *held.Spec.HolderIdentity, *now.Spec.HolderIdentity, "the Lease changed hands")
}

// TestImageDeletedFromTheRegistry: with registry checks on, an image deleted from an
// in-process registry shows DriverImageNotFound after the image interval; pushed back, it
// clears.
func TestImageDeletedFromTheRegistry(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	plane, _ := start(t, func(a *serve.AuditOptions) { a.CheckImages, a.ImageInterval = true, 500*time.Millisecond })
	c := newClient(t, plane, nil)
	d := wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))
	d.Spec.Registry, d.Spec.SMD.Registry = host, host
	create(t, c, wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver-atom")), d, wt.ClusterPolicy(false))

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var images []string
	require.NoError(t, plane.State.WaitFor(ctx, func(s *cluster.Snapshot) bool {
		images = audit.Images(s)
		return len(s.Drivers()) == 1 && len(images) > 0
	}))
	var pool string
	for _, img := range images {
		require.True(t, strings.HasPrefix(img, host+"/"), "every image is in the test registry: %s", img)
		push(t, img)
		if strings.Contains(img, "rbln-driver:") {
			pool = img
		}
	}
	require.NotEmpty(t, pool, "no pool image among %v", images)
	report(t, c, "rbln-driver-atom", func(cr *openreports.ClusterReport) bool { return cr.Summary.Pass > 0 && cr.Summary.Fail == 0 })

	ref, err := ggcrname.ParseReference(pool)
	require.NoError(t, err)
	require.NoError(t, remote.Delete(ref))
	cr := report(t, c, "rbln-driver-atom", hasRule(routing.ReasonDriverImageNotFound))
	found := false
	for _, r := range cr.Results {
		if r.Rule == routing.ReasonDriverImageNotFound {
			found = found || strings.Contains(r.Description, pool) || r.Properties["image"] == pool
		}
	}
	assert.True(t, found, "the finding names the missing image %s: %+v", pool, cr.Results)

	push(t, pool)
	report(t, c, "rbln-driver-atom", not(hasRule(routing.ReasonDriverImageNotFound)))
}

// push uploads a random image as ref.
func push(t *testing.T, ref string) {
	t.Helper()
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	r, err := ggcrname.ParseReference(ref)
	require.NoError(t, err)
	require.NoError(t, remote.Write(r, img), fmt.Sprintf("pushing %s", ref))
}

package registry

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/routing"
)

// testRegistry is an in-process OCI registry on loopback that counts manifest HEADs.
type testRegistry struct {
	srv   *httptest.Server
	host  string
	heads sync.Map // path → *atomic.Int32
}

// newTestRegistry serves an OCI registry; if user is set it requires HTTP basic auth.
func newTestRegistry(t *testing.T, user, pass string) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if user != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		if req.Method == http.MethodHead && strings.Contains(req.URL.Path, "/manifests/") {
			c, _ := r.heads.LoadOrStore(req.URL.Path, new(atomic.Int32))
			c.(*atomic.Int32).Add(1)
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// push writes a random image to repo:tag.
func (r *testRegistry) push(t *testing.T, repoTag string, opts ...remote.Option) string {
	t.Helper()
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	ref, err := name.NewTag(r.host+"/"+repoTag, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img, append(opts, remote.WithContext(t.Context()))...))
	return ref.String()
}

func (r *testRegistry) headCount(repoTag string) int32 {
	repo, tag, _ := strings.Cut(repoTag, ":")
	c, ok := r.heads.Load("/v2/" + repo + "/manifests/" + tag)
	if !ok {
		return 0
	}
	return c.(*atomic.Int32).Load()
}

// unauthorized answers 401 to everything, with a Basic challenge.
func unauthorized(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="nope"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// silent accepts connections and never answers, until the test ends.
func silent(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		select {
		case <-req.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return strings.TrimPrefix(srv.URL, "http://")
}

// notARegistry answers 404 to everything, including the /v2/ ping.
func notARegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestCheck(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, "", "")
	present := reg.push(t, "rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04")
	missingTag := reg.host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-91-generic-ubuntu22.04"
	missingRepo := reg.host + "/rebellions/rebel/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"
	denied := unauthorized(t) + "/rebellions/atom/rbln-driver:3.2.2"
	hanging := silent(t) + "/rebellions/atom/rbln-driver:3.2.2"
	noRegistry := notARegistry(t) + "/rebellions/atom/rbln-driver:3.2.2"
	badRef := "repo.rebellions.ai/rebellions/Atom_X/rbln-driver:3.2.2"
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler()) // certificate not trusted
	t.Cleanup(tlsSrv.Close)
	badTLS := strings.TrimPrefix(tlsSrv.URL, "https://") + "/rebellions/atom/rbln-driver:3.2.2"

	headsBefore := reg.headCount("rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04") // remote.Write HEADs too
	// 1.5 s: the refused certificate must be seen before the deadline, and a TLS handshake
	// under -race on a loaded machine of two cores can take longer than 500 ms.
	c := NewChecker(Options{Timeout: 1500 * time.Millisecond, Concurrency: 3})
	start := time.Now()
	got := c.Check(t.Context(), []string{present, missingTag, present, missingRepo, denied, hanging, noRegistry, badRef, badTLS, "", present}, nil)
	assert.Less(t, time.Since(start), 5*time.Second, "bounded by the per-image timeout")

	want := map[string]Status{
		present:     Found,
		missingTag:  NotFound,
		missingRepo: NotFound,
		denied:      Warning,
		hanging:     Warning,
		noRegistry:  Warning, // a 404 from the ping is not a missing manifest
		badRef:      Warning,
		badTLS:      Warning,
	}
	require.Len(t, got, len(want))
	for img, status := range want {
		r := got[img]
		assert.Equal(t, img, r.Image)
		assert.Equal(t, status, r.Status, "%s: %v", img, r.Err)
		if status == Found {
			assert.True(t, strings.HasPrefix(r.Digest, "sha256:"))
			assert.NoError(t, r.Err)
		} else {
			assert.Error(t, r.Err)
			assert.Contains(t, r.Message, img)
		}
	}
	assert.Contains(t, got[hanging].Message, "no answer within 1.5s")
	assert.Contains(t, got[badTLS].Message, "certificate signed by an unknown authority", "the refused certificate is the cause, said in driverguard's words")
	assert.Contains(t, got[noRegistry].Message, "the /v2/ ping of "+strings.TrimSuffix(noRegistry, "/rebellions/atom/rbln-driver:3.2.2")+" was answered 404 Not Found: nothing answers the registry API")
	reasons := map[string]Reason{}
	for img, r := range got {
		reasons[img] = r.Reason
	}
	assert.Equal(t, map[string]Reason{present: "", missingTag: "", missingRepo: "", denied: ReasonUnauthorized, hanging: ReasonTimeout,
		noRegistry: ReasonOther, badRef: ReasonInvalidReference, badTLS: ReasonTLS}, reasons, "why each image was not verified")
	assert.Equal(t, headsBefore+1, reg.headCount("rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"), "each distinct image is checked once")
}

func TestCheckDNSFailure(t *testing.T) {
	t.Parallel()
	// No resolver is consulted: the transport fails every dial as DNS would.
	noDNS := &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: addr, IsNotFound: true}}
	}}
	img := "registry.invalid/rebellions/atom/rbln-driver:3.2.2"
	got := NewChecker(Options{Transport: noDNS, Timeout: 2 * time.Second}).Check(t.Context(), []string{img}, nil)
	assert.Equal(t, Warning, got[img].Status)
	assert.Equal(t, ReasonDNS, got[img].Reason)
	var dnsErr *net.DNSError
	assert.ErrorAs(t, got[img].Err, &dnsErr)
}

func TestCheckCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	img := silent(t) + "/a/b:c"
	got := NewChecker(Options{Timeout: time.Minute}).Check(ctx, []string{img}, nil)
	assert.Equal(t, Warning, got[img].Status)
	assert.Equal(t, ReasonNotChecked, got[img].Reason)
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// blackHole accepts TCP connections and never reads or answers, until the test ends.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// status answers code to everything (not a code the client retries, as 5xx).
func status(t *testing.T, code int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestCheckNotVerified: every way a registry can fail to answer is a Warning whose Reason says
// why, and the Summary counts it as not verified — never as found. A listener that never
// answers is cut at the deadline.
func TestCheckNotVerified(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, "", "")
	present := reg.push(t, "rebellions/atom/rbln-driver:3.2.2")
	missing := reg.host + "/rebellions/atom/rbln-driver:3.2.3"
	images := map[string]Reason{
		closedPort(t) + "/rebellions/atom/rbln-driver:3.2.2":   ReasonUnreachable,
		blackHole(t) + "/rebellions/atom/rbln-driver:3.2.2":    ReasonTimeout,
		silent(t) + "/rebellions/atom/rbln-driver:3.2.2":       ReasonTimeout,
		unauthorized(t) + "/rebellions/atom/rbln-driver:3.2.2": ReasonUnauthorized,
		status(t, http.StatusForbidden) + "/a/b:c":             ReasonForbidden,
		status(t, http.StatusBadRequest) + "/a/b:c":            ReasonOther,
	}
	says := map[Reason]string{
		ReasonUnreachable:  "failed: connection refused: nothing listens at that host and port",
		ReasonTimeout:      "no answer within",
		ReasonUnauthorized: "the registry refused an anonymous request (401 Unauthorized): no credentials were given",
		ReasonForbidden:    "was answered 403 Forbidden: the credentials may not read this repository",
		ReasonOther:        "was answered 400 Bad Request: the registry refused the request as malformed",
	}
	all := []string{present, missing}
	for img := range images {
		all = append(all, img)
	}
	const timeout = 700 * time.Millisecond
	start := time.Now()
	got := NewChecker(Options{Timeout: timeout}).Check(t.Context(), all, nil)
	assert.Less(t, time.Since(start), 3*timeout, "the deadline holds for a listener that never answers")
	for img, want := range images {
		assert.Equal(t, Warning, got[img].Status, img)
		assert.Equal(t, want, got[img].Reason, "%s: %v", img, got[img].Err)
		assert.Contains(t, got[img].Message, "could not verify "+img+" ("+string(want)+";")
		assert.Contains(t, got[img].Message, says[want], "says why in driverguard's words")
	}

	sum := Summarize(append(all, "", present), got)
	assert.Equal(t, Summary{Checked: true, Images: 8, Found: 1, Missing: 1, NotVerified: 6,
		NotVerifiedBy: map[Reason]int{ReasonTimeout: 2, ReasonUnreachable: 1, ReasonUnauthorized: 1, ReasonForbidden: 1, ReasonOther: 1}}, sum)
	assert.False(t, sum.Verified())
	assert.Equal(t, "8 images checked: 1 found, 1 missing, 6 NOT VERIFIED (2 timeout, 1 forbidden, 1 other, 1 unauthorized, 1 unreachable)", sum.String())
	assert.Contains(t, sum.Caveat(), "no registry answered for 6 images")
}

func TestSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		sum     Summary
		want    string
		caveat  bool
		checked bool
	}{
		{"not checked", NotChecked(), "images not checked (run with --check-images)", false, false},
		{"nothing to check", Summarize(nil, nil), "no image to check (no pool has a composed image)", false, true},
		{"all found", Summarize([]string{"a", "b"}, map[string]ImageResult{"a": {Status: Found}, "b": {Status: Found}}), "2 images checked: all found", false, true},
		{"missing", Summarize([]string{"a", "b"}, map[string]ImageResult{"a": {Status: Found}, "b": {Status: NotFound}}), "2 images checked: 1 found, 1 missing", false, true},
		{"no result", Summarize([]string{"a"}, nil), "1 image checked: 0 found, 0 missing, 1 NOT VERIFIED (1 not-checked)", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.sum.String())
			assert.Equal(t, tc.caveat, tc.sum.Caveat() != "")
			assert.Equal(t, tc.checked, tc.sum.Checked)
			assert.NotNil(t, tc.sum.NotVerifiedBy, "a JSON object, never null")
		})
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, "", "")
	reg.push(t, "rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04")
	denied := unauthorized(t)

	labels := func(kernel string) map[string]string {
		return map[string]string{
			operator.LabelDeployDriver: "true", operator.LabelFamily: "atom",
			operator.LabelOSID: "ubuntu", operator.LabelOSVersion: "22.04", operator.LabelKernel: kernel,
		}
	}
	driver := func(name, registry string, sel map[string]string) v1alpha1.RBLNDriver {
		return v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RBLNDriverSpec{
			Registry: registry, Image: "rebellions/rbln-driver", Version: "3.2.2", NodeSelector: sel,
		}}
	}
	res := routing.Route(
		[]v1alpha1.RBLNDriver{driver(v1alpha1.DefaultDriverName, reg.host, nil), driver("rbln-driver-locked", denied, map[string]string{"team": "locked"})},
		[]routing.Node{
			{Name: "ok", Labels: labels("6.8.0-90-generic")},
			{Name: "skew", Labels: labels("6.8.0-91-generic")},
			{Name: "skew2", Labels: labels("6.8.0-91-generic")},
			{Name: "locked", Labels: func() map[string]string { l := labels("6.8.0-90-generic"); l["team"] = "locked"; return l }()},
			{Name: "rpi", Labels: labels("6.1.0+rpt-rpi-v8")},
		}, routing.Options{})

	images := Images(res)
	require.Len(t, images, 3, "the invalid-tag pool has no image to check")

	results := NewChecker(Options{Timeout: 2 * time.Second}).Check(t.Context(), images, nil)
	warnings := Apply(res, results)
	require.Len(t, warnings, 1)
	assert.True(t, strings.HasPrefix(warnings[0].Image, denied))

	byNode := map[string]routing.Pool{}
	for _, p := range res.Pools {
		for _, n := range p.Nodes {
			byNode[n] = p
		}
	}
	assert.Empty(t, byNode["ok"].Reason)
	assert.Empty(t, byNode["locked"].Reason, "auth failures let the pool proceed")
	assert.Equal(t, "image not verified (unauthorized)", byNode["locked"].Detail, "and say so")
	assert.Equal(t, routing.ReasonDaemonSetNotCreated, byNode["rpi"].Reason, "a kernel with + makes a pool name the API server refuses")
	skew := byNode["skew"]
	assert.Equal(t, routing.ReasonDriverImageNotFound, skew.Reason)
	assert.Contains(t, skew.Detail, reg.host+"/rebellions/atom/rbln-driver:3.2.2-6.8.0-91-generic-ubuntu22.04")
	assert.Equal(t, []string{"skew", "skew2"}, skew.Nodes)
}

func TestCheckResult(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, "", "")
	reg.push(t, "rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04")
	labels := func(kernel string) map[string]string {
		return map[string]string{
			operator.LabelDeployDriver: "true", operator.LabelFamily: "atom",
			operator.LabelOSID: "ubuntu", operator.LabelOSVersion: "22.04", operator.LabelKernel: kernel,
		}
	}
	res := routing.Route([]v1alpha1.RBLNDriver{{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultDriverName},
		Spec: v1alpha1.RBLNDriverSpec{Registry: reg.host, Image: "rebellions/rbln-driver", Version: "3.2.2"}}}, []routing.Node{{Name: "a", Labels: labels("6.8.0-90-generic")}, {Name: "b", Labels: labels("6.8.0-91-generic")}}, routing.Options{})

	got, sum := Check(t.Context(), res, Options{Timeout: 2 * time.Second}, nil)
	assert.Equal(t, Summary{Checked: true, Images: 2, Found: 1, Missing: 1, NotVerifiedBy: map[Reason]int{}}, sum)
	require.Len(t, got, 2)
	assert.Equal(t, Found, got[0].Status)
	assert.Equal(t, NotFound, got[1].Status)
	assert.Empty(t, res.Pools[0].Reason)
	assert.Equal(t, routing.ReasonDriverImageNotFound, res.Pools[1].Reason)
}

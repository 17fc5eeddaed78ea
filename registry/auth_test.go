package registry

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// authRegistry is an in-process OCI registry (go-containerregistry's pkg/registry) that wants
// credentials: HTTP basic auth, or the registry token flow, where a token server (on the
// registry's address: go-containerregistry refuses a token realm on another loopback or
// private address) hands out bearer tokens for a scope to the right basic credentials. It
// counts what it is asked.
type authRegistry struct {
	host, user, pass string
	tokenFlow        bool
	// echo: a hostile token server whose 401 repeats the credentials it was sent.
	echo bool

	mu     sync.Mutex
	tokens map[string]string // token → scope
	// pings of /v2/, token requests by scope, manifest HEADs by path.
	pings  atomic.Int32
	byKind sync.Map // "token "+scope or "head "+path → *atomic.Int32
}

func newAuthRegistry(t testing.TB, user, pass string, tokenFlow bool) *authRegistry {
	t.Helper()
	r := &authRegistry{user: user, pass: pass, tokenFlow: tokenFlow, tokens: map[string]string{}}
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/token" {
			r.serveToken(w, req)
			return
		}
		if req.URL.Path == "/v2/" {
			r.pings.Add(1)
		}
		if !r.authorized(req) {
			scope := ""
			if repo, _, ok := strings.Cut(strings.TrimPrefix(req.URL.Path, "/v2/"), "/manifests/"); ok {
				scope = "repository:" + repo + ":pull"
			}
			if r.tokenFlow {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="test-registry",scope=%q`, srv.URL+"/token", scope))
			} else {
				w.Header().Set("WWW-Authenticate", `Basic realm="test-registry"`)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		if req.Method == http.MethodHead && strings.Contains(req.URL.Path, "/manifests/") {
			r.count("head " + req.URL.Path)
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

func (r *authRegistry) count(key string) {
	c, _ := r.byKind.LoadOrStore(key, new(atomic.Int32))
	c.(*atomic.Int32).Add(1)
}

func (r *authRegistry) counted(key string) int32 {
	c, ok := r.byKind.Load(key)
	if !ok {
		return 0
	}
	return c.(*atomic.Int32).Load()
}

// counts sums the counters whose key starts with prefix.
func (r *authRegistry) counts(prefix string) (total int32, keys int) {
	r.byKind.Range(func(k, v any) bool {
		if strings.HasPrefix(k.(string), prefix) {
			total += v.(*atomic.Int32).Load()
			keys++
		}
		return true
	})
	return total, keys
}

func (r *authRegistry) authorized(req *http.Request) bool {
	a := req.Header.Get("Authorization")
	if !r.tokenFlow {
		u, p, ok := req.BasicAuth()
		return ok && u == r.user && p == r.pass
	}
	tok, ok := strings.CutPrefix(a, "Bearer ")
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok = r.tokens[tok]
	return ok
}

// serveToken is the token server: basic credentials in, a bearer token for the scope out.
func (r *authRegistry) serveToken(w http.ResponseWriter, req *http.Request) {
	scope := req.URL.Query().Get("scope")
	r.count("token " + scope)
	if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
		body := `{"errors":[{"code":"UNAUTHORIZED","message":"invalid username or password"}]}`
		if r.echo {
			body = fmt.Sprintf(`{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials: %s (%s:%s)"}]}`, req.Header.Get("Authorization"), u, p)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, body)
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := "tok-" + hex.EncodeToString(b)
	r.mu.Lock()
	r.tokens[tok] = scope
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "access_token": tok, "expires_in": 300})
}

// issued are the tokens the token server handed out.
func (r *authRegistry) issued() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for tok := range r.tokens {
		out = append(out, tok)
	}
	return out
}

// push writes a random image to repo:tag with the registry's credentials.
func (r *authRegistry) push(t testing.TB, repoTag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	ref, err := name.NewTag(r.host+"/"+repoTag, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img, remote.WithContext(t.Context()), remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pass})))
	return ref.String()
}

func basicAuth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// pullSecret is a kubernetes.io/dockerconfigjson Secret for host, or with legacy a
// kubernetes.io/dockercfg one.
func pullSecret(name, host, user, pass string, legacy bool) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "npu"}}
	if legacy {
		s.Type = corev1.SecretTypeDockercfg
		s.Data = map[string][]byte{corev1.DockerConfigKey: fmt.Appendf(nil, `{%q:{"auth":%q}}`, host, basicAuth(user, pass))}
		return s
	}
	s.Type = corev1.SecretTypeDockerConfigJson
	s.Data = map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"username":%q,"password":%q}}}`, host, user, pass)}
	return s
}

func configFile(t *testing.T, host, user, pass string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(f, fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, host, basicAuth(user, pass)), 0o600))
	return f
}

// leaks fails when any secret shows in the results: their messages, errors and JSON.
func leaks(t *testing.T, results map[string]ImageResult, secrets ...string) {
	t.Helper()
	var all strings.Builder
	for _, r := range results {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		all.Write(b)
		all.WriteString(r.Message + r.Cause())
		if r.Err != nil {
			all.WriteString(r.Err.Error())
		}
	}
	for _, s := range secrets {
		assert.NotContains(t, all.String(), s, "a credential in the output")
	}
}

// TestCheckAuthenticates (SPEC §12): against registries that want credentials — basic auth,
// and the token flow — a published image is found and an unpublished one is
// DriverImageNotFound with the right credentials from each source; with none, none matching,
// or wrong ones, every image is a warning that says why and names what was tried; no
// password, token or Authorization header shows anywhere.
func TestCheckAuthenticates(t *testing.T) {
	t.Parallel()
	for _, flow := range []string{"basic", "token"} {
		t.Run(flow, func(t *testing.T) {
			t.Parallel()
			reg := newAuthRegistry(t, "robot", "s3cret-pa55", flow == "token")
			present := reg.push(t, "rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04")
			missing := reg.host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-91-generic-ubuntu22.04"
			images := []string{present, missing}
			right := SecretSource(pullSecret("drivercred", reg.host, "robot", "s3cret-pa55", false))
			wrong := SecretSource(pullSecret("stale", reg.host, "robot", "old-pa55word", false))
			other := SecretSource(pullSecret("other", "registry.example.com", "robot", "s3cret-pa55", false))

			tests := []struct {
				name        string
				keyring     Keyring
				status      map[string]Status
				reason      Reason
				says        []string
				credentials []string
			}{
				{name: "dockerconfigjson Secret", keyring: Keyring{right},
					status: map[string]Status{present: Found, missing: NotFound}, credentials: []string{"Secret npu/drivercred"}},
				{name: "dockercfg Secret", keyring: Keyring{SecretSource(pullSecret("legacy", "https://"+reg.host+"/v1/", "robot", "s3cret-pa55", true))},
					status: map[string]Status{present: Found, missing: NotFound}, credentials: []string{"Secret npu/legacy"}},
				{name: "--registry-config", keyring: Keyring{FileSource(sourceRegistryConfigFlag, configFile(t, reg.host, "robot", "s3cret-pa55"))},
					status: map[string]Status{present: Found, missing: NotFound}},
				{name: "a stale Secret first, then the right one: tried in order, as the kubelet does", keyring: Keyring{wrong, right},
					status: map[string]Status{present: Found, missing: NotFound}, credentials: []string{"Secret npu/stale", "Secret npu/drivercred"}},
				{name: "a Secret that is missing, then the right one", keyring: Keyring{MissingSecret("npu", "gone", fmt.Errorf("not found")), right},
					status: map[string]Status{present: Found, missing: NotFound}, credentials: []string{"Secret npu/drivercred"}},
				{name: "no credentials", keyring: nil,
					status: map[string]Status{present: Warning, missing: Warning}, reason: ReasonUnauthorized,
					says: []string{"refused an anonymous request (401 Unauthorized)", "no credentials were given"}},
				{name: "none for this host", keyring: Keyring{other},
					status: map[string]Status{present: Warning, missing: Warning}, reason: ReasonUnauthorized,
					says: []string{"no credentials for " + reg.host + " in Secret npu/other"}},
				{name: "wrong password", keyring: Keyring{wrong},
					status: map[string]Status{present: Warning, missing: Warning}, reason: ReasonUnauthorized,
					says: []string{"the registry refused the credentials of Secret npu/stale (401 Unauthorized) for " + reg.host}, credentials: []string{"Secret npu/stale"}},
				{name: "the Secret is missing", keyring: Keyring{MissingSecret("npu", "drivercred", fmt.Errorf("not found in namespace npu"))},
					status: map[string]Status{present: Warning, missing: Warning}, reason: ReasonUnauthorized,
					says: []string{"Secret npu/drivercred: not found in namespace npu"}},
				{name: "not a pull Secret", keyring: Keyring{SecretSource(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: "npu"}, Type: corev1.SecretTypeTLS})},
					status: map[string]Status{present: Warning, missing: Warning}, reason: ReasonUnauthorized,
					says: []string{`Secret npu/tls: of type "kubernetes.io/tls", not a pull Secret`}},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					got := NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), images, Fixed(tc.keyring))
					for img, want := range tc.status {
						r := got[img]
						assert.Equal(t, want, r.Status, "%s: %s", img, r.Message)
						if want == Warning {
							assert.Equal(t, tc.reason, r.Reason)
							for _, s := range tc.says {
								assert.Contains(t, r.Message, s)
							}
						}
						if tc.credentials != nil {
							assert.Equal(t, tc.credentials, r.Credentials)
						}
					}
					if tc.status[missing] == NotFound {
						assert.Contains(t, got[missing].Message, "driver image "+missing+" not found", "names the exact path")
					}
					leaks(t, got, append([]string{"s3cret-pa55", "old-pa55word", basicAuth("robot", "s3cret-pa55"), basicAuth("robot", "old-pa55word")}, reg.issued()...)...)
				})
			}
		})
	}
}

// TestCheckOfflineKeyring: the CLI's credentials with files — --registry-config, else Helm's
// registry config, then the Docker config — are found where Helm and docker keep them.
func TestCheckOfflineKeyring(t *testing.T) {
	reg := newAuthRegistry(t, "robot", "s3cret-pa55", true)
	present := reg.push(t, "rebellions/rebel/rbln-driver:3.2.2")
	missing := reg.host + "/rebellions/rebel/rbln-driver:9.9.9"
	dockerDir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dockerDir)
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(t.TempDir(), "none.json"))

	k, err := OfflineKeyring("")
	require.NoError(t, err)
	assert.Empty(t, k, "no file exists: anonymous")

	require.NoError(t, os.WriteFile(filepath.Join(dockerDir, "config.json"), fmt.Appendf(nil, `{"auths":{"https://%s":{"auth":%q}}}`, reg.host, basicAuth("robot", "s3cret-pa55")), 0o600))
	k, err = OfflineKeyring("")
	require.NoError(t, err)
	require.Len(t, k, 1)
	got := NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{present, missing}, Fixed(k))
	assert.Equal(t, Found, got[present].Status, got[present].Message)
	assert.Equal(t, NotFound, got[missing].Status, got[missing].Message)
	assert.Equal(t, []string{"Docker config " + filepath.Join(dockerDir, "config.json")}, got[present].Credentials)

	// Helm's registry config, stale, before the Docker config: refused, then the next works.
	helmCfg := configFile(t, reg.host, "robot", "expired")
	t.Setenv("HELM_REGISTRY_CONFIG", helmCfg)
	k, err = OfflineKeyring("")
	require.NoError(t, err)
	got = NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{present}, Fixed(k))
	assert.Equal(t, Found, got[present].Status, got[present].Message)
	assert.Equal(t, []string{"Helm registry config " + helmCfg, "Docker config " + filepath.Join(dockerDir, "config.json")}, got[present].Credentials)

	// --registry-config replaces Helm's registry config, and must exist.
	_, err = OfflineKeyring(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorContains(t, err, "--registry-config")
	_, err = OfflineKeyring(t.TempDir())
	require.ErrorContains(t, err, "a directory")
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{not json"), 0o600))
	k, err = OfflineKeyring(bad)
	require.NoError(t, err)
	assert.Contains(t, k[0].Problem, "does not parse")
	assert.Equal(t, "Docker config "+filepath.Join(dockerDir, "config.json"), k[1].Name, "Helm's registry config is replaced")
}

// TestCheckRedactsEchoedCredentials: a token server that repeats the Authorization header
// and the password in its error cannot make driverguard print them.
func TestCheckRedactsEchoedCredentials(t *testing.T) {
	t.Parallel()
	reg := newAuthRegistry(t, "robot", "s3cret-pa55", true)
	img := reg.push(t, "rebellions/atom/rbln-driver:1.0")
	reg.echo = true
	got := NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{img},
		Fixed(Keyring{SecretSource(pullSecret("stale", reg.host, "robot", "old-pa55word", false))}))
	require.Equal(t, Warning, got[img].Status)
	assert.Contains(t, got[img].Message, "[redacted]", "the echo was there, and is gone")
	leaks(t, got, "old-pa55word", basicAuth("robot", "old-pa55word"), "s3cret-pa55")
}

// TestGuardRefusesPlainHTTP: plain HTTP only on loopback and for --insecure-registry hosts;
// a request elsewhere, a token realm included, never leaves the machine with its credentials.
func TestGuardRefusesPlainHTTP(t *testing.T) {
	t.Parallel()
	sent := 0
	g := &guard{inner: roundTripFunc(func(*http.Request) (*http.Response, error) { sent++; return nil, io.EOF }),
		insecure: insecureHosts([]string{"mirror.example.com:5000"}), secrets: &secrets{}}
	for _, u := range []string{"http://auth.example.com/token", "http://10.0.0.1:5000/v2/", "http://mirror.example.com:5001/v2/"} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		req.SetBasicAuth("robot", "s3cret-pa55")
		_, err = g.RoundTrip(req)
		var plain *PlainHTTPError
		require.ErrorAs(t, err, &plain, u)
		assert.Equal(t, classify(err), ReasonPlainHTTP)
	}
	assert.Zero(t, sent, "nothing left the machine")
	for _, u := range []string{"http://127.0.0.1:5000/v2/", "http://localhost:5000/v2/", "http://[::1]:5000/v2/", "http://mirror.example.com:5000/v2/", "https://auth.example.com/token"} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		_, _ = g.RoundTrip(req)
	}
	assert.Equal(t, 5, sent)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestCheckPlainHTTPRegistry: a registry on a private address that speaks only plain HTTP is
// asked only when given with --insecure-registry.
func TestCheckPlainHTTPRegistry(t *testing.T) {
	t.Parallel()
	reg := newAuthRegistry(t, "robot", "s3cret-pa55", false)
	reg.push(t, "rebellions/atom/rbln-driver:1.0")
	// A private address (go-containerregistry would fall back to plain HTTP for it), dialled
	// to the loopback registry.
	const private = "10.23.45.67:5000"
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, reg.host)
	}
	img := private + "/rebellions/atom/rbln-driver:1.0"
	k := Fixed(Keyring{SecretSource(pullSecret("drivercred", private, "robot", "s3cret-pa55", false))})

	got := NewChecker(Options{Timeout: 5 * time.Second, Transport: tr}).Check(t.Context(), []string{img}, k)
	assert.Equal(t, Warning, got[img].Status)
	assert.Equal(t, ReasonPlainHTTP, got[img].Reason, got[img].Message)
	assert.Contains(t, got[img].Message, "--insecure-registry")

	for _, insecure := range []string{private, "10.23.45.67", "http://" + private + "/"} {
		got = NewChecker(Options{Timeout: 5 * time.Second, Transport: tr, InsecureRegistries: []string{insecure}}).Check(t.Context(), []string{img}, k)
		assert.Equal(t, Found, got[img].Status, "%s: %s", insecure, got[img].Message)
	}
}

// Package registrytest serves in-process OCI registries that want credentials, for the tests
// of the registry check (README.md "Private registries"): go-containerregistry's pkg/registry behind HTTP basic auth
// or behind the registry token flow, counting what it is asked.
package registrytest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Registry is an in-process OCI registry on loopback that wants credentials: HTTP basic auth,
// or the registry token flow, where its token endpoint (on the registry's own address:
// go-containerregistry refuses a token realm on another loopback or private address) hands
// out bearer tokens for a scope to the right basic credentials.
type Registry struct {
	// Host is host:port of the registry.
	Host       string
	user, pass string
	tokenFlow  bool
	echo       atomic.Bool
	tokenBody  atomic.Pointer[string]
	mu         sync.Mutex
	tokens     map[string]string // token → scope
	pings      atomic.Int32
	byKind     sync.Map // "token "+scope or "head "+path → *atomic.Int32
}

// New serves a registry that wants user and pass, by basic auth or, with tokenFlow, by the
// token flow; it stops with the test.
func New(t testing.TB, user, pass string, tokenFlow bool) *Registry {
	t.Helper()
	r := &Registry{user: user, pass: pass, tokenFlow: tokenFlow, tokens: map[string]string{}}
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.Host = serve(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
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
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="test-registry",scope=%q`, "http://"+req.Host+"/token", scope))
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
	return r
}

// TokenBody makes the token endpoint answer the right credentials with body instead of a
// token: a registry whose answer go-containerregistry cannot use, and repeats in its error.
func (r *Registry) TokenBody(body string) { r.tokenBody.Store(&body) }

// Echo makes the token endpoint hostile: its 401 repeats the credentials it was sent.
func (r *Registry) Echo() { r.echo.Store(true) }

func (r *Registry) count(key string) {
	c, _ := r.byKind.LoadOrStore(key, new(atomic.Int32))
	c.(*atomic.Int32).Add(1)
}

// Counted is the number of requests of one kind: "token <scope>", "head <path>".
func (r *Registry) Counted(key string) int32 {
	c, ok := r.byKind.Load(key)
	if !ok {
		return 0
	}
	return c.(*atomic.Int32).Load()
}

// Counts sums the requests whose kind starts with prefix ("token ", "head "), and says how
// many distinct kinds that is.
func (r *Registry) Counts(prefix string) (total int32, kinds int) {
	r.byKind.Range(func(k, v any) bool {
		if strings.HasPrefix(k.(string), prefix) {
			total += v.(*atomic.Int32).Load()
			kinds++
		}
		return true
	})
	return total, kinds
}

// Pings is the number of /v2/ pings.
func (r *Registry) Pings() int32 { return r.pings.Load() }

func (r *Registry) authorized(req *http.Request) bool {
	if !r.tokenFlow {
		u, p, ok := req.BasicAuth()
		return ok && u == r.user && p == r.pass
	}
	tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok = r.tokens[tok]
	return ok
}

// serveToken is the token endpoint: basic credentials in, a bearer token for the scope out.
func (r *Registry) serveToken(w http.ResponseWriter, req *http.Request) {
	scope := req.URL.Query().Get("scope")
	r.count("token " + scope)
	if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
		body := `{"errors":[{"code":"UNAUTHORIZED","message":"invalid username or password"}]}`
		if r.echo.Load() {
			body = fmt.Sprintf(`{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials: %s (%s:%s)"}]}`, req.Header.Get("Authorization"), u, p)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, body)
		return
	}
	if body := r.tokenBody.Load(); body != nil {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, *body)
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

// Issued are the tokens the token endpoint handed out: none may show in any output.
func (r *Registry) Issued() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.tokens))
	for tok := range r.tokens {
		out = append(out, tok)
	}
	return out
}

// Push writes a random image to repo:tag (or to a full reference on this registry) with the
// registry's credentials, and returns its reference.
func (r *Registry) Push(t testing.TB, repoTag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	ref, err := name.NewTag(r.Host+"/"+strings.TrimPrefix(repoTag, r.Host+"/"), name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img, remote.WithContext(t.Context()), remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pass})))
	return ref.String()
}

// Delete removes the manifest of ref from the registry.
func (r *Registry) Delete(t testing.TB, ref string) {
	t.Helper()
	n, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Delete(n, remote.WithContext(t.Context()), remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pass})))
}

// BasicAuth is the "auth" of a Docker config: base64 of user:pass.
func BasicAuth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// PullSecret is a kubernetes.io/dockerconfigjson Secret for host in namespace or, with
// legacy, a kubernetes.io/dockercfg one.
func PullSecret(namespace, secretName, host, user, pass string, legacy bool) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: namespace}}
	if legacy {
		s.Type = corev1.SecretTypeDockercfg
		s.Data = map[string][]byte{corev1.DockerConfigKey: fmt.Appendf(nil, `{%q:{"auth":%q}}`, host, BasicAuth(user, pass))}
		return s
	}
	s.Type = corev1.SecretTypeDockerConfigJson
	s.Data = map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"username":%q,"password":%q}}}`, host, user, pass)}
	return s
}

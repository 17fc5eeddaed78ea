package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/registry/registrytest"
)

// pullSecret is a pull Secret in namespace npu.
func pullSecret(name, host, user, pass string, legacy bool) *corev1.Secret {
	return registrytest.PullSecret("npu", name, host, user, pass, legacy)
}

func configFile(t *testing.T, host, user, pass string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(f, fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, host, registrytest.BasicAuth(user, pass)), 0o600))
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

// TestCheckAuthenticates (README.md "Private registries"): against registries that want credentials — basic auth,
// and the token flow — a published image is found and an unpublished one is
// DriverImageNotFound with the right credentials from each source; with none, none matching,
// or wrong ones, every image is a warning that says why and names what was tried; no
// password, token or Authorization header shows anywhere.
func TestCheckAuthenticates(t *testing.T) {
	t.Parallel()
	for _, flow := range []string{"basic", "token"} {
		t.Run(flow, func(t *testing.T) {
			t.Parallel()
			reg := registrytest.New(t, "robot", "s3cret-pa55", flow == "token")
			present := reg.Push(t, "rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04")
			missing := reg.Host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-91-generic-ubuntu22.04"
			images := []string{present, missing}
			right := SecretSource(pullSecret("drivercred", reg.Host, "robot", "s3cret-pa55", false))
			wrong := SecretSource(pullSecret("stale", reg.Host, "robot", "old-pa55word", false))
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
				{name: "dockercfg Secret", keyring: Keyring{SecretSource(pullSecret("legacy", "https://"+reg.Host+"/v1/", "robot", "s3cret-pa55", true))},
					status: map[string]Status{present: Found, missing: NotFound}, credentials: []string{"Secret npu/legacy"}},
				{name: "--registry-config", keyring: Keyring{FileSource(sourceRegistryConfigFlag, configFile(t, reg.Host, "robot", "s3cret-pa55"))},
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
					says: []string{"no credentials for " + reg.Host + " in Secret npu/other"}},
				{name: "wrong password", keyring: Keyring{wrong},
					status: map[string]Status{present: Warning, missing: Warning}, reason: ReasonUnauthorized,
					says: []string{"the registry refused the credentials of Secret npu/stale (401 Unauthorized) for " + reg.Host}, credentials: []string{"Secret npu/stale"}},
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
					leaks(t, got, append([]string{"s3cret-pa55", "old-pa55word", registrytest.BasicAuth("robot", "s3cret-pa55"), registrytest.BasicAuth("robot", "old-pa55word")}, reg.Issued()...)...)
				})
			}
		})
	}
}

// TestCheckOfflineKeyring: the CLI's credentials with files — --registry-config, else Helm's
// registry config, then the Docker config — are found where Helm and docker keep them.
func TestCheckOfflineKeyring(t *testing.T) {
	reg := registrytest.New(t, "robot", "s3cret-pa55", true)
	present := reg.Push(t, "rebellions/rebel/rbln-driver:3.2.2")
	missing := reg.Host + "/rebellions/rebel/rbln-driver:9.9.9"
	dockerDir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dockerDir)
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(t.TempDir(), "none.json"))

	k, err := OfflineKeyring("")
	require.NoError(t, err)
	assert.Empty(t, k, "no file exists: anonymous")

	require.NoError(t, os.WriteFile(filepath.Join(dockerDir, "config.json"), fmt.Appendf(nil, `{"auths":{"https://%s":{"auth":%q}}}`, reg.Host, registrytest.BasicAuth("robot", "s3cret-pa55")), 0o600))
	k, err = OfflineKeyring("")
	require.NoError(t, err)
	require.Len(t, k, 1)
	got := NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{present, missing}, Fixed(k))
	assert.Equal(t, Found, got[present].Status, got[present].Message)
	assert.Equal(t, NotFound, got[missing].Status, got[missing].Message)
	assert.Equal(t, []string{"Docker config " + filepath.Join(dockerDir, "config.json")}, got[present].Credentials)

	// Helm's registry config, stale, before the Docker config: refused, then the next works.
	helmCfg := configFile(t, reg.Host, "robot", "expired")
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
	_, err = OfflineKeyring(bad)
	require.ErrorContains(t, err, "does not parse as a Docker config", "a file named by the flag that cannot be used is an error")
	for name, content := range map[string]string{"not-base64.json": `{"auths":{"h":{"auth":"%%%"}}}`, "list.json": `[]`} {
		f := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(f, []byte(content), 0o600))
		_, err = OfflineKeyring(f)
		require.ErrorContains(t, err, "--registry-config "+f, name)
	}
	_, err = OfflineKeyring("/dev/zero")
	require.ErrorContains(t, err, "not a regular file")
	k, err = OfflineKeyring(right(t, reg.Host))
	require.NoError(t, err)
	assert.Equal(t, "Docker config "+filepath.Join(dockerDir, "config.json"), k[1].Name, "Helm's registry config is replaced")

	// The Docker config unusable: a source that says why, for the warnings.
	require.NoError(t, os.WriteFile(filepath.Join(dockerDir, "config.json"), []byte("{not json"), 0o600))
	k, err = OfflineKeyring("")
	require.NoError(t, err)
	assert.Contains(t, k[len(k)-1].Problem, "does not parse")
}

func right(t *testing.T, host string) string {
	return configFile(t, host, "robot", "s3cret-pa55")
}

// TestCheckRedactsEchoedCredentials: a token server that repeats the Authorization header
// and the password in its error, or answers with tokens go-containerregistry cannot use
// (which it then repeats in its error), cannot make driverguard print them: an HTTP answer is
// described by its status and the spec's error codes, any other failure by its type, never
// by the registry's words (TestHostileRegistriesGetNoCredentialBack has the rest).
func TestCheckRedactsEchoedCredentials(t *testing.T) {
	t.Parallel()
	reg := registrytest.New(t, "robot", "s3cret-pa55", true)
	img := reg.Push(t, "rebellions/atom/rbln-driver:1.0")
	reg.Echo()
	got := NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{img},
		Fixed(Keyring{SecretSource(pullSecret("stale", reg.Host, "robot", "old-pa55word", false))}))
	require.Equal(t, Warning, got[img].Status)
	assert.Contains(t, got[img].Message, "the token request to "+reg.Host+" was answered 401 Unauthorized (UNAUTHORIZED)")
	leaks(t, got, "old-pa55word", registrytest.BasicAuth("robot", "old-pa55word"), "s3cret-pa55", "bad credentials")

	for _, body := range []string{
		`{"accessToken":"TOK-ISSUED-777","id_token":"JWT-ISSUED-888"}`,
		`{"token":"","refresh_token":"abc\"TOK-ESCAPED-999"}`,
	} {
		reg.TokenBody(body)
		got = NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{img},
			Fixed(Keyring{SecretSource(pullSecret("drivercred", reg.Host, "robot", "s3cret-pa55", false))}))
		require.Equal(t, Warning, got[img].Status, body)
		assert.Contains(t, got[img].Message, "the token endpoint answered without a token", "the body is not repeated: what went wrong is said in driverguard's words")
		leaks(t, got, "TOK-ISSUED-777", "JWT-ISSUED-888", "TOK-ESCAPED-999", "s3cret-pa55")
	}
}

// TestSecretForms: a secret is removed in every form it travels in.
func TestSecretForms(t *testing.T) {
	s := &secrets{}
	s.addConfig(authn.AuthConfig{IdentityToken: "ID+TOK/IDENT=x&y", Username: "robot", Password: `pa"ss`})
	for _, form := range []string{"ID+TOK/IDENT=x&y", "ID%2BTOK%2FIDENT%3Dx%26y", `pa\"ss`, `pa"ss`, registrytest.BasicAuth("robot", `pa"ss`)} {
		assert.NotContains(t, s.redact("refresh_token="+form+" or "+form), form)
	}
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
		assert.Equal(t, classify(err, false), ReasonPlainHTTP)
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
	reg := registrytest.New(t, "robot", "s3cret-pa55", false)
	reg.Push(t, "rebellions/atom/rbln-driver:1.0")
	// A private address (go-containerregistry would fall back to plain HTTP for it), dialled
	// to the loopback registry.
	const private = "10.23.45.67:5000"
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, reg.Host)
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

// TestOnlyTheManifestsNotFound: only a 404 to the manifest request of the image itself is
// NotFound; a 404 from a token endpoint whose path holds "/manifests/", from the ping, or for
// another repository is not.
func TestOnlyTheManifestsNotFound(t *testing.T) {
	ref, err := name.ParseReference("127.0.0.1:5000/rebellions/atom/rbln-driver:3.2.2")
	require.NoError(t, err)
	for u, want := range map[string]bool{
		"http://127.0.0.1:5000/v2/rebellions/atom/rbln-driver/manifests/3.2.2":   true,
		"http://127.0.0.1:5000/manifests/token":                                  false,
		"http://127.0.0.1:5000/v2/":                                              false,
		"http://127.0.0.1:5000/v2/rebellions/rebel/rbln-driver/manifests/3.2.2":  false,
		"http://127.0.0.1:5001/v2/rebellions/atom/rbln-driver/manifests/3.2.2":   false,
		"http://127.0.0.1:5000/v2/rebellions/atom/rbln-driver/manifests/3.2.2/x": false,
	} {
		req, err := http.NewRequest(http.MethodHead, u, nil)
		require.NoError(t, err)
		assert.Equal(t, want, isManifestNotFound(&transport.Error{StatusCode: http.StatusNotFound, Request: req}, ref), u)
	}
}

// TestTimeoutIsTimeout: the images of one repository share its ping; when the registry never
// answers, every one of them is a timeout, whichever deadline ended the shared ping.
func TestTimeoutIsTimeout(t *testing.T) {
	t.Parallel()
	host := silent(t)
	var images []string
	for i := range 6 {
		images = append(images, fmt.Sprintf("%s/rebellions/atom/rbln-driver:3.2.%d", host, i))
	}
	got := NewChecker(Options{Timeout: 700 * time.Millisecond, Concurrency: 6}).Check(t.Context(), images, nil)
	for _, img := range images {
		assert.Equal(t, ReasonTimeout, got[img].Reason, got[img].Message)
	}
}

package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/registry/registrytest"
)

// The credentials of the hostile registries: a password whose base64 (with the user) holds
// "/" and "+" and needs padding, and one the old code let through as an error code (an
// upper-case word).
const (
	hostileUser  = "robot"
	hostilePass  = "s3?cr~et/pa+ss&xy"
	hostileUpper = "ROBOT_PASSWORD_SECRET"
)

// hostilePassword is the password a hostile registry wants.
func hostilePassword(how registrytest.Misbehaviour) string {
	if how == registrytest.CodeIsPassword || how == registrytest.SplitPassword {
		return hostileUpper
	}
	return hostilePass
}

// hostileExpect is what the check of a hostile registry's image says, per pass (the second
// pass of MalformedRealm meets the realm that carries the first pass's Authorization).
var hostileExpect = map[registrytest.Misbehaviour][2]struct {
	reason Reason
	says   string
}{
	registrytest.MalformedRealm: {
		{ReasonUnauthorized, "the registry refused the credentials of Secret npu/drivercred (401 Unauthorized)"},
		{ReasonOther, "the registry's authentication challenge is malformed: its token realm is not a URL"}},
	registrytest.TokenEchoJSON: {
		{ReasonOther, "the token endpoint answered without a token"},
		{ReasonOther, "the token endpoint answered without a token"}},
	registrytest.CodeIsPassword: {
		{ReasonUnauthorized, "was answered 401 Unauthorized (UNAUTHORIZED): the token endpoint refused the credentials"},
		{ReasonUnauthorized, "was answered 401 Unauthorized (UNAUTHORIZED): the token endpoint refused the credentials"}},
	registrytest.SplitPassword: {
		{ReasonUnauthorized, "was answered 401 Unauthorized (UNAUTHORIZED, DENIED)"},
		{ReasonUnauthorized, "was answered 401 Unauthorized (UNAUTHORIZED, DENIED)"}},
	registrytest.Base64Echo: {
		{ReasonUnauthorized, "the token request to %s was answered 401 Unauthorized (UNAUTHORIZED)"},
		{ReasonUnauthorized, "the token request to %s was answered 401 Unauthorized (UNAUTHORIZED)"}},
	registrytest.URLEncodedEcho: {
		{ReasonUnauthorized, "the token request to %s was answered 401 Unauthorized: the token endpoint refused"},
		{ReasonUnauthorized, "the token request to %s was answered 401 Unauthorized: the token endpoint refused"}},
	registrytest.CredentialRealm: {
		{ReasonUnauthorized, "the token request to %s was answered 401 Unauthorized (DENIED)"},
		{ReasonUnauthorized, "the token request to %s was answered 401 Unauthorized (DENIED)"}},
	registrytest.CredentialRealmHost: {
		{ReasonPlainHTTP, "the token realm the registry's challenge names is on another host and in plain HTTP"},
		{ReasonPlainHTTP, "the token realm the registry's challenge names is on another host and in plain HTTP"}},
	registrytest.CredentialRealmDNS: {
		{ReasonDNS, "the token request to the token endpoint the registry's challenge names (another host) failed: the host name does not resolve"},
		{ReasonDNS, "the token request to the token endpoint the registry's challenge names (another host) failed: the host name does not resolve"}},
}

// hostileNever are the strings no output about a hostile registry may hold: every form of
// its credentials, every Authorization it was sent, what it wrote (its marker), and for the
// registries that split the password, each half.
func hostileNever(h *registrytest.Hostile) []string {
	out := append(h.Forms(), registrytest.Marker)
	if h.How == registrytest.SplitPassword {
		pass := hostilePassword(h.How)
		out = append(out, pass[:len(pass)/2], pass[len(pass)/2:])
		for _, a := range h.Seen() {
			out = append(out, a[:len(a)/2], a[len(a)/2:])
		}
	}
	return out
}

// dnsFails is a transport that reaches only host: every other name does not resolve, as if
// asked of a resolver (the credential in the name never leaves the test).
func dnsFails(host string) http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == host {
			return dial(ctx, network, addr)
		}
		h, _, _ := net.SplitHostPort(addr)
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: h, IsNotFound: true}}
	}
	return tr
}

// TestHostileRegistriesGetNoCredentialBack (docs/audit.md "serve --audit": credentials never appear in output):
// registries built to make the check repeat the credentials it sends — a token realm that is
// no URL and carries the Authorization seen in the pass before, a token answer that echoes the
// Authorization in JSON with "/" written "\/", an error code that is the password, the
// password split across two codes and messages, base64 padded and not, URL-encoded echoes, a
// realm URL that holds the credential in its user info, query or host name (plain HTTP, or a
// name that does not resolve) — get, over two passes of one Checker, with the credentials from
// a pull Secret and from a Docker config file, results whose Message, Err, Cause and JSON hold
// no form of the password, of base64 of robot:password, of the Authorization header, nothing
// the registry wrote; and that still say why (the status, the spec's error codes, the reason).
func TestHostileRegistriesGetNoCredentialBack(t *testing.T) {
	// Not parallel with the other tests (its cases are, with each other): the deadlines of
	// TestCheck are short.
	for _, how := range append(registrytest.Misbehaviours, registrytest.CredentialRealmDNS) {
		for _, source := range []string{"Secret", "Docker config"} {
			t.Run(string(how)+"/"+source, func(t *testing.T) {
				t.Parallel()
				pass := hostilePassword(how)
				h := registrytest.NewHostile(t, hostileUser, pass, how)
				img := h.Host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"
				src := SecretSource(pullSecret("drivercred", h.Host, hostileUser, pass, false))
				if source == "Docker config" {
					src = FileSource(sourceDockerConfig, configFile(t, h.Host, hostileUser, pass))
				}
				opts := Options{Timeout: 5 * time.Second}
				if how == registrytest.CredentialRealmDNS {
					opts.Transport = dnsFails(h.Host)
				}
				c := NewChecker(opts)
				for i, want := range hostileExpect[how] {
					got := c.Check(t.Context(), []string{img}, Fixed(Keyring{src}))
					r := got[img]
					require.Equal(t, Warning, r.Status, "pass %d: %s", i+1, r.Message)
					assert.Equal(t, want.reason, r.Reason, "pass %d: %s", i+1, r.Message)
					says := strings.ReplaceAll(want.says, "Secret npu/drivercred", src.Name)
					if strings.Contains(says, "%s") {
						says = fmt.Sprintf(says, h.Host)
					}
					assert.Contains(t, r.Message, says, "pass %d says why", i+1)
					assert.Contains(t, r.Cause(), says, "pass %d", i+1)
					assert.Equal(t, []string{src.Name}, r.Credentials, "names the source, never its content")
					leaks(t, got, hostileNever(h)...)
				}
				if how != registrytest.CredentialRealmHost && how != registrytest.CredentialRealmDNS {
					assert.NotEmpty(t, h.Seen(), "the registry was sent the credentials it tries to get back")
				}
			})
		}
	}
}

// TestDescribeRebuildsEveryFailure: describe says what went wrong from the request's kind, the
// status, the spec's error codes and the error's type — never from a URL, a body, a header or
// an error's text, which a registry writes (here each holds SECRET).
func TestDescribeRebuildsEveryFailure(t *testing.T) {
	t.Parallel()
	const reg = "127.0.0.1:5000"
	req := func(method, u string) *http.Request {
		r, err := http.NewRequest(method, u, nil)
		require.NoError(t, err)
		return r
	}
	tokenReq := req(http.MethodGet, "http://SECRET@"+reg+"/token?scope=repository:a:pull&pw=SECRET")
	tokenReq.SetBasicAuth("robot", "SECRET")
	urlErr := func(u string, err error) error { return &url.Error{Op: "Get", URL: u, Err: err} }
	realm := "https://SECRET.invalid/token?SECRET"
	for _, tc := range []struct {
		name string
		err  error
		says string
	}{
		{"ping answered 404", &transport.Error{StatusCode: 404, Request: req(http.MethodGet, "http://"+reg+"/v2/"),
			Errors: []transport.Diagnostic{{Code: "SECRET", Message: "SECRET"}}},
			"the /v2/ ping of " + reg + " was answered 404 Not Found: nothing answers the registry API (/v2/) there"},
		{"token 401 with codes", &transport.Error{StatusCode: 401, Request: tokenReq,
			Errors: []transport.Diagnostic{{Code: "SECRET_CODE"}, {Code: "UNAUTHORIZED", Message: "SECRET", Detail: "SECRET"}, {Code: "UNAUTHORIZED"}, {Code: "TOOMANYREQUESTS"}}},
			"the token request to " + reg + " was answered 401 Unauthorized (UNAUTHORIZED, TOOMANYREQUESTS): the token endpoint refused"},
		{"token on another host", &transport.Error{StatusCode: 503, Request: req(http.MethodGet, realm+"&scope=x")},
			"the token request to the token endpoint the registry's challenge names (another host) was answered 503 Service Unavailable: the registry failed to answer"},
		{"manifest 403", &transport.Error{StatusCode: 403, Request: req(http.MethodHead, "http://"+reg+"/v2/a/b/manifests/SECRET")},
			"the manifest request to " + reg + " was answered 403 Forbidden: the credentials may not read this repository"},
		{"odd status", &transport.Error{StatusCode: 599, Request: req(http.MethodHead, "http://SECRET.invalid/x")},
			"a request to another host the registry sent the client to was answered HTTP status 599"},
		{"realm not a URL", fmt.Errorf("invalid realm in www-authenticate: %w", fmt.Errorf("parsing realm %q: %w", "%zzSECRET", &url.Error{Op: "parse", URL: "%zzSECRET", Err: errors.New("invalid URL escape SECRET")})),
			"the registry's authentication challenge is malformed: its token realm is not a URL"},
		{"realm scheme", fmt.Errorf("invalid realm in www-authenticate: %w", fmt.Errorf("realm scheme %q not allowed", "SECRET")),
			"names a token realm driverguard refuses: neither HTTPS nor"},
		{"realm private", fmt.Errorf("invalid realm in www-authenticate: %w", fmt.Errorf("realm host %q is a private or link-local address", "SECRET")),
			"on a private or link-local address"},
		{"no realm", fmt.Errorf("malformed www-authenticate, missing realm: %v", map[string]string{"SECRET": "SECRET"}),
			"is malformed: it names no token realm"},
		{"no token", fmt.Errorf("no token in bearer response:\n%s", `{"details":"SECRET\/SECRET"}`), "the token endpoint answered without a token"},
		{"token not JSON", &json.SyntaxError{}, "the token endpoint's answer is not the token"},
		{"redirect refused", urlErr(realm, fmt.Errorf("refusing token-server redirect to %q: %w", realm, errors.New("SECRET"))),
			"redirected the client to an address that is refused"},
		{"DNS of the realm's host", urlErr(realm+"&scope=x", &net.OpError{Op: "dial", Err: &net.DNSError{Name: "SECRET.invalid", Err: "SECRET", IsNotFound: true}}),
			"the token request to the token endpoint the registry's challenge names (another host) failed: the host name does not resolve"},
		{"DNS of the registry", urlErr("https://"+reg+"/v2/", &net.OpError{Op: "dial", Err: &net.DNSError{Name: "127.0.0.1", Err: "SECRET"}}),
			"the /v2/ ping of " + reg + " failed: the host name does not resolve"},
		{"unknown authority", urlErr("https://"+reg+"/v2/", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}),
			"failed: certificate signed by an unknown authority"},
		{"wrong host", urlErr("https://"+reg+"/v2/", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "127.0.0.1"}),
			"failed: certificate is not valid for host " + reg},
		{"wrong host of the realm", urlErr(realm, x509.HostnameError{Certificate: &x509.Certificate{}, Host: "SECRET.invalid"}),
			"certificate is not valid for the host of the token realm"},
		{"expired", urlErr("https://"+reg+"/v2/a/manifests/b", x509.CertificateInvalidError{Reason: x509.Expired, Detail: "SECRET"}),
			"the manifest request to " + reg + " failed: certificate has expired or is not yet valid"},
		{"plain HTTP to the realm's host", urlErr("http://SECRET.invalid/token?scope=x", &PlainHTTPError{Host: "SECRET.invalid"}),
			"failed: plain HTTP refused: the registry's token service must be served over HTTPS"},
		{"refused", urlErr("http://"+reg+"/v2/", &net.OpError{Op: "dial", Err: &net.AddrError{Err: "SECRET", Addr: "SECRET"}}), "failed: could not connect"},
		{"connection refused", urlErr("http://"+reg+"/v2/", &net.OpError{Op: "dial", Err: fmt.Errorf("SECRET: %w", syscall.ECONNREFUSED)}), "connection refused"},
		{"timeout", urlErr("http://"+reg+"/v2/", fmt.Errorf("SECRET: %w", context.DeadlineExceeded)), "failed: timed out"},
		{"plain answer", urlErr("https://"+reg+"/v2/", http.ErrSchemeMismatch), "answered in plain HTTP where HTTPS was expected"},
		{"anything else", urlErr("http://"+reg+"/v2/", errors.New("SECRET")), "a failure driverguard has no words for"},
		{"a bad reference", func() error { _, err := name.ParseReference("127.0.0.1:5000/Atom_X:1"); return err }(), "not a valid image reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := describe(tc.err, reg)
			assert.Contains(t, got, tc.says)
			assert.NotContains(t, strings.ToUpper(got), "SECRET")
		})
	}
}

// TestRedactCoversEveryForm: the second net, applied last to every message, removes a
// credential in every form it travels in — plain, URL-encoded (query, path, escapes in either
// case), JSON-escaped (with "/" as "\/"), base64 of user:password padded and not, standard and
// URL-safe, the Authorization header — whether the pass learnt it from a credential source or
// from an Authorization it sent (basic auth in any base64 encoding).
func TestRedactCoversEveryForm(t *testing.T) {
	t.Parallel()
	forms := registrytest.CredentialForms(hostileUser, hostilePass)
	require.Greater(t, len(forms), 20)
	fromConfig := &secrets{}
	fromConfig.addConfig(authn.AuthConfig{Auth: registrytest.BasicAuth(hostileUser, hostilePass)})
	fromHeader := &secrets{}
	g := &guard{inner: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("not sent") }), secrets: fromHeader}
	r, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/token", nil)
	require.NoError(t, err)
	r.Header.Set("Authorization", "Basic "+strings.TrimRight(registrytest.BasicAuth(hostileUser, hostilePass), "="))
	_, _ = g.RoundTrip(r)
	for name, s := range map[string]*secrets{"config": fromConfig, "header": fromHeader} {
		for _, f := range forms {
			got := s.redact(`{"details":"` + f + `"} and ` + f + ".")
			assert.NotContains(t, got, f, "%s: %s", name, f)
			assert.Contains(t, got, "[redacted]", name)
		}
	}
}

// TestSecretParseProblemsRepeatNothing: a pull Secret whose data does not parse is described
// without a byte of it.
func TestSecretParseProblemsRepeatNothing(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		`{"auths":{"h":{"password":"SECRET-1` /* cut */, `{"auths":{"h":{"auth":"SECRET-2%%"}}}`, `{"auths":{"h":{"password":12345}}}`, `["SECRET-3"]`,
	} {
		s := pullSecret("drivercred", "h", "u", "p", false)
		s.Data[".dockerconfigjson"] = []byte(data)
		src := SecretSource(s)
		assert.Contains(t, src.Problem, "does not parse", data)
		assert.NotContains(t, src.Problem, "SECRET", data)
		assert.NotContains(t, src.Problem, "12345", data)
	}
}

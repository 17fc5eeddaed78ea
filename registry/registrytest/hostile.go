package registrytest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Marker is in every body a Hostile registry writes: no output may repeat it (nothing a
// registry writes is repeated).
const Marker = "HOSTILE-MARKER"

// Misbehaviour is one way a Hostile registry tries to make a client repeat a credential.
type Misbehaviour string

// The ways a Hostile registry misbehaves.
const (
	// MalformedRealm: the /v2/ ping asks for basic auth until a request carried an
	// Authorization (the manifest request it then refuses); from then on the ping's challenge
	// is Bearer with a token realm that is not a URL and carries that Authorization, its
	// base64 padded and not, and the password, plain and URL-encoded.
	MalformedRealm Misbehaviour = "malformed-realm"
	// TokenEchoJSON: the token endpoint answers 200 without a token, the request's
	// Authorization and the password in its JSON, "/" written "\/".
	TokenEchoJSON Misbehaviour = "token-echo-json"
	// CodeIsPassword: the token endpoint answers 401 whose errors[].code is the password.
	CodeIsPassword Misbehaviour = "code-is-password"
	// SplitPassword: the token endpoint answers 401 with the password split across two errors,
	// half in each code and each message.
	SplitPassword Misbehaviour = "split-password"
	// Base64Echo: the token endpoint answers 401 whose message is base64 of user:password,
	// padded and not, standard and URL-safe.
	Base64Echo Misbehaviour = "base64-echo"
	// URLEncodedEcho: the token endpoint answers 401 in plain text: the password and its
	// base64, URL-encoded as a query and as a path.
	URLEncodedEcho Misbehaviour = "url-encoded-echo"
	// CredentialRealm: the token realm is the registry's own token endpoint with the
	// credential in the URL's user info and query; the token endpoint answers 401.
	CredentialRealm Misbehaviour = "credential-realm"
	// CredentialRealmHost: the token realm is on another host, named by the credential
	// (base64, URL-safe, unpadded), over plain HTTP: a client that refuses plain HTTP off
	// loopback never leaves the machine.
	CredentialRealmHost Misbehaviour = "credential-realm-host"
	// CredentialRealmDNS: as CredentialRealmHost over HTTPS: the client resolves a host name
	// that is the credential (the name ends in .invalid, which never resolves).
	CredentialRealmDNS Misbehaviour = "credential-realm-dns"
)

// Misbehaviours are all of them that refuse the credentials but CredentialRealmDNS (which asks
// the resolver).
var Misbehaviours = []Misbehaviour{MalformedRealm, TokenEchoJSON, CodeIsPassword, SplitPassword, Base64Echo, URLEncodedEcho, CredentialRealm, CredentialRealmHost}

// The misbehaviours of a registry that takes the credentials: its token endpoint issues a
// token, an access token and a refresh token to the right user and password (the token flow),
// and it answers every manifest request that carries its token as says.
const (
	// DigestEcho: every manifest is there (200), its Docker-Content-Digest sha256: followed by
	// the hex of the password, padded with zeros to 64 digits (a well-formed digest).
	DigestEcho Misbehaviour = "digest-echo"
	// DigestEchoToken: as DigestEcho with the hex of the refresh token it issued, which the
	// client never sends back.
	DigestEchoToken Misbehaviour = "digest-echo-token"
	// DigestNotOCI: as DigestEcho with the hex in upper case, which is no OCI digest.
	DigestNotOCI Misbehaviour = "digest-not-oci"
	// ServerError: every manifest request is answered 501 Not Implemented (a server error
	// go-containerregistry does not retry: no backoff to wait for), the password and the marker
	// in its body. With a password that is a word of the image reference (a path segment), a client
	// that redacts its own words of the reference prints where the password is.
	ServerError Misbehaviour = "server-error"
)

// DigestMisbehaviours are the registries that answer a manifest with a digest of their choice.
var DigestMisbehaviours = []Misbehaviour{DigestEcho, DigestEchoToken, DigestNotOCI}

// Tokens are what the token endpoint of a registry that takes the credentials issues.
const (
	AccessToken  = "hostile-access-7c1e"
	RefreshToken = "hostile-refresh-93ad"
)

// takesCredentials: how is a misbehaviour of a registry that takes the credentials.
func takesCredentials(how Misbehaviour) bool {
	return how == ServerError || slices.Contains(DigestMisbehaviours, how)
}

// Hostile is a registry on loopback that wants user and pass (basic auth for MalformedRealm,
// the token flow for the others), has no image, and answers as how says: to make its client
// repeat the credentials it was sent.
type Hostile struct {
	// Host is host:port of the registry.
	Host       string
	How        Misbehaviour
	user, pass string
	mu         sync.Mutex
	seen       []string
}

// NewHostile serves a Hostile registry until the test ends.
func NewHostile(t testing.TB, user, pass string, how Misbehaviour) *Hostile {
	t.Helper()
	h := &Hostile{How: how, user: user, pass: pass}
	h.Host = serve(t, http.HandlerFunc(h.serve))
	return h
}

// Seen are the Authorization headers the registry was sent.
func (h *Hostile) Seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

// Forms are the forms of the registry's credentials no output may hold (CredentialForms),
// every Authorization it was sent, and the forms of the tokens it issues (TokenForms) when it
// takes the credentials.
func (h *Hostile) Forms() []string {
	out := append(CredentialForms(h.user, h.pass), h.Seen()...)
	if takesCredentials(h.How) {
		out = append(out, TokenForms()...)
	}
	return out
}

func (h *Hostile) serve(w http.ResponseWriter, req *http.Request) {
	auth := req.Header.Get("Authorization")
	if auth != "" {
		h.mu.Lock()
		h.seen = append(h.seen, auth)
		h.mu.Unlock()
	}
	switch {
	case req.URL.Path == "/token" && takesCredentials(h.How):
		h.issue(w, req)
	case req.URL.Path == "/token":
		h.token(w, req, auth)
	case takesCredentials(h.How) && auth == "Bearer "+AccessToken && strings.Contains(req.URL.Path, "/manifests/"):
		h.manifest(w)
	case h.How == MalformedRealm && req.URL.Path == "/v2/":
		if seen := h.Seen(); len(seen) > 0 {
			last := seen[len(seen)-1]
			basic := strings.TrimPrefix(last, "Basic ")
			realm := "%zz " + strings.Join([]string{last, strings.TrimRight(basic, "="), h.pass, url.QueryEscape(h.pass), url.QueryEscape(basic)}, " ")
			h.challenge(w, "Bearer realm="+quote(realm)+`,service="hostile"`)
			return
		}
		h.challenge(w, `Basic realm="hostile"`)
	case h.How == MalformedRealm:
		h.challenge(w, `Basic realm="hostile"`) // refused, but now the Authorization is known
	default:
		h.challenge(w, "Bearer realm="+quote(h.realm())+`,service="hostile"`)
	}
}

// realm is the token realm the registry's challenge names.
func (h *Hostile) realm() string {
	b64 := base64.RawURLEncoding.EncodeToString([]byte(h.user + ":" + h.pass))
	switch h.How {
	case CredentialRealm:
		q := url.Values{"password": {h.pass}, "auth": {base64.StdEncoding.EncodeToString([]byte(h.user + ":" + h.pass))}}
		return "http://" + url.UserPassword(h.user, h.pass).String() + "@" + h.Host + "/token?" + q.Encode()
	case CredentialRealmHost:
		return "http://" + b64 + ".invalid/token"
	case CredentialRealmDNS:
		return "https://" + b64 + ".invalid/token"
	}
	return "http://" + h.Host + "/token"
}

func (h *Hostile) challenge(w http.ResponseWriter, challenge string) {
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"`+Marker+` authentication required"}]}`)
}

// issue is the token endpoint of a registry that takes the credentials: tokens to the right
// user and password.
func (h *Hostile) issue(w http.ResponseWriter, req *http.Request) {
	if u, p, ok := req.BasicAuth(); !ok || u != h.user || p != h.pass {
		h.challenge(w, `Basic realm="hostile"`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": AccessToken, "access_token": AccessToken, "refresh_token": RefreshToken, "expires_in": 300})
}

// manifest answers a manifest request with the token (takesCredentials).
func (h *Hostile) manifest(w http.ResponseWriter) {
	digest := func(secret string) string {
		b := make([]byte, 32)
		copy(b, secret)
		return "sha256:" + hex.EncodeToString(b)
	}
	switch h.How {
	case ServerError:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = fmt.Fprintf(w, "%s %s\n", Marker, h.pass)
		return
	case DigestEcho:
		w.Header().Set("Docker-Content-Digest", digest(h.pass))
	case DigestEchoToken:
		w.Header().Set("Docker-Content-Digest", digest(RefreshToken))
	case DigestNotOCI:
		w.Header().Set("Docker-Content-Digest", strings.ToUpper(digest(h.pass)))
	}
	w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	w.Header().Set("Content-Length", "100")
	w.WriteHeader(http.StatusOK)
}

// token is the token endpoint: never a token.
func (h *Hostile) token(w http.ResponseWriter, req *http.Request, auth string) {
	userpass := h.user + ":" + h.pass
	type diag struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	refuse := func(errs ...diag) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string][]diag{"errors": errs})
	}
	switch h.How {
	case TokenEchoJSON:
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"token":"","details":"%s %s","password":"%s","auth":"%s"}`,
			Marker, slashes(auth), slashes(h.pass), slashes(base64.RawStdEncoding.EncodeToString([]byte(userpass))))
	case CodeIsPassword:
		refuse(diag{Code: h.pass, Message: Marker + " " + auth}, diag{Code: "UNAUTHORIZED", Message: Marker})
	case SplitPassword:
		half := len(h.pass) / 2
		refuse(diag{Code: h.pass[:half], Message: h.pass[:half]}, diag{Code: h.pass[half:], Message: h.pass[half:] + " " + Marker},
			diag{Code: "UNAUTHORIZED", Message: auth[:len(auth)/2]}, diag{Code: "DENIED", Message: auth[len(auth)/2:]})
	case Base64Echo:
		var forms []string
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			forms = append(forms, enc.EncodeToString([]byte(userpass)))
		}
		refuse(diag{Code: "UNAUTHORIZED", Message: Marker + " " + strings.Join(forms, " ")})
	case URLEncodedEcho:
		b64 := base64.StdEncoding.EncodeToString([]byte(userpass))
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, "%s %s %s %s %s %s %s\n", Marker, url.QueryEscape(h.pass), url.PathEscape(h.pass), url.QueryEscape(b64),
			url.PathEscape(b64), lowerEscapes(url.QueryEscape(h.pass)), url.QueryEscape(auth))
	default:
		refuse(diag{Code: "DENIED", Message: Marker + " " + req.URL.RawQuery})
	}
}

// quote is s as an HTTP quoted-string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// slashes is s JSON-escaped (without its quotes), "/" written "\/".
func slashes(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b[1:len(b)-1]), "/", `\/`)
}

// CredentialForms are the forms of user:pass no output may hold: the password plain,
// URL-encoded (query and path, escapes in either case) and JSON-escaped (with "/" as "\/" too);
// base64 of user:pass padded and not, standard and URL-safe, each plain, JSON-escaped with "\/"
// and URL-encoded; the Authorization header; and the hex of the password and of user:pass, in
// lower and upper case.
func CredentialForms(user, pass string) []string {
	var out []string
	add := func(v string) {
		for _, f := range []string{v, url.QueryEscape(v), url.PathEscape(v), lowerEscapes(url.QueryEscape(v)), slashes(v)} {
			if f != "" && !contains(out, f) {
				out = append(out, f)
			}
		}
	}
	add(pass)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b := enc.EncodeToString([]byte(user + ":" + pass))
		add(b)
		add("Basic " + b)
	}
	for _, v := range []string{pass, user + ":" + pass} {
		for _, f := range []string{hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v)))} {
			if !contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// TokenForms are the forms of the tokens a registry that takes the credentials issues, no
// output may hold: each plain, and its hex in lower and upper case.
func TokenForms() []string {
	var out []string
	for _, t := range []string{AccessToken, RefreshToken} {
		out = append(out, t, "Bearer "+t, hex.EncodeToString([]byte(t)), strings.ToUpper(hex.EncodeToString([]byte(t))))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// lowerEscapes writes the percent escapes of s in lower case (%2f for %2F), as some servers do.
func lowerEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			b.WriteString("%" + strings.ToLower(s[i+1:i+3]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

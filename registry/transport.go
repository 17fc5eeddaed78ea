package registry

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"k8s.io/apimachinery/pkg/util/validation"
)

// PlainHTTPError: a request over plain HTTP to a registry that is neither loopback nor given
// as insecure (--insecure-registry). Registries are asked over HTTPS: credentials and tokens
// never cross the network in the clear.
type PlainHTTPError struct{ Host string }

func (e *PlainHTTPError) Error() string {
	return fmt.Sprintf("plain HTTP to %s refused: registries are asked over HTTPS, plain HTTP only on loopback and for a host given with --insecure-registry", e.Host)
}

// guard is the transport of one pass: it refuses plain HTTP to hosts not allowed it, and
// remembers every Authorization it sends, so that no message can repeat one.
type guard struct {
	inner    http.RoundTripper
	insecure map[string]bool
	secrets  *secrets
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.plainHTTP(req.URL.Host) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, &PlainHTTPError{Host: req.URL.Host}
	}
	if a := req.Header.Get("Authorization"); a != "" {
		g.secrets.add(a)
		if scheme, v, ok := strings.Cut(a, " "); ok {
			g.secrets.add(v)
			if strings.EqualFold(scheme, "basic") {
				if user, pass, ok := decodeBasic(v); ok {
					g.secrets.addBasic(user, pass)
				}
			}
		}
	}
	resp, err := g.inner.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusOK && isTokenRequest(req) {
		g.secrets.fromTokenResponse(resp)
	}
	return resp, err
}

// isTokenRequest: a request that exchanges credentials for a token (the registry token flow:
// a GET with basic credentials or a scope, or a POST of a form with a refresh token or a
// password). Its answer holds tokens, and a registry's error may repeat it.
func isTokenRequest(req *http.Request) bool {
	if req.Method == http.MethodPost {
		return true
	}
	if strings.HasPrefix(strings.ToLower(req.Header.Get("Authorization")), "basic ") {
		return true
	}
	q := req.URL.Query()
	return q.Has("scope") || q.Has("service")
}

// maxTokenResponse bounds what is read ahead of a token answer to learn its secrets; beyond
// it the answer is passed on unread (go-containerregistry bounds it too).
const maxTokenResponse = 1 << 20

// tokenFields are the fields of a token answer that hold a token (the registry token flow's
// token and access_token, OAuth 2's refresh_token and OpenID Connect's id_token), matched as
// encoding/json matches a field's name: without regard to case.
var tokenFields = []string{"token", "access_token", "refresh_token", "id_token"}

// fromTokenResponse adds the tokens of a token answer (a 200: an error's words are no token,
// and what is described of an error never comes from its body) to the secrets — the string
// values of its tokenFields, nothing else: every other string of the answer is the token
// endpoint's to choose, and a secret hunted in every message would let it hide words of its
// choice — and gives the body back to its reader unchanged.
func (s *secrets) fromTokenResponse(resp *http.Response) {
	if resp.Body == nil {
		return
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), rest), rest}
	if err != nil {
		return
	}
	var doc map[string]any
	if json.Unmarshal(head, &doc) != nil {
		return
	}
	for k, v := range doc {
		if v, ok := v.(string); ok && slices.ContainsFunc(tokenFields, func(f string) bool { return strings.EqualFold(f, k) }) {
			s.add(v)
		}
	}
}

// plainHTTP: loopback, and hosts given as insecure (host:port, or the host for any port).
func (g *guard) plainHTTP(hostport string) bool {
	hostport = strings.ToLower(hostport)
	host, _ := splitHostPort(hostport)
	if g.insecure[hostport] || g.insecure[host] {
		return true
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ValidateInsecureRegistry checks an --insecure-registry value: a registry host, an IPv4 or
// IPv6 address (in brackets when it has a port), each with an optional port — no scheme, no
// path, no wildcard or range.
func ValidateInsecureRegistry(h string) error {
	const want = "give a registry as host, host:port, an IP address or [IPv6]:port (no scheme, no path, no wildcard or CIDR range)"
	if h == "" {
		return errors.New("empty: " + want)
	}
	if strings.Contains(h, "://") || strings.ContainsAny(h, "/*? ") {
		return errors.New(want)
	}
	host, port := h, ""
	if hh, pp, err := net.SplitHostPort(h); err == nil {
		host, port = hh, pp
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		host = h[1 : len(h)-1]
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q: %s", port, want)
		}
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	if len(validation.IsDNS1123Subdomain(strings.ToLower(host))) > 0 {
		return errors.New(want)
	}
	return nil
}

// insecureHosts normalises --insecure-registry values.
func insecureHosts(hosts []string) map[string]bool {
	out := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		h = strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://")
		h = strings.TrimSuffix(h, "/")
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") { // [fd00::2]: the host, any port
			h = h[1 : len(h)-1]
		}
		if h != "" {
			out[h] = true
		}
	}
	return out
}

// secrets are the values nothing from outside driverguard may carry into output: passwords,
// user:password, tokens, Authorization headers, and the forms each travels in.
type secrets struct {
	mu     sync.Mutex
	values map[string]struct{}
}

// add adds v and the forms it travels in: URL-encoded (a query or a form, a path; the escapes
// in upper and lower case), JSON-escaped (with and without HTML escaping, and with "/"
// written "\/" as some encoders write it) and hex-encoded (lower and upper case: what a
// registry that wants a secret back would write in a digest).
func (s *secrets) add(v string) {
	if v = strings.TrimSpace(v); v == "" {
		return
	}
	forms := travelForms(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string]struct{}{}
	}
	for _, f := range forms {
		s.values[f] = struct{}{}
	}
}

// travelForms are v and the forms it travels in (secrets.add).
func travelForms(v string) []string {
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	html, _ := json.Marshal(v)
	out := []string{v}
	for _, f := range []string{url.QueryEscape(v), url.PathEscape(v)} {
		out = append(out, f, lowerEscapes(f))
	}
	for _, j := range []string{strings.TrimSpace(plain.String()), string(html)} {
		j = j[1 : len(j)-1] // the quotes
		out = append(out, j, strings.ReplaceAll(j, "/", `\/`))
	}
	h := hex.EncodeToString([]byte(v))
	return append(out, h, strings.ToUpper(h))
}

// lowerEscapes writes the percent escapes of s in lower case (%2f for %2F).
func lowerEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// base64Encodings are the encodings a credential is sent and echoed in: padded and not,
// standard and URL-safe.
var base64Encodings = []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding}

// addBasic adds a user's password and what HTTP basic auth makes of it: user:pass itself, and
// its base64 in every encoding, each with the "Basic " of its Authorization header.
func (s *secrets) addBasic(user, pass string) {
	s.add(pass)
	if user == "" && pass == "" {
		return
	}
	if pass != "" {
		s.add(user + ":" + pass)
	}
	for _, enc := range base64Encodings {
		b := enc.EncodeToString([]byte(user + ":" + pass))
		s.add(b)
		s.add("Basic " + b)
		if pass != "" {
			s.add(enc.EncodeToString([]byte(pass)))
		}
	}
}

// decodeBasic decodes base64 of user:pass, padded or not, standard or URL-safe.
func decodeBasic(v string) (user, pass string, ok bool) {
	v = strings.TrimSpace(v)
	for _, enc := range base64Encodings {
		if dec, err := enc.DecodeString(v); err == nil {
			return strings.Cut(string(dec), ":")
		}
	}
	return "", "", false
}

// addConfig adds everything secret in a, and the forms it travels in.
func (s *secrets) addConfig(a authn.AuthConfig) {
	s.add(a.Auth)
	s.add(a.IdentityToken)
	s.add(a.RegistryToken)
	s.addBasic(a.Username, a.Password)
	if user, pass, ok := decodeBasic(a.Auth); ok {
		s.addBasic(user, pass)
	}
}

// tokenField is a token in a JSON answer a registry or token server might echo in an error.
var tokenField = regexp.MustCompile(`(?i)("(?:access_token|token|refresh_token|id_token|password|auth|identitytoken|registrytoken)"\s*:\s*")[^"]*(")`)

// sorted are the secrets, longest first (a secret may contain a shorter one).
func (s *secrets) sorted() []string {
	s.mu.Lock()
	values := slices.Collect(maps.Keys(s.values))
	s.mu.Unlock()
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return values
}

// redact removes every secret, in every form it travels in, from text that came from outside
// driverguard — except the secrets that occur in ours: what the same output says in
// driverguard's own words (its fixed phrases, and the user's own configuration it repeats: the
// image reference, the registry host, the sources' names). Such a secret is printed there
// anyway, whole; "[redacted]" in text would only mark where it occurs (a password that is a
// path segment of the image would be read off the difference), and a short one would mangle
// text to no purpose.
func (s *secrets) redact(text string, ours ...string) string {
	for _, v := range s.sorted() {
		if !slices.ContainsFunc(ours, func(o string) bool { return strings.Contains(o, v) }) {
			text = strings.ReplaceAll(text, v, "[redacted]")
		}
	}
	return tokenField.ReplaceAllString(text, "${1}[redacted]${2}")
}

// holds reports whether v holds a secret, in any form and any case, that ours does not (see
// redact).
func (s *secrets) holds(v string, ours ...string) bool {
	v = strings.ToLower(v)
	for _, secret := range s.sorted() {
		secret = strings.ToLower(secret)
		if strings.Contains(v, secret) && !slices.ContainsFunc(ours, func(o string) bool { return strings.Contains(strings.ToLower(o), secret) }) {
			return true
		}
	}
	return false
}

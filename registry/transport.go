package registry

import (
	"bytes"
	"cmp"
	"encoding/base64"
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

// minTokenLength: the shortest string of a token answer taken for a secret.
const minTokenLength = 8

// maxTokenResponse bounds what is read ahead of a token answer to learn its secrets; beyond
// it the answer is passed on unread (go-containerregistry bounds it too).
const maxTokenResponse = 1 << 20

// fromTokenResponse adds every string of a token answer's JSON (a 200: an error's words are
// no token, and what is described of an error never comes from its body) to the secrets, and
// gives the body back to its reader unchanged.
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
	var doc any
	if json.Unmarshal(head, &doc) != nil {
		return
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if len(v) >= minTokenLength { // not "Bearer", a date, a scope's words
				s.add(v)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
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

// secrets are the values no message may carry: passwords, tokens, Authorization headers, and
// the forms each travels in.
type secrets struct {
	mu     sync.Mutex
	values map[string]struct{}
}

// add adds v and the forms it travels in: URL-encoded (a query or a form, a path; the escapes
// in upper and lower case) and JSON-escaped (with and without HTML escaping, and with "/"
// written "\/" as some encoders write it).
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
	return out
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

// addBasic adds a user's password and what HTTP basic auth makes of it: base64 of user:pass
// in every encoding, each with the "Basic " of its Authorization header.
func (s *secrets) addBasic(user, pass string) {
	s.add(pass)
	if user == "" && pass == "" {
		return
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
var tokenField = regexp.MustCompile(`(?i)("(?:access_token|token|refresh_token|password|auth|identitytoken|registrytoken)"\s*:\s*")[^"]*(")`)

// redact removes every secret from msg, longest first (a secret may contain a shorter one).
func (s *secrets) redact(msg string) string {
	s.mu.Lock()
	values := slices.Collect(maps.Keys(s.values))
	s.mu.Unlock()
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	for _, v := range values {
		msg = strings.ReplaceAll(msg, v, "[redacted]")
	}
	return tokenField.ReplaceAllString(msg, "${1}[redacted]${2}")
}

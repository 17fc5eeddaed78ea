package registry

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
		if _, v, ok := strings.Cut(a, " "); ok {
			g.secrets.add(v)
			if strings.EqualFold(a[:len(a)-len(v)-1], "basic") {
				if dec, err := base64.StdEncoding.DecodeString(v); err == nil {
					if _, pass, ok := strings.Cut(string(dec), ":"); ok {
						g.secrets.add(pass)
					}
				}
			}
		}
	}
	resp, err := g.inner.RoundTrip(req)
	if err == nil && isTokenRequest(req) {
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

// fromTokenResponse adds every string of a token answer's JSON to the secrets, and gives the
// body back to its reader unchanged.
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

// secrets are the values no message may carry: passwords, tokens, Authorization headers.
type secrets struct {
	mu     sync.Mutex
	values []string
}

// add adds v, and the forms it travels in: URL-encoded (a form, a query) and JSON-escaped.
func (s *secrets) add(v string) {
	if v = strings.TrimSpace(v); v == "" {
		return
	}
	quoted, _ := json.Marshal(v)
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v), string(quoted[1 : len(quoted)-1])}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range forms {
		if !slices.Contains(s.values, f) {
			s.values = append(s.values, f)
		}
	}
}

// addConfig adds everything secret in a, and the forms it travels in.
func (s *secrets) addConfig(a authn.AuthConfig) {
	s.add(a.Password)
	s.add(a.Auth)
	s.add(a.IdentityToken)
	s.add(a.RegistryToken)
	if a.Username != "" || a.Password != "" {
		s.add(base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password)))
	}
	if dec, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
		if _, pass, ok := strings.Cut(string(dec), ":"); ok {
			s.add(pass)
		}
	}
}

// tokenField is a token in a JSON answer a registry or token server might echo in an error.
var tokenField = regexp.MustCompile(`(?i)("(?:access_token|token|refresh_token|password|auth|identitytoken|registrytoken)"\s*:\s*")[^"]*(")`)

// redact removes every secret from msg, longest first (a secret may contain a shorter one).
func (s *secrets) redact(msg string) string {
	s.mu.Lock()
	values := slices.Clone(s.values)
	s.mu.Unlock()
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range values {
		msg = strings.ReplaceAll(msg, v, "[redacted]")
	}
	return tokenField.ReplaceAllString(msg, "${1}[redacted]${2}")
}

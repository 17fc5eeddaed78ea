package registry

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
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
	return g.inner.RoundTrip(req)
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

// insecureHosts normalises --insecure-registry values.
func insecureHosts(hosts []string) map[string]bool {
	out := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		h = strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://")
		h = strings.TrimSuffix(h, "/")
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

func (s *secrets) add(v string) {
	if v = strings.TrimSpace(v); v == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.values, v) {
		s.values = append(s.values, v)
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

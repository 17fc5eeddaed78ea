package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// What leaves the process about a registry (docs/audit.md "serve --audit": credentials never appear in output).
//
// A registry that wants to see a credential again controls a great deal of what a client
// reads: the bodies and headers of its answers, the error codes in them, the token realm its
// challenge names (and so the URLs of the requests a client then makes), and thereby the text
// of the errors go-containerregistry and net/http build from them. None of it is repeated.
// describe rebuilds every failure from what driverguard knows itself — the registry host of
// the image's own reference, the kind of request (the /v2/ ping, the manifest request, the
// token request), the HTTP status, the error codes of the distribution spec's fixed list, and
// a fixed phrase per kind of failure chosen by the error's type. What a message holds from
// outside driverguard — what a credential source says is wrong with it — is redacted last
// (message, pass.result) of whatever the pass sent or was sent, in every form it travels in;
// driverguard's own words and the user's own configuration (the image reference, the registry
// host, the sources' names) are not, lest "[redacted]" point at a secret they happen to hold.
// The one value a registry writes that is printed, the manifest digest, is printed only when
// it is a well-formed OCI digest holding no such secret (pass.digest).

// describe says what went wrong, in driverguard's words only: an HTTP answer by the request
// it answered, its status and its spec-defined error codes; any other failure by its type.
// registry is the host of the image's reference.
func describe(err error, registry string) string {
	var te *transport.Error
	if !certificateRefused(err) && errors.As(err, &te) { // a refused certificate is the cause, as classify says
		return describeAnswer(te, registry)
	}
	if phrase, ok := challengeFailure(err); ok {
		return phrase
	}
	if phrase, ok := manifestFailure(err, registry); ok {
		return phrase
	}
	var bad *name.ErrBadName
	if errors.As(err, &bad) {
		// The text of the reference driverguard composed (or was given), not a registry's.
		return "not a valid image reference: " + bad.Error()
	}
	if registry == "" { // nothing was asked
		return failure(err, registry, true)
	}
	what, own := "the request to "+registry, true
	var ue *url.Error
	if errors.As(err, &ue) && ue.Op != "parse" {
		r := requestOf(ue.Op, ue.URL, nil, registry)
		what, own = r.name(registry), r.own
	}
	return what + " failed: " + failure(err, registry, own)
}

// describeAnswer says what a registry answered, without a word it wrote.
func describeAnswer(te *transport.Error, registry string) string {
	r := request{own: true}
	if req := te.Request; req != nil && req.URL != nil {
		r = requestOf(req.Method, req.URL.String(), req, registry)
	}
	out := r.name(registry) + " was answered " + statusText(te)
	var codes []string
	for _, d := range te.Errors {
		if c := ociCode(d.Code); c != "" && !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	if len(codes) > 0 {
		out += " (" + strings.Join(codes, ", ") + ")"
	}
	if p := statusPhrase(te.StatusCode, r.kind); p != "" {
		out += ": " + p
	}
	return out
}

// ociCodes are the error codes the OCI distribution spec defines: the only ones repeated. A
// registry may write anything in an error's code, a credential included.
var ociCodes = map[transport.ErrorCode]bool{
	"BLOB_UNKNOWN": true, "BLOB_UPLOAD_INVALID": true, "BLOB_UPLOAD_UNKNOWN": true, "DIGEST_INVALID": true,
	"MANIFEST_BLOB_UNKNOWN": true, "MANIFEST_INVALID": true, "MANIFEST_UNKNOWN": true, "NAME_INVALID": true,
	"NAME_UNKNOWN": true, "SIZE_INVALID": true, "UNAUTHORIZED": true, "DENIED": true, "UNSUPPORTED": true,
	"TOOMANYREQUESTS": true,
}

// ociCode is c when the distribution spec defines it, "" otherwise.
func ociCode(c transport.ErrorCode) string {
	if ociCodes[c] {
		return string(c)
	}
	return ""
}

// statusText is the HTTP status of a registry's answer in the words of net/http ("401
// Unauthorized"), "refused" when err is not an answer.
func statusText(err error) string {
	var te *transport.Error
	if !errors.As(err, &te) || te.StatusCode == 0 {
		return "refused"
	}
	if t := http.StatusText(te.StatusCode); t != "" {
		return fmt.Sprintf("%d %s", te.StatusCode, t)
	}
	return fmt.Sprintf("HTTP status %d", te.StatusCode)
}

// statusPhrase says what a status means for the check, and what to do about it.
func statusPhrase(code int, kind requestKind) string {
	ping, token := kind == requestPing, kind == requestToken
	switch {
	case code == http.StatusUnauthorized && token:
		return "the token endpoint refused the credentials (or wants some)"
	case code == http.StatusUnauthorized:
		return "no credentials, or the wrong ones"
	case code == http.StatusForbidden:
		return "the credentials may not read this repository"
	case code == http.StatusNotFound && ping:
		return "nothing answers the registry API (/v2/) there: not a registry, or the wrong host or port in spec.registry"
	case code == http.StatusNotFound && token:
		return "the token endpoint the registry names does not exist"
	case code == http.StatusNotFound:
		return "not found"
	case code == http.StatusTooManyRequests:
		return "the registry limits the rate of requests: check again later"
	case code == http.StatusBadRequest:
		return "the registry refused the request as malformed"
	case code == http.StatusMethodNotAllowed:
		return "the registry does not allow the request's method"
	case code >= 500:
		return "the registry failed to answer (a server error): check again later, or ask its operators"
	}
	return ""
}

// A request's kind: what it was for.
type requestKind int

const (
	requestOther    requestKind = iota // to the registry, for something else
	requestPing                        // GET /v2/ of the registry
	requestManifest                    // the manifest request of the registry
	requestToken                       // a token request
)

// request is a request to a registry as describe names it: by what it was for and whether it
// went to the registry's own host — never by its URL, which for a token request is the realm
// the registry chose.
type request struct {
	kind requestKind
	own  bool // to the registry's own host
}

// requestOf sorts a request out. method is the HTTP method (or url.Error's Op); req, when
// known, is the request itself.
func requestOf(method, rawURL string, req *http.Request, registry string) request {
	u, err := url.Parse(rawURL)
	if err != nil {
		return request{}
	}
	r := request{own: sameHost(u.Host, registry)}
	switch {
	case r.own && u.Path == "/v2/":
		r.kind = requestPing
	case r.own && strings.HasPrefix(u.Path, "/v2/") && strings.Contains(u.Path, "/manifests/"):
		r.kind = requestManifest
	case req != nil && isTokenRequest(req),
		req == nil && (strings.EqualFold(method, http.MethodPost) || u.Query().Has("scope") || u.Query().Has("service")):
		r.kind = requestToken
	}
	return r
}

// name is what a message calls the request.
func (r request) name(registry string) string {
	switch {
	case r.kind == requestPing:
		return "the /v2/ ping of " + registry
	case r.kind == requestManifest:
		return "the manifest request to " + registry
	case r.kind == requestToken && r.own:
		return "the token request to " + registry
	case r.kind == requestToken:
		return "the token request to the token endpoint the registry's challenge names (another host)"
	case r.own:
		return "a request to " + registry
	}
	return "a request to another host the registry sent the client to"
}

// sameHost: host (of a request) is the registry's.
func sameHost(host, registry string) bool { return strings.EqualFold(host, registry) }

// challengeFailure describes the failures go-containerregistry has no type for: a challenge
// or a token answer it cannot use. They are known by the words its own errors start with,
// never repeated: what follows those words is the registry's.
func challengeFailure(err error) (string, bool) {
	const challenge = "the registry's authentication challenge"
	switch {
	case says(err, "invalid realm in www-authenticate"):
		switch {
		case says(err, "parsing realm"):
			return challenge + " is malformed: its token realm is not a URL; the registry's token service is misconfigured (ask its operators)", true
		case says(err, "realm scheme"):
			return challenge + " names a token realm driverguard refuses: neither HTTPS nor, for a registry asked over plain HTTP, HTTP", true
		case says(err, "realm host"):
			return challenge + " names a token realm on a private or link-local address other than the registry's own, which is refused", true
		}
		return challenge + " names a token realm driverguard refuses", true
	case says(err, "malformed www-authenticate"):
		return challenge + " is malformed: it names no token realm", true
	case says(err, "challenge scheme"), says(err, "unrecognized challenge"):
		return challenge + " is not one driverguard can answer (neither Basic nor Bearer)", true
	case says(err, "no token in bearer response"):
		return "the token endpoint answered without a token", true
	case says(err, "refusing token-server redirect"):
		return "the token endpoint redirected the client to an address that is refused (another scheme, or a private address)", true
	case says(err, "stopped after 10 redirects"):
		return "the registry redirected the client more than 10 times", true
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return "the token endpoint's answer is not the token the registry token flow defines (JSON with a token)", true
	}
	return "", false
}

// manifestFailure describes a 200 to the manifest request that go-containerregistry refuses: a
// Docker-Content-Digest that is no digest (v1.NewHash's errors), a digest other than the one
// the reference pins, a header missing. Known by the words its own errors start with, never
// repeated: the digest is the registry's to write, and could hold anything.
func manifestFailure(err error, registry string) (string, bool) {
	answered := "the manifest request to " + registry + " was answered "
	switch {
	case says(err, "cannot parse hash"), says(err, "found non-hex character in hash"),
		says(err, "wrong number of hex digits"), says(err, "unsupported hash"):
		return answered + "with a Docker-Content-Digest that is not an OCI digest (sha256: and 64 lower-case hex digits, or sha512: and 128); what it holds is not shown", true
	case says(err, "manifest digest: "):
		return answered + "with a digest other than the one the image reference pins", true
	}
	for _, e := range chain(err) {
		if t := e.Error(); (strings.HasPrefix(t, "HEAD ") || strings.HasPrefix(t, "GET ")) && strings.Contains(t, ": response did not include ") {
			return answered + "without a header a registry must send (Content-Type, Content-Length or Docker-Content-Digest)", true
		}
	}
	return "", false
}

// says reports whether err or an error it wraps has a text that starts with prefix.
func says(err error, prefix string) bool {
	for _, e := range chain(err) {
		if strings.HasPrefix(e.Error(), prefix) {
			return true
		}
	}
	return false
}

// chain is err and every error it wraps, depth first.
func chain(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) > 64 {
			return
		}
		out = append(out, e)
		switch u := e.(type) { //nolint:errorlint // it walks the chain itself, one link at a time
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				walk(w)
			}
		}
	}
	walk(err)
	return out
}

// failure is a fixed phrase for a failure that is not an HTTP answer, chosen by its type, and
// what to do about it; own says whether the failed request went to the registry's own host
// (registry), and not to one its challenge named. It names no host but the registry's.
func failure(err error, registry string, own bool) string {
	var (
		plain    *PlainHTTPError
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invalid  x509.CertificateInvalidError
		certErr  *tls.CertificateVerificationError
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
		dnsErr   *net.DNSError
		netErr   net.Error
		op       *net.OpError
	)
	switch {
	case errors.As(err, &plain):
		if sameHost(plain.Host, registry) {
			return "plain HTTP refused: registries are asked over HTTPS, plain HTTP only on loopback and for a registry given with --insecure-registry"
		}
		return "plain HTTP refused: the registry's token service must be served over HTTPS"
	case errors.As(err, &unknown):
		return "certificate signed by an unknown authority: add the CA that signed the registry's certificate to the trusted ones (the system's, or driverguard's image)"
	case errors.As(err, &hostErr):
		if host, _ := splitHostPort(registry); strings.EqualFold(hostErr.Host, host) || strings.EqualFold(hostErr.Host, registry) {
			return "certificate is not valid for host " + registry + ": the registry's certificate must name the host spec.registry gives"
		}
		return "certificate is not valid for the host of the token realm the registry's challenge names"
	case errors.As(err, &invalid):
		return certInvalid(invalid.Reason)
	case errors.As(err, &certErr):
		return "the registry's certificate could not be verified"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "the check was stopped before an answer came"
	case errors.Is(err, http.ErrSchemeMismatch), errors.As(err, &recErr):
		return "the server answered in plain HTTP where HTTPS was expected: give --insecure-registry for a registry that only speaks plain HTTP"
	case errors.As(err, &alertErr):
		// The alert's name comes from crypto/tls's own table.
		return "the TLS handshake was refused (" + alertErr.Error() + ")"
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout {
			return "the host name lookup timed out (DNS)"
		}
		if own {
			return "the host name does not resolve (DNS): check spec.registry, and the resolver of the machine that asks"
		}
		return "the host name does not resolve (DNS)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens at that host and port"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.Is(err, syscall.ECONNABORTED):
		return "the connection was aborted"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the connection was closed before a complete answer"
	case errors.As(err, &op) && op.Op == "dial":
		return "could not connect"
	case errors.As(err, &op):
		return "the connection failed"
	}
	return "a failure driverguard has no words for (its own text is not shown: it may repeat what the registry sent)"
}

// certInvalid says why crypto/x509 refused a certificate, from its reason.
func certInvalid(r x509.InvalidReason) string {
	switch r {
	case x509.Expired:
		return "certificate has expired or is not yet valid: renew the registry's certificate (or check this machine's clock)"
	case x509.NotAuthorizedToSign:
		return "certificate is signed by a certificate that may not sign others"
	case x509.CANotAuthorizedForThisName, x509.CANotAuthorizedForExtKeyUsage:
		return "certificate is signed by a CA not allowed to sign it"
	case x509.TooManyIntermediates:
		return "certificate chain is too long"
	case x509.IncompatibleUsage:
		return "certificate may not be used for a TLS server"
	case x509.NameMismatch:
		return "certificate's issuer does not match its parent's subject"
	}
	return "certificate is not valid"
}

// certificateRefused: the client saw the server's certificate and refused it.
func certificateRefused(err error) bool {
	var (
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		hostErr x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	return errors.As(err, &certErr) || errors.As(err, &unknown) || errors.As(err, &hostErr) || errors.As(err, &invalid)
}

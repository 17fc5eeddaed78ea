package registry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/driverguard/driverguard/routing"
)

// Status is the outcome of checking one image.
type Status string

const (
	// Found: the registry answered the manifest HEAD with 200.
	Found Status = "Found"
	// NotFound: the registry answered the manifest HEAD with 404. Pools using the image fail.
	NotFound Status = "NotFound"
	// Warning: any other outcome (auth failure, timeout, TLS, DNS, ...): the image is not
	// verified, its Reason says why. Pools proceed.
	Warning Status = "Warning"
)

// Reason says why an image was not verified (a Warning).
type Reason string

// Why an image was not verified.
const (
	// ReasonUnreachable: the registry refused or dropped the connection (no route, nothing
	// listening, reset).
	ReasonUnreachable Reason = "unreachable"
	// ReasonTimeout: no answer within the check's deadline.
	ReasonTimeout Reason = "timeout"
	// ReasonTLS: the TLS handshake failed (an untrusted or wrong certificate, plain HTTP).
	ReasonTLS Reason = "tls"
	// ReasonDNS: the registry's host name does not resolve.
	ReasonDNS Reason = "dns"
	// ReasonUnauthorized: the registry answered 401 (no or wrong credentials).
	ReasonUnauthorized Reason = "unauthorized"
	// ReasonForbidden: the registry answered 403 (the credentials may not read the image).
	ReasonForbidden Reason = "forbidden"
	// ReasonInvalidReference: the composed image is not a valid reference; nothing was asked.
	ReasonInvalidReference Reason = "invalid-reference"
	// ReasonNotChecked: the check was stopped before the image was asked about, or the image
	// has no result yet.
	ReasonNotChecked Reason = "not-checked"
	// ReasonPlainHTTP: the registry would be asked over plain HTTP, which only loopback and
	// hosts given with --insecure-registry may be.
	ReasonPlainHTTP Reason = "plain-http"
	// ReasonOther: any other failure (a 5xx, a 404 from the /v2/ ping of something that is not
	// a registry, a malformed answer).
	ReasonOther Reason = "other"
)

// Defaults for Options.
const (
	DefaultConcurrency = 8
	DefaultTimeout     = 10 * time.Second
)

// ImageResult is the outcome for one image. What was asked and what was answered are fields
// of their own, read by the same printers.
type ImageResult struct {
	Image  string `json:"image"`
	Status Status `json:"status"`
	// Reason says why a Warning's image was not verified ("" for Found and NotFound).
	Reason Reason `json:"reason,omitempty"`
	// Digest is the manifest digest the registry answered, when Found and when it is a
	// well-formed OCI digest (OCIDigest) that holds no credential of the check in any form
	// (hex included): a registry writes it, and one that wants a password back would write the
	// password's hex there. Empty otherwise.
	Digest string `json:"digest,omitempty"`
	// Credentials name the sources whose credentials were sent, in order ("Secret
	// npu/drivercred", "Docker config /root/.docker/config.json"); none: asked anonymously.
	// Never anything read from them.
	Credentials []string `json:"credentials,omitempty"`
	// Message explains NotFound and Warning.
	Message string `json:"message,omitempty"`
	// Err is the underlying error for NotFound and Warning, its text free of credentials.
	Err error `json:"-"`
}

// Options configure a Checker. The zero value asks over HTTPS (plain HTTP on loopback).
type Options struct {
	// Concurrency bounds parallel checks; <= 0 means DefaultConcurrency.
	Concurrency int
	// Timeout bounds each image's check (ping, token exchange and HEAD); <= 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// InsecureRegistries may be asked over plain HTTP (--insecure-registry): host:port, or a
	// host for any port. Loopback always may; every other registry is asked over HTTPS only.
	InsecureRegistries []string
	// Transport is the HTTP transport; nil means remote.DefaultTransport.
	Transport http.RoundTripper
}

// Checker checks images against their registries. It is safe for concurrent use.
type Checker struct {
	opts     Options
	insecure map[string]bool
}

// NewChecker returns a Checker with defaults filled in.
func NewChecker(opts Options) *Checker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Transport == nil {
		opts.Transport = remote.DefaultTransport
	}
	return &Checker{opts: opts, insecure: insecureHosts(opts.InsecureRegistries)}
}

// pass is one Check: the clients it shares between images, so that a registry is pinged and
// a token fetched once per credential and repository, and the secrets it must not repeat.
type pass struct {
	c       *Checker
	guard   *guard
	mu      sync.Mutex
	pullers map[string]*remote.Puller
}

// puller is the pass's client for cred (nil: anonymous).
func (p *pass) puller(cred *credential) (*remote.Puller, error) {
	id, auth := "", authn.Anonymous
	if cred != nil {
		id, auth = cred.id(), authn.FromConfig(cred.auth)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl, ok := p.pullers[id]; ok {
		return pl, nil
	}
	pl, err := remote.NewPuller(remote.WithAuth(auth), remote.WithTransport(p.guard))
	if err != nil {
		return nil, err
	}
	p.pullers[id] = pl
	return pl, nil
}

// Check checks every distinct non-empty image once, with the credentials keys gives it (nil:
// anonymously), and returns the results by image. It returns when all checks are done or ctx
// is cancelled (the remaining images are then Warnings).
func (c *Checker) Check(ctx context.Context, images []string, keys Keys) map[string]ImageResult {
	distinct := slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(images), func(s string) bool { return s == "" }))))
	results := make(map[string]ImageResult, len(distinct))
	p := &pass{c: c, guard: &guard{inner: c.opts.Transport, insecure: c.insecure, secrets: &secrets{}}, pullers: map[string]*remote.Puller{}}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	sem := make(chan struct{}, c.opts.Concurrency)
	for _, img := range distinct {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			results[img] = p.warning(img, "", nil, ReasonNotChecked, say("check of "+img+" not started"), ctx.Err())
			continue
		}
		var k Keyring
		if keys != nil {
			k = keys(img)
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r := p.checkOne(ctx, img, k)
			mu.Lock()
			results[img] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	for img, r := range results {
		if r.Digest != "" {
			r.Digest = p.digest(img, r.Digest)
			results[img] = r
		}
	}
	return results
}

// digest is d, the manifest digest a registry answered for img, when driverguard may print it:
// a well-formed OCI digest (OCIDigest) that holds no secret of the pass in any form or case
// (the hex of a password fits in one) — "" otherwise. A registry chooses the digest it
// answers; only the digest img itself pins (which go-containerregistry has checked the answer
// against) is the user's own, and printed as it is. Checked once every image of the pass is
// done, so that every secret the pass learnt counts.
func (p *pass) digest(img, d string) string {
	if !OCIDigest(d) {
		return ""
	}
	if ref, err := name.NewDigest(img); err == nil && ref.DigestStr() == d {
		return d
	}
	if p.guard.secrets.holds(d, img) {
		return ""
	}
	return d
}

// OCIDigest reports whether d is a well-formed OCI digest as driverguard prints one: sha256:
// and 64 lower-case hex digits, or sha512: and 128 (v1.NewHash's rules, held to the two
// algorithms the OCI image spec registers).
func OCIDigest(d string) bool {
	h, err := v1.NewHash(d)
	if err != nil || h.String() != d {
		return false
	}
	switch h.Algorithm {
	case "sha256":
		return len(h.Hex) == 64
	case "sha512":
		return len(h.Hex) == 128
	}
	return false
}

// checkOne asks about img with each credential keyring holds for its repository, in order,
// until one is not refused; with none, anonymously. Everything, credential helpers included,
// happens within the check's deadline.
func (p *pass) checkOne(ctx context.Context, img string, keyring Keyring) ImageResult {
	ref, err := name.ParseReference(img)
	if err == nil && p.guard.plainHTTP(ref.Context().RegistryStr()) {
		ref, err = name.ParseReference(img, name.Insecure)
	}
	if err != nil {
		return p.warning(img, "", nil, ReasonInvalidReference, say(fmt.Sprintf("parse image reference %q", img)), err)
	}
	registry := ref.Context().RegistryStr()
	ctx, cancel := context.WithTimeout(ctx, p.c.opts.Timeout)
	defer cancel()
	creds, problems := keyring.credentials(ctx, ref.Context())
	if ctx.Err() != nil { // the deadline passed while credentials were looked up
		return p.warning(img, registry, nil, classify(ctx.Err(), false), say("check "+img+": ").and(problemsMessage(problems)), nil)
	}
	attempts := make([]*credential, 0, len(creds)+1)
	for i := range creds {
		p.guard.secrets.addConfig(creds[i].auth)
		attempts = append(attempts, &creds[i])
	}
	if len(attempts) == 0 {
		attempts = append(attempts, nil)
	}
	check := say("check " + img)
	var (
		sent    []string
		refused []string
	)
	for _, cred := range attempts {
		if cred != nil {
			sent = append(sent, cred.source)
		}
		pl, err := p.puller(cred)
		if err != nil {
			return p.warning(img, registry, sent, ReasonOther, check, err)
		}
		desc, err := pl.Head(ctx, ref)
		if err == nil {
			return ImageResult{Image: img, Status: Found, Digest: desc.Digest.String(), Credentials: sent}
		}
		if isManifestNotFound(err, ref) {
			return p.result(ImageResult{Image: img, Status: NotFound, Credentials: sent,
				Message: fmt.Sprintf("driver image %s not found: the registry answered 404 to the manifest request; publish the image or fix spec.registry/spec.image/spec.version", img)},
				registry, message{}, err)
		}
		reason := classify(err, p.guard.plainHTTP(registry))
		if reason == ReasonPlainHTTP {
			var plain *PlainHTTPError
			if errors.As(err, &plain) && !sameHost(plain.Host, registry) {
				return p.warning(img, registry, sent, reason, check.then(": the token realm the registry's challenge names is on another host and in plain HTTP, where credentials would cross the network in the clear"), err)
			}
			return p.warning(img, registry, sent, reason, check.then(fmt.Sprintf(": %s answers in plain HTTP, which only loopback and registries given with --insecure-registry are asked over (credentials would cross the network in the clear): give --insecure-registry %s if that is intended",
				registry, registry)), err)
		}
		if reason == ReasonTimeout {
			return p.warning(img, registry, sent, reason, check.then(fmt.Sprintf(": no answer within %s", p.c.opts.Timeout)), err)
		}
		if reason != ReasonUnauthorized && reason != ReasonForbidden {
			return p.warning(img, registry, sent, reason, check, err)
		}
		if cred == nil {
			return p.warning(img, registry, sent, reason, check.then(": ").and(noCredentials(registry, keyring, problems, err)), err)
		}
		refused = append(refused, fmt.Sprintf("%s (%s)", cred.source, statusText(err)))
		if len(refused) == len(attempts) {
			msg := check.then(fmt.Sprintf(": the registry refused the credentials of %s for %s", strings.Join(refused, ", "), registry))
			if len(problems) > 0 {
				msg = msg.then("; not usable: ").and(problemsMessage(problems))
			}
			return p.warning(img, registry, sent, reason, msg, err)
		}
	}
	return p.warning(img, registry, sent, ReasonOther, check.then(": no attempt made"), nil)
}

// noCredentials says why an anonymous request was refused: no source, none matching the host,
// or sources that could not be used.
func noCredentials(host string, keyring Keyring, problems []problem, err error) message {
	m := say(fmt.Sprintf("the registry refused an anonymous request (%s): ", statusText(err)))
	if len(keyring) == 0 {
		m = m.then("no credentials were given (live: the drivers' spec.imagePullSecrets, read from --pull-secret-namespace; with files: --registry-config, Helm's registry config or the Docker config)")
	} else {
		m = m.then(fmt.Sprintf("no credentials for %s in %s", host, keyring.names()))
	}
	if len(problems) > 0 {
		m = m.then("; not usable: ").and(problemsMessage(problems))
	}
	return m
}

// Cause is why a NotFound or Warning image got no manifest: the error, without the image it
// names again (Message when there is no error, e.g. a result decoded from JSON).
func (r ImageResult) Cause() string {
	if r.Err == nil {
		return r.Message
	}
	return strings.TrimPrefix(strings.TrimPrefix(r.Err.Error(), "check "+r.Image+": "), "check of "+r.Image+" ")
}

// warning is a not-verified result: what driverguard says (ours), then what went wrong
// (describe).
func (p *pass) warning(img, registry string, sent []string, reason Reason, ours message, cause error) ImageResult {
	return p.result(ImageResult{Image: img, Status: Warning, Reason: reason, Credentials: sent,
		Message: "could not verify " + img + " (" + string(reason) + "; the pool proceeds, the kubelet decides whether the pull succeeds): "},
		registry, ours, cause)
}

// result is the one place a NotFound or Warning result gets its words: its Err says what
// driverguard says (ours) and the cause described (describe: rebuilt from what driverguard
// knows, never from what a registry sent); a Warning's Message is r.Message (a prefix, ours)
// followed by the same, a NotFound's r.Message alone. The words from outside driverguard in
// ours (message) are stripped, last, of every secret the pass saw, in every form it travels in
// — but of none that driverguard's own words in the result print anyway. Everything that
// prints a result — every output format, the audit's ClusterReports, the logs — prints these.
func (p *pass) result(r ImageResult, registry string, ours message, cause error) ImageResult {
	m := ours
	if cause != nil {
		if !m.empty() {
			m = m.then(": ")
		}
		m = m.then(describe(cause, registry))
	}
	text := p.guard.secrets.render(m, append([]string{r.Image, r.Message, registry}, r.Credentials...)...)
	r.Err = &redactedError{text: text, cause: cause}
	if r.Status == Warning {
		r.Message += text
	}
	return r
}

// redactedError is what driverguard says of an error: its text is rebuilt (pass.result), and
// errors.Is and As still find the cause's types (a *net.DNSError, a *transport.Error). It does
// not unwrap: the cause's own text, which may repeat what a registry sent, is reached by
// nothing that walks a chain to print it.
type redactedError struct {
	text  string
	cause error
}

func (e *redactedError) Error() string { return e.text }

// Is and As look into the cause.
func (e *redactedError) Is(target error) bool { return e.cause != nil && errors.Is(e.cause, target) }
func (e *redactedError) As(target any) bool   { return e.cause != nil && errors.As(e.cause, target) }

// classify says why a check that got no manifest answer failed; plainAllowed says whether
// the registry may be asked over plain HTTP (loopback, --insecure-registry).
//
// The order matters. A certificate the client refused first: that is the cause, whatever
// happened after (for a loopback registry the ping also tries plain HTTP, whose answer from a
// TLS server — a 400, or no answer in time — would hide it). Then a deadline or a
// cancellation: a check that ran out of time fails with whatever the connection was doing, a
// handshake included (and the images of a repository share one ping, so an image may get the
// error of another's deadline). Then plain HTTP where it may not be used — refused
// by the guard, or a registry that answers HTTPS in plain HTTP (a record header error): the
// fix is --insecure-registry. Then what a registry answered.
func classify(err error, plainAllowed bool) Reason {
	var (
		te       *transport.Error
		dnsErr   *net.DNSError
		netErr   net.Error
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
	)
	switch {
	case certificateRefused(err):
		return ReasonTLS // the registry's certificate was seen and refused: whatever came after
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout
	case errors.Is(err, context.Canceled):
		return ReasonNotChecked
	case errors.As(err, new(*PlainHTTPError)), !plainAllowed && (errors.As(err, &recErr) || errors.Is(err, http.ErrSchemeMismatch)):
		return ReasonPlainHTTP
	case errors.As(err, &te):
		switch te.StatusCode {
		case http.StatusUnauthorized:
			return ReasonUnauthorized
		case http.StatusForbidden:
			return ReasonForbidden
		}
		return ReasonOther
	case errors.As(err, &recErr), errors.As(err, &alertErr):
		return ReasonTLS
	case errors.As(err, &dnsErr):
		return ReasonDNS
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ReasonUnreachable
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return ReasonUnreachable
	}
	return ReasonOther
}

// isManifestNotFound reports whether err is a 404 answered to the manifest request of ref
// itself — on its registry, at /v2/<repository>/manifests/<tag or digest> — not to the /v2/
// ping, a token request or anything else a registry made the client ask.
func isManifestNotFound(err error, ref name.Reference) bool {
	var te *transport.Error
	if !errors.As(err, &te) || te.StatusCode != http.StatusNotFound {
		return false
	}
	req := te.Request
	return req != nil && req.URL != nil && req.URL.Host == ref.Context().RegistryStr() &&
		req.URL.Path == "/v2/"+ref.Context().RepositoryStr()+"/manifests/"+ref.Identifier()
}

// Check is the one call for the CLI: it checks every distinct pool image of res with a
// Checker built from opts and the credentials of keys, applies the results to res (see Apply), and returns all results
// sorted by image, and what the check covered.
func Check(ctx context.Context, res *routing.Result, opts Options, keys Keys) ([]ImageResult, Summary) {
	images := Images(res)
	results := NewChecker(opts).Check(ctx, images, keys)
	Apply(res, results)
	out := slices.Collect(maps.Values(results))
	slices.SortFunc(out, func(a, b ImageResult) int { return strings.Compare(a.Image, b.Image) })
	return out, Summarize(images, results)
}

// Images returns the distinct composed pool images of res, sorted.
func Images(res *routing.Result) []string {
	var out []string
	for _, p := range res.Pools {
		if p.Image != "" {
			out = append(out, p.Image)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Apply records the check results on res: every pool whose image is NotFound gets
// routing.ReasonDriverImageNotFound and a Detail naming the exact path; a pool whose image
// was not verified keeps Reason "" (it proceeds) and gets a Detail that says so, and why. It
// returns the Warning results for the pools' images, sorted by image, for the caller to log.
// Images without a result (not checked) are left alone.
func Apply(res *routing.Result, results map[string]ImageResult) []ImageResult {
	var warnings []ImageResult
	seen := make(map[string]bool)
	for i := range res.Pools {
		p := &res.Pools[i]
		r, ok := results[p.Image]
		if p.Image == "" || !ok {
			continue
		}
		switch r.Status {
		case NotFound:
			p.Reason = routing.ReasonDriverImageNotFound
			p.Detail = r.Message
		case Warning:
			p.Detail = "image not verified (" + string(cmpReason(r.Reason)) + ")"
			if !seen[r.Image] {
				seen[r.Image] = true
				warnings = append(warnings, r)
			}
		}
	}
	slices.SortFunc(warnings, func(a, b ImageResult) int { return strings.Compare(a.Image, b.Image) })
	return warnings
}

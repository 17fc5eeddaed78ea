package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
// of their own, so that what a later check adds (the credentials tried per registry host) is
// another field beside Reason, read by the same printers.
type ImageResult struct {
	Image  string `json:"image"`
	Status Status `json:"status"`
	// Reason says why a Warning's image was not verified ("" for Found and NotFound).
	Reason Reason `json:"reason,omitempty"`
	// Digest is the manifest digest when Found.
	Digest string `json:"digest,omitempty"`
	// Message explains NotFound and Warning.
	Message string `json:"message,omitempty"`
	// Err is the underlying error for NotFound and Warning.
	Err error `json:"-"`
}

// Options configure a Checker. The zero value checks anonymously over HTTPS.
type Options struct {
	// Keychain resolves credentials per registry; nil means anonymous.
	Keychain authn.Keychain
	// Concurrency bounds parallel checks; <= 0 means DefaultConcurrency.
	Concurrency int
	// Timeout bounds each image's check (ping, token exchange and HEAD); <= 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Insecure allows plain HTTP registries (name.Insecure). Loopback and RFC 1918 addresses
	// use HTTP even without it.
	Insecure bool
	// Transport is the HTTP transport; nil means remote.DefaultTransport.
	Transport http.RoundTripper
}

// Checker checks images against their registries. It is safe for concurrent use.
type Checker struct {
	opts Options
}

// NewChecker returns a Checker with defaults filled in.
func NewChecker(opts Options) *Checker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Keychain == nil {
		opts.Keychain = authn.NewMultiKeychain() // resolves to anonymous
	}
	if opts.Transport == nil {
		opts.Transport = remote.DefaultTransport
	}
	return &Checker{opts: opts}
}

// Check checks every distinct non-empty image once and returns the results by image. It
// returns when all checks are done or ctx is cancelled (the remaining images are then
// Warnings).
func (c *Checker) Check(ctx context.Context, images []string) map[string]ImageResult {
	distinct := slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(images), func(s string) bool { return s == "" }))))
	results := make(map[string]ImageResult, len(distinct))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	sem := make(chan struct{}, c.opts.Concurrency)
	for _, img := range distinct {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			results[img] = warning(img, ReasonNotChecked, fmt.Errorf("check of %s not started: %w", img, ctx.Err()))
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r := c.checkOne(ctx, img)
			mu.Lock()
			results[img] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	return results
}

func (c *Checker) checkOne(ctx context.Context, img string) ImageResult {
	var opts []name.Option
	if c.opts.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(img, opts...)
	if err != nil {
		return warning(img, ReasonInvalidReference, fmt.Errorf("parse image reference %q: %w", img, err))
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	desc, err := remote.Head(ref,
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(c.opts.Keychain),
		remote.WithTransport(c.opts.Transport),
	)
	if err == nil {
		return ImageResult{Image: img, Status: Found, Digest: desc.Digest.String()}
	}
	if isManifestNotFound(err) {
		return ImageResult{Image: img, Status: NotFound, Err: err,
			Message: fmt.Sprintf("driver image %s not found: the registry answered 404 to the manifest request; publish the image or fix spec.registry/spec.image/spec.version", img)}
	}
	reason := classify(err)
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s: %w", c.opts.Timeout, err)
		reason = ReasonTimeout
	}
	return warning(img, reason, fmt.Errorf("check %s: %w", img, err))
}

// Cause is why a NotFound or Warning image got no manifest: the error, without the image it
// names again (Message when there is no error, e.g. a result decoded from JSON).
func (r ImageResult) Cause() string {
	if r.Err == nil {
		return r.Message
	}
	return strings.TrimPrefix(strings.TrimPrefix(r.Err.Error(), "check "+r.Image+": "), "check of "+r.Image+" ")
}

func warning(img string, reason Reason, err error) ImageResult {
	return ImageResult{Image: img, Status: Warning, Reason: reason, Err: err,
		Message: "could not verify " + img + " (" + string(reason) + "; the pool proceeds, the kubelet decides whether the pull succeeds): " + err.Error()}
}

// classify says why a check that got no manifest answer failed.
func classify(err error) Reason {
	var (
		te       *transport.Error
		dnsErr   *net.DNSError
		netErr   net.Error
		certErr  *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invalid  x509.CertificateInvalidError
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
	)
	// A TLS failure first: for a loopback registry the ping also tries plain HTTP, whose
	// answer from a TLS server (a 400) would hide it.
	switch {
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr), errors.As(err, &invalid),
		errors.As(err, &recErr), errors.As(err, &alertErr):
		return ReasonTLS
	case errors.As(err, &te):
		switch te.StatusCode {
		case http.StatusUnauthorized:
			return ReasonUnauthorized
		case http.StatusForbidden:
			return ReasonForbidden
		}
		return ReasonOther
	case errors.As(err, &dnsErr):
		return ReasonDNS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ReasonUnreachable
	case errors.Is(err, context.Canceled):
		return ReasonNotChecked
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return ReasonUnreachable
	}
	return ReasonOther
}

// isManifestNotFound reports whether err is a 404 answered to the manifest request itself,
// not to the /v2/ ping or a token request.
func isManifestNotFound(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) || te.StatusCode != http.StatusNotFound {
		return false
	}
	req := te.Request
	return req != nil && req.URL != nil && strings.Contains(req.URL.Path, "/manifests/")
}

// Check is the one call for the CLI: it checks every distinct pool image of res with a
// Checker built from opts, applies the results to res (see Apply), and returns all results
// sorted by image, and what the check covered.
func Check(ctx context.Context, res *routing.Result, opts Options) ([]ImageResult, Summary) {
	images := Images(res)
	results := NewChecker(opts).Check(ctx, images)
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

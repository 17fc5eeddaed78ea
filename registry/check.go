package registry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
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
	// Warning: any other outcome (auth failure, timeout, TLS, DNS, ...). Pools proceed.
	Warning Status = "Warning"
)

// Defaults for Options.
const (
	DefaultConcurrency = 8
	DefaultTimeout     = 10 * time.Second
)

// ImageResult is the outcome for one image.
type ImageResult struct {
	Image  string `json:"image"`
	Status Status `json:"status"`
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
			results[img] = warning(img, fmt.Errorf("check of %s not started: %w", img, ctx.Err()))
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
		return warning(img, fmt.Errorf("parse image reference %q: %w", img, err))
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
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s: %w", c.opts.Timeout, err)
	}
	return warning(img, fmt.Errorf("check %s: %w", img, err))
}

func warning(img string, err error) ImageResult {
	return ImageResult{Image: img, Status: Warning, Err: err,
		Message: "could not verify " + img + " (the pool proceeds; the kubelet decides whether the pull succeeds): " + err.Error()}
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
// sorted by image.
func Check(ctx context.Context, res *routing.Result, opts Options) []ImageResult {
	results := NewChecker(opts).Check(ctx, Images(res))
	Apply(res, results)
	out := slices.Collect(maps.Values(results))
	slices.SortFunc(out, func(a, b ImageResult) int { return strings.Compare(a.Image, b.Image) })
	return out
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
// routing.ReasonDriverImageNotFound and a Detail naming the exact path. It returns the
// Warning results for the pools' images, sorted by image, for the caller to log. Images
// without a result (not checked) are left alone.
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
			if !seen[r.Image] {
				seen[r.Image] = true
				warnings = append(warnings, r)
			}
		}
	}
	slices.SortFunc(warnings, func(a, b ImageResult) int { return strings.Compare(a.Image, b.Image) })
	return warnings
}

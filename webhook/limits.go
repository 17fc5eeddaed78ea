package webhook

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Defaults of [Limits].
const (
	// DefaultBodyTimeout bounds reading one request body: the API server sends an
	// AdmissionReview at once and never waits longer than 30 s for an answer.
	DefaultBodyTimeout = 10 * time.Second
	// DefaultMaxInFlight and DefaultMaxInFlightBytes bound the requests served at once, and
	// DefaultMaxInFlightPerClient those of one client address. A request's memory is a small
	// multiple of its body (measured: docs/webhook.md, "Bounds"), so the bytes in flight bound
	// the memory admission can take: a realistic AdmissionReview is a few KiB, and one at the
	// 7 MiB limit still fits.
	DefaultMaxInFlight          = 64
	DefaultMaxInFlightPerClient = DefaultMaxInFlight / 2
	DefaultMaxInFlightBytes     = 8 << 20
	// DefaultMaxInFlightValues bounds the JSON values of the bodies in flight: decoding and
	// judging cost memory per value (about 500 bytes at worst), and a small body can hold many.
	DefaultMaxInFlightValues = 2 * maxReviewValues
	// DefaultHeaderTimeout bounds the TLS handshake and the request headers of a connection,
	// DefaultIdleTimeout a keep-alive connection waiting for its next request. The API server
	// sends its request at once.
	DefaultHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout   = 60 * time.Second
	// DefaultMaxConnections bounds the open connections, DefaultMaxConnectionsPerClient those
	// from one client address (an API server opens about as many as it has requests in flight).
	DefaultMaxConnections          = 512
	DefaultMaxConnectionsPerClient = 128
)

// Limits bound what clients may hold, so that slow, many or hostile clients get a clear answer
// (or a closed connection) instead of exhausting the pod's memory or crowding out the API
// server: a body that is not read within BodyTimeout fails the request (400), and a request
// beyond MaxInFlight requests, MaxInFlightPerClient from its client or MaxInFlightBytes of
// bodies (by Content-Length) is answered 429 at once, without its body being read. The
// connection limits and timeouts apply to `serve` (Run).
type Limits struct {
	BodyTimeout          time.Duration // DefaultBodyTimeout when zero
	MaxInFlight          int           // DefaultMaxInFlight when zero
	MaxInFlightPerClient int           // DefaultMaxInFlightPerClient (at most MaxInFlight) when zero
	MaxInFlightBytes     int64         // DefaultMaxInFlightBytes when zero
	MaxInFlightValues    int           // DefaultMaxInFlightValues (at least maxReviewValues) when zero

	HeaderTimeout           time.Duration // DefaultHeaderTimeout when zero
	IdleTimeout             time.Duration // DefaultIdleTimeout when zero
	MaxConnections          int           // DefaultMaxConnections when zero
	MaxConnectionsPerClient int           // DefaultMaxConnectionsPerClient (at most MaxConnections) when zero
}

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.BodyTimeout, DefaultBodyTimeout)
	def(&l.HeaderTimeout, DefaultHeaderTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	defInt(&l.MaxInFlight, DefaultMaxInFlight)
	defInt(&l.MaxInFlightPerClient, min(DefaultMaxInFlightPerClient, l.MaxInFlight))
	l.MaxInFlightPerClient = min(l.MaxInFlightPerClient, l.MaxInFlight)
	defInt(&l.MaxConnections, DefaultMaxConnections)
	defInt(&l.MaxConnectionsPerClient, min(DefaultMaxConnectionsPerClient, l.MaxConnections))
	l.MaxConnectionsPerClient = min(l.MaxConnectionsPerClient, l.MaxConnections)
	if l.MaxInFlightBytes <= 0 {
		l.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	defInt(&l.MaxInFlightValues, DefaultMaxInFlightValues)
	l.MaxInFlightValues = max(l.MaxInFlightValues, maxReviewValues) // room for one request at the limit
	return l
}

// usage is what the requests of one client, or of all, hold.
type usage struct {
	requests int
	bytes    int64 // announced bodies (Content-Length)
	values   int   // JSON values of the bodies read (an upper bound: valueBound)
}

func (u *usage) add(d usage) {
	u.requests += d.requests
	u.bytes += d.bytes
	u.values += d.values
}

// limiter admits requests within Limits; one limiter is shared by every path of a server. A
// client may hold at most MaxInFlightPerClient requests, and less than all of the bytes and
// JSON values in flight, so that one client alone never leaves the API server nothing.
type limiter struct {
	Limits
	mu       sync.Mutex
	total    usage
	byClient map[string]*usage
}

func newLimiter(l Limits) *limiter {
	return &limiter{Limits: l.withDefaults(), byClient: map[string]*usage{}}
}

// perClient are the most one client may hold: all requests up to MaxInFlightPerClient, and
// all bytes and values but what a few hundred ordinary requests need (an ordinary
// AdmissionReview is a few KiB and a few hundred values).
func (l *limiter) perClient() usage {
	return usage{
		requests: l.MaxInFlightPerClient,
		bytes:    l.MaxInFlightBytes - min(l.MaxInFlightBytes/8, 1<<20),
		values:   l.MaxInFlightValues - min(l.MaxInFlightValues/4, 50_000),
	}
}

// acquire adds d to client's usage if it stays within the limits.
func (l *limiter) acquire(client string, d usage) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.byClient[client]
	if c == nil {
		c = &usage{}
	}
	limit := l.perClient()
	t := l.total
	if t.requests+d.requests > l.MaxInFlight || t.bytes+d.bytes > l.MaxInFlightBytes || t.values+d.values > l.MaxInFlightValues ||
		c.requests+d.requests > limit.requests || c.bytes+d.bytes > limit.bytes || c.values+d.values > limit.values {
		return false
	}
	l.total.add(d)
	c.add(d)
	l.byClient[client] = c
	return true
}

func (l *limiter) release(client string, d usage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d = usage{-d.requests, -d.bytes, -d.values}
	l.total.add(d)
	if c := l.byClient[client]; c != nil {
		if c.add(d); c.requests <= 0 {
			delete(l.byClient, client)
		}
	}
}

// ticket is one admitted request's hold on the limiter.
type ticket struct {
	l      *limiter
	client string
	held   usage
}

// addValues adds the JSON values of the request's body to its hold, if they fit.
func (t *ticket) addValues(n int) bool {
	if !t.l.acquire(t.client, usage{values: n}) {
		return false
	}
	t.held.values += n
	return true
}

type ticketKey struct{}

// ticketFrom returns the request's ticket (nil outside a limited server: `review`, tests).
func ticketFrom(ctx context.Context) *ticket {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	return t
}

// tooBusy answers 429 at once. "Connection: close" keeps it so: without it, net/http would
// first read up to 256 KiB of an unread body to keep the connection, for as long as the
// client takes to send it.
func tooBusy(rw http.ResponseWriter, l Limits) {
	refusedRequests.WithLabelValues("in_flight").Inc()
	rw.Header().Set("Connection", "close")
	rw.Header().Set("Retry-After", "1")
	http.Error(rw, fmt.Sprintf("driverguard webhook: too many admission requests in flight (at most %d, %d from one client, %d MiB of request bodies, %d JSON values); retry",
		l.MaxInFlight, l.MaxInFlightPerClient, l.MaxInFlightBytes>>20, l.MaxInFlightValues), http.StatusTooManyRequests)
}

// wrap serves h within the limits.
func (l *limiter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		size := r.ContentLength // a body whose length is not announced counts as the most read
		if size < 0 || size > MaxReviewBytes {
			size = MaxReviewBytes
		}
		t := &ticket{l: l, client: hostOf(r.RemoteAddr), held: usage{requests: 1, bytes: size}}
		if !l.acquire(t.client, t.held) {
			tooBusy(rw, l.Limits)
			return
		}
		defer func() { l.release(t.client, t.held) }()
		// The server has no read timeout of its own: bound this request's body. (The next
		// request on the connection gets the server's header timeout again.)
		_ = http.NewResponseController(rw).SetReadDeadline(time.Now().Add(l.BodyTimeout))
		h.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), ticketKey{}, t)))
	})
}

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
//
// When a request does not fit, the limiter ends the body read of a request that is still
// reading its body — one of the client that holds the most, never the newcomer's own — and
// waits up to admitWait for room: the API server sends a body at once, so what stalls in the
// reading phase is what a slow or hostile client holds. Stalled bodies from several addresses
// therefore cannot lock the API server out for the body timeout; a newcomer that still does
// not fit is answered 429.
type limiter struct {
	Limits
	mu       sync.Mutex
	total    usage
	byClient map[string]*usage
	reading  map[*ticket]struct{} // admitted requests still reading their body
	changed  chan struct{}        // closed (and replaced) whenever a hold is released
}

// admitWait is how long a request waits for room that evictions are making.
const admitWait = time.Second

func newLimiter(l Limits) *limiter {
	return &limiter{Limits: l.withDefaults(), byClient: map[string]*usage{}, reading: map[*ticket]struct{}{}, changed: make(chan struct{})}
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

// fits reports whether client can add d: the client's own share, then the totals. Called with
// l.mu held.
func (l *limiter) fits(client string, d usage) (fits, ownShare bool) {
	c := l.byClient[client]
	if c == nil {
		c = &usage{}
	}
	limit := l.perClient()
	if c.requests+d.requests > limit.requests || c.bytes+d.bytes > limit.bytes || c.values+d.values > limit.values {
		return false, false
	}
	t := l.total
	return t.requests+d.requests <= l.MaxInFlight && t.bytes+d.bytes <= l.MaxInFlightBytes && t.values+d.values <= l.MaxInFlightValues, true
}

// acquire adds d to t's hold when it fits, evicting stalled body reads of other clients to make
// room, for up to admitWait. It reports whether d was added.
func (l *limiter) acquire(t *ticket, d usage) bool {
	deadline := time.Now().Add(admitWait)
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		fits, ownShare := l.fits(t.client, d)
		if fits {
			l.total.add(d)
			c := l.byClient[t.client]
			if c == nil {
				c = &usage{}
				l.byClient[t.client] = c
			}
			c.add(d)
			t.held.add(d)
			return true
		}
		if !ownShare {
			return false // a client over its own share waits for nobody
		}
		evicting := l.evictFor(t.client)
		wait := time.Until(deadline)
		if !evicting || wait <= 0 {
			return false
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-time.After(wait):
		}
		l.mu.Lock()
	}
}

// evictFor ends the body read of one request of the client (other than newcomer) that holds
// the most requests, the oldest of them, unless one is being evicted already. It reports
// whether an eviction is under way. Called with l.mu held.
func (l *limiter) evictFor(newcomer string) bool {
	var victim *ticket
	for t := range l.reading {
		if t.evicted {
			return true // its hold is about to be released
		}
		if t.client == newcomer {
			continue
		}
		if victim == nil || l.byClient[t.client].requests > l.byClient[victim.client].requests ||
			(t.client == victim.client && t.admitted.Before(victim.admitted)) {
			victim = t
		}
	}
	if victim == nil {
		return false
	}
	victim.evicted = true
	evictedRequests.Inc()
	victim.endRead()
	return true
}

func (l *limiter) release(t *ticket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.reading, t)
	d := usage{-t.held.requests, -t.held.bytes, -t.held.values}
	l.total.add(d)
	if c := l.byClient[t.client]; c != nil {
		if c.add(d); c.requests <= 0 {
			delete(l.byClient, t.client)
		}
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// ticket is one admitted request's hold on the limiter.
type ticket struct {
	l        *limiter
	client   string
	held     usage
	admitted time.Time
	evicted  bool   // its body read was ended to make room (guarded by l.mu)
	endRead  func() // ends the body read at once
}

// bodyRead marks the request's body as read: it is no longer evictable.
func (t *ticket) bodyRead() {
	t.l.mu.Lock()
	delete(t.l.reading, t)
	t.l.mu.Unlock()
}

// wasEvicted reports whether the request's body read was ended to make room.
func (t *ticket) wasEvicted() bool {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	return t.evicted
}

// addValues adds the JSON values of the request's body to its hold, when they fit.
func (t *ticket) addValues(n int) bool { return t.l.acquire(t, usage{values: n}) }

type ticketKey struct{}

// ticketFrom returns the request's ticket (nil outside a limited server: `review`, tests).
func ticketFrom(ctx context.Context) *ticket {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	return t
}

// tooBusy answers 429 at once and closes the connection.
func tooBusy(rw http.ResponseWriter, l Limits) {
	refusedRequests.WithLabelValues("in_flight").Inc()
	rw.Header().Set("Retry-After", "1")
	refuse(rw, http.StatusTooManyRequests, fmt.Sprintf("driverguard webhook: too many admission requests in flight (at most %d, %d from one client, %d MiB of request bodies, %d JSON values); retry",
		l.MaxInFlight, l.MaxInFlightPerClient, l.MaxInFlightBytes>>20, l.MaxInFlightValues))
}

// refuse answers code with msg and ends the connection once the answer is written, whatever
// is left of the request's body: net/http would otherwise read up to 256 KiB of it first (to
// keep the connection), for as long as the client takes to send it.
func refuse(rw http.ResponseWriter, code int, msg string) {
	rw.Header().Set("Connection", "close")
	http.Error(rw, msg, code)
	_ = http.NewResponseController(rw).SetReadDeadline(time.Now())
}

// wrap serves h within the limits.
func (l *limiter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		size := r.ContentLength // a body whose length is not announced counts as the most read
		if size < 0 || size > MaxReviewBytes {
			size = MaxReviewBytes
		}
		rc := http.NewResponseController(rw)
		t := &ticket{l: l, client: hostOf(r.RemoteAddr), admitted: time.Now(),
			endRead: func() { _ = rc.SetReadDeadline(time.Now()) }}
		if !l.acquire(t, usage{requests: 1, bytes: size}) {
			tooBusy(rw, l.Limits)
			return
		}
		defer l.release(t)
		l.mu.Lock()
		l.reading[t] = struct{}{} // evictable until its body is read
		l.mu.Unlock()
		// Bound this request's body (the server's own read timeout is a backstop for every
		// path). The next request on the connection gets the header timeout again.
		_ = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout))
		h.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), ticketKey{}, t)))
	})
}

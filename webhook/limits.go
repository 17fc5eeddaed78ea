package webhook

import (
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
	// DefaultMaxInFlight and DefaultMaxInFlightBytes bound the requests served at once.
	DefaultMaxInFlight      = 64
	DefaultMaxInFlightBytes = 32 << 20
	// maxBodyBytes is controller-runtime's limit on an AdmissionReview body; a body whose
	// length is not announced counts as this much.
	maxBodyBytes = 7 << 20
)

// Limits bound what the requests in flight may hold, so that slow or many clients get a clear
// answer instead of exhausting the pod's memory: a body that is not read within BodyTimeout
// fails the request (400), and a request beyond MaxInFlight requests or MaxInFlightBytes of
// bodies (by Content-Length) is answered 429 before its body is read.
type Limits struct {
	BodyTimeout      time.Duration // DefaultBodyTimeout when zero
	MaxInFlight      int           // DefaultMaxInFlight when zero
	MaxInFlightBytes int64         // DefaultMaxInFlightBytes when zero
}

func (l Limits) withDefaults() Limits {
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.MaxInFlightBytes <= 0 {
		l.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	return l
}

// limiter admits requests within Limits; one limiter is shared by every path of a server.
type limiter struct {
	Limits
	mu       sync.Mutex
	requests int
	bytes    int64
}

func newLimiter(l Limits) *limiter { return &limiter{Limits: l.withDefaults()} }

func (l *limiter) acquire(size int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.requests+1 > l.MaxInFlight || l.bytes+size > l.MaxInFlightBytes {
		return false
	}
	l.requests++
	l.bytes += size
	return true
}

func (l *limiter) release(size int64) {
	l.mu.Lock()
	l.requests--
	l.bytes -= size
	l.mu.Unlock()
}

// wrap serves h within the limits.
func (l *limiter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		size := r.ContentLength
		if size < 0 || size > maxBodyBytes {
			size = maxBodyBytes
		}
		if !l.acquire(size) {
			rw.Header().Set("Retry-After", "1")
			http.Error(rw, fmt.Sprintf("driverguard webhook: too many admission requests in flight (at most %d, or %d MiB of request bodies); retry",
				l.MaxInFlight, l.MaxInFlightBytes>>20), http.StatusTooManyRequests)
			return
		}
		defer l.release(size)
		// The server has no read timeout of its own: bound this request's body. (The next
		// request on the connection gets the server's header timeout again.)
		_ = http.NewResponseController(rw).SetReadDeadline(time.Now().Add(l.BodyTimeout))
		h.ServeHTTP(rw, r)
	})
}

package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// stall opens a TLS connection to the server and sends the headers of a POST announcing
// length bytes of body, and first of them: the body's rest never comes. It returns the
// connection and a reader of the answer.
func stall(t *testing.T, srv *benchServer, length int, first []byte) (net.Conn, *bufio.Reader) {
	t.Helper()
	addr := strings.TrimPrefix(srv.url, "https://")
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}) //nolint:gosec // the test's own certificate
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", webhook.PathValidateDriver, addr, length)
	require.NoError(t, err)
	_, err = conn.Write(first)
	require.NoError(t, err)
	return conn, bufio.NewReader(conn)
}

func post(t *testing.T, srv *benchServer, body []byte) (int, string) {
	t.Helper()
	resp, err := srv.client.Post(srv.url+webhook.PathValidateDriver, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSlowBodyDeadline: a body that stops arriving fails its request once BodyTimeout has
// passed, instead of holding the server for as long as the client likes.
func TestSlowBodyDeadline(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{Limits: webhook.Limits{BodyTimeout: 300 * time.Millisecond}})
	srv := startServer(t, hooks)
	conn, r := stall(t, srv, 4096, []byte(`{"apiVersion":`))
	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(r, nil)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Contains(t, string(b), `"code":400`, "the request fails as unreadable")
	} // else: the server closed the connection, which also ends the request
	elapsed := time.Since(start)
	assert.Less(t, elapsed, 5*time.Second, "the stalled body was not timed out")
	assert.GreaterOrEqual(t, elapsed, 250*time.Millisecond)

	// The server still answers.
	code, body := post(t, srv, wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", wt.Sel(v1alpha1.LabelFamily, "atom")), nil))))
	assert.Equal(t, http.StatusOK, code, body)
}

// TestInFlightCap: beyond MaxInFlight requests, or MaxInFlightBytes of announced bodies, a
// request is answered 429 at once without its body being read; when the stalled ones end, the
// server answers again.
func TestInFlightCap(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{Limits: webhook.Limits{BodyTimeout: 2 * time.Second, MaxInFlight: 3, MaxInFlightBytes: 1 << 20}})
	srv := startServer(t, hooks)
	review := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", wt.Sel(v1alpha1.LabelFamily, "atom")), nil)))

	code, body := post(t, srv, append(review, bytes.Repeat([]byte(" "), 2<<20)...))
	assert.Equal(t, http.StatusTooManyRequests, code, "a 2 MiB body is over the 1 MiB budget")
	assert.Contains(t, body, "too many admission requests in flight")

	for range 3 {
		stall(t, srv, 1024, []byte("{"))
	}
	time.Sleep(200 * time.Millisecond) // the three are being served
	start := time.Now()
	code, body = post(t, srv, review)
	assert.Equal(t, http.StatusTooManyRequests, code, body)
	assert.Less(t, time.Since(start), time.Second, "refused at once")

	require.Eventually(t, func() bool {
		code, _ := post(t, srv, review)
		return code == http.StatusOK
	}, 10*time.Second, 100*time.Millisecond, "once the stalled bodies time out, requests are served again")
}

// TestStalledBodiesKeepMemoryBounded: 40 connections each announcing a 7 MB body and sending
// it slowly (what pushed the server past its 256Mi limit before) leave the heap bounded by the
// in-flight byte budget.
func TestStalledBodiesKeepMemoryBounded(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{Limits: webhook.Limits{BodyTimeout: 3 * time.Second}})
	srv := startServer(t, hooks)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	chunk := bytes.Repeat([]byte("a"), 256<<10)
	var wg sync.WaitGroup
	var peak uint64
	var mu sync.Mutex
	for range 40 {
		conn, _ := stall(t, srv, 7<<20, []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"`))
		wg.Go(func() {
			for ctx.Err() == nil {
				_ = conn.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := conn.Write(chunk); err != nil {
					return // refused (429) or timed out: the server closed it
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	go func() {
		for ctx.Err() == nil {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			mu.Lock()
			peak = max(peak, m.HeapAlloc)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	growth := int64(peak) - int64(before.HeapAlloc)
	t.Logf("heap grew by %d MiB at most", growth>>20)
	assert.Less(t, growth, int64(128<<20), "40 stalled 7 MB bodies must not all be buffered (the budget is %d MiB)", webhook.DefaultMaxInFlightBytes>>20)
}

// TestAtTheCapTheBodyIsNotRead: at the in-flight cap, a request that announces a body and
// sends none is answered 429 at once; net/http would otherwise wait for up to 256 KiB of it.
func TestAtTheCapTheBodyIsNotRead(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{Limits: webhook.Limits{BodyTimeout: 20 * time.Second, MaxInFlight: 1}})
	srv := startServer(t, hooks)
	stall(t, srv, 4096, []byte("{")) // holds the one slot, trickling nothing more
	time.Sleep(200 * time.Millisecond)
	for _, length := range []int{1000, 200 << 10, 300000} {
		conn, r := stall(t, srv, length, nil)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		start := time.Now()
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err, "Content-Length %d: no answer", length)
		resp.Body.Close()
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		assert.Less(t, time.Since(start), time.Second, "Content-Length %d: answered at once", length)
		assert.True(t, resp.Close, "the connection is closed, so the unread body does not matter")
	}
}

// dialFrom opens a TLS connection to srv from the local address ip (any 127.0.0.0/8 address
// reaches the loopback interface on Linux).
func dialFrom(t *testing.T, srv *benchServer, ip string) (*tls.Conn, error) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", strings.TrimPrefix(srv.url, "https://"), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}) //nolint:gosec // the test's own certificate
	if err == nil {
		t.Cleanup(func() { conn.Close() })
	}
	return conn, err
}

// TestPerClientRequests: one client at its share of the requests in flight is refused; another
// client is still served.
func TestPerClientRequests(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{Limits: webhook.Limits{BodyTimeout: 20 * time.Second, MaxInFlight: 4, MaxInFlightPerClient: 2}})
	srv := startServer(t, hooks)
	addr := strings.TrimPrefix(srv.url, "https://")
	header := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{", webhook.PathValidateDriver, addr)
	for range 2 {
		conn, err := dialFrom(t, srv, "127.0.0.2")
		require.NoError(t, err)
		_, err = conn.Write([]byte(header))
		require.NoError(t, err)
	}
	time.Sleep(200 * time.Millisecond)
	conn, err := dialFrom(t, srv, "127.0.0.2")
	require.NoError(t, err)
	_, err = conn.Write([]byte(header))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the third request of 127.0.0.2")

	code, body := post(t, srv, wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", wt.Sel(v1alpha1.LabelFamily, "atom")), nil))))
	assert.Equal(t, http.StatusOK, code, "another client: %s", body)
}

// TestConnectionLimits: beyond its share of connections a client's new connections are closed
// at once; another client still connects and is served; a connection that sends nothing is
// closed after the header timeout.
func TestConnectionLimits(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{})
	srv := startServerWith(t, hooks, webhook.Limits{MaxConnections: 20, MaxConnectionsPerClient: 5, HeaderTimeout: 500 * time.Millisecond})
	addr := strings.TrimPrefix(srv.url, "https://")
	var held []net.Conn
	for range 5 {
		c, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, tcpAddr(t, addr))
		require.NoError(t, err)
		held = append(held, c)
		t.Cleanup(func() { c.Close() })
	}
	time.Sleep(100 * time.Millisecond)
	_, err := dialFrom(t, srv, "127.0.0.2")
	assert.Error(t, err, "the sixth connection of 127.0.0.2 is closed")

	code, body := post(t, srv, wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", wt.Sel(v1alpha1.LabelFamily, "atom")), nil))))
	assert.Equal(t, http.StatusOK, code, "another client: %s", body)

	// The silent connections are closed by the header (handshake) timeout; then 127.0.0.2
	// connects again.
	for _, c := range held {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		start := time.Now()
		_, err := c.Read(make([]byte, 1))
		assert.Error(t, err)
		assert.Less(t, time.Since(start), 3*time.Second, "closed within the header timeout")
	}
	require.Eventually(t, func() bool {
		_, err := dialFrom(t, srv, "127.0.0.2")
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)
}

func tcpAddr(t *testing.T, addr string) *net.TCPAddr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	require.NoError(t, err)
	return a
}

// TestValueBudget: the JSON values of the bodies in flight are bounded: with room for one
// large request, a second one waiting on the same budget is refused while the first holds it.
func TestValueBudget(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{Limits: webhook.Limits{MaxInFlightValues: 1}}) // raised to one request at the limit
	srv := startServer(t, hooks)
	d := wt.Driver("rbln-driver-x", wt.Sel(v1alpha1.LabelFamily, "atom"))
	d.Labels = map[string]string{}
	for i := range 60_000 {
		d.Labels["l"+strconv.Itoa(i)] = "v"
	}
	big := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, d, nil)))
	code, body := post(t, srv, big)
	assert.Equal(t, http.StatusOK, code, "one request at the value budget fits: %.300s", body)

	var wg sync.WaitGroup
	codes := make(chan int, 8)
	for range 8 {
		wg.Go(func() {
			code, _ := post(t, srv, big)
			codes <- code
		})
	}
	wg.Wait()
	close(codes)
	var busy int
	for c := range codes {
		if c == http.StatusTooManyRequests {
			busy++
		}
	}
	assert.Positive(t, busy, "eight requests of 60,000 values at once over a budget of 100,000: some are refused")
}

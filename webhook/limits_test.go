package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
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

	"github.com/driverguard/driverguard/operator"
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
	code, body := post(t, srv, wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", wt.Sel(operator.LabelFamily, "atom")), nil))))
	assert.Equal(t, http.StatusOK, code, body)
}

// TestInFlightCap: beyond MaxInFlight requests, or MaxInFlightBytes of announced bodies, a
// request is answered 429 at once without its body being read; when the stalled ones end, the
// server answers again.
func TestInFlightCap(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{Limits: webhook.Limits{BodyTimeout: 2 * time.Second, MaxInFlight: 3, MaxInFlightBytes: 1 << 20}})
	srv := startServer(t, hooks)
	review := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", wt.Sel(operator.LabelFamily, "atom")), nil)))

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

	code, body := post(t, srv, wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", wt.Sel(operator.LabelFamily, "atom")), nil))))
	assert.Equal(t, http.StatusOK, code, "another client: %s", body)
}

// TestConnectionLimits: connections that send nothing hold at most half a client's share
// (its others are closed at once) and are closed after the handshake timeout; when the
// handshake slots are all taken, an honest client's connection still gets through (the oldest
// silent one is closed for it); a client's served connections are bounded too.
func TestConnectionLimits(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{})
	srv := startServerWith(t, hooks, webhook.Limits{MaxConnections: 8, MaxConnectionsPerClient: 6, HeaderTimeout: 3 * time.Second})
	addr := strings.TrimPrefix(srv.url, "https://")
	silent := func(ip string) net.Conn {
		c, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.ParseIP(ip)}, tcpAddr(t, addr))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedAtOnce := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	// 127.0.0.2 may hold 3 connections in their handshake (half of 6); a 4th is closed.
	var held []net.Conn
	for range 3 {
		held = append(held, silent("127.0.0.2"))
	}
	time.Sleep(100 * time.Millisecond)
	assert.True(t, closedAtOnce(silent("127.0.0.2")), "a client's 4th silent connection is closed at once")
	for _, c := range held {
		assert.False(t, closedAtOnce(c), "the first three are held (until the handshake timeout): %v", c.LocalAddr())
	}
	// 127.0.0.3 takes the last handshake slot (4 = half of 8); an honest client still gets in:
	// the oldest silent connection is closed for it.
	held = append(held, silent("127.0.0.3"))
	time.Sleep(100 * time.Millisecond)
	code, body := post(t, srv, wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", wt.Sel(operator.LabelFamily, "atom")), nil))))
	assert.Equal(t, http.StatusOK, code, "an honest client while the handshake slots are taken: %s", body)
	assert.True(t, closedAtOnce(held[0]), "the oldest silent connection made room")

	// The others are closed by the handshake timeout.
	for _, c := range held[1:] {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		start := time.Now()
		_, err := c.Read(make([]byte, 1))
		assert.Error(t, err)
		assert.Less(t, time.Since(start), 4*time.Second, "closed within the handshake timeout")
	}

	// Served connections: a client holds at most 6; its 7th is closed once its handshake is done.
	var served []*tls.Conn
	for range 6 {
		c, err := dialFrom(t, srv, "127.0.0.4")
		require.NoError(t, err)
		served = append(served, c)
	}
	time.Sleep(100 * time.Millisecond)
	c, err := dialFrom(t, srv, "127.0.0.4")
	if err == nil {
		assert.True(t, closedAtOnce(c), "a client's 7th served connection is closed")
	}
	_ = served
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
	d := wt.Driver("rbln-driver-x", wt.Sel(operator.LabelFamily, "atom"))
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

// stallFrom is stall from the local address ip, with the headers given.
func stallFrom(t *testing.T, srv *benchServer, ip, headers string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := dialFrom(t, srv, ip)
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s\r\n{", webhook.PathValidateDriver, headers)
	require.NoError(t, err)
	return conn, bufio.NewReader(conn)
}

// TestStalledBodiesAreEvicted: stalled bodies from two addresses holding every byte in flight
// (a chunked body counts as the 7 MiB most, the other almost 1 MiB) do not lock a third client
// out: one of them is ended to make room, and the newcomer is judged.
func TestStalledBodiesAreEvicted(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{Limits: webhook.Limits{BodyTimeout: 30 * time.Second}})
	srv := startServer(t, hooks)
	a, ra := stallFrom(t, srv, "127.0.0.2", "Transfer-Encoding: chunked\r\n")
	b, rb := stallFrom(t, srv, "127.0.0.3", fmt.Sprintf("Content-Length: %d\r\n", 1<<20-100))
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	code, body := post(t, srv, wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", wt.Sel(operator.LabelFamily, "atom")), nil))))
	assert.Equal(t, http.StatusOK, code, "a third client while two stalled bodies hold every byte: %s", body)
	assert.Less(t, time.Since(start), 2*time.Second)
	// One of the stalled requests was ended: its client gets an answer (400) or a closed
	// connection, at once.
	ended := 0
	for _, c := range []struct {
		conn net.Conn
		r    *bufio.Reader
	}{{a, ra}, {b, rb}} {
		_ = c.conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := http.ReadResponse(c.r, nil); err == nil || !isTimeout(err) {
			ended++
		}
	}
	assert.Equal(t, 1, ended, "one stalled request made room")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestRefusalsCloseTheConnection: a request to a path with no webhook, or refused because its
// client holds its whole share, is answered at once and its connection closed, without the unread body being waited for.
func TestRefusalsCloseTheConnection(t *testing.T) {
	hooks := webhook.New(benchState(10, 2), webhook.Options{Limits: webhook.Limits{BodyTimeout: 20 * time.Second, MaxInFlight: 1}})
	srv := startServer(t, hooks)
	addr := strings.TrimPrefix(srv.url, "https://")
	probe := func(path string) {
		conn, err := dialFrom(t, srv, "127.0.0.5")
		require.NoError(t, err)
		_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", path, addr)
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err, path)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		start := time.Now()
		_, err = r.ReadByte()
		assert.Error(t, err, "%s: the connection is closed", path)
		assert.False(t, isTimeout(err), "%s: closed, not left open: %v", path, err)
		assert.Less(t, time.Since(start), time.Second, path)
	}
	probe("/nope")
	stallFrom(t, srv, "127.0.0.5", "Content-Length: 4096\r\n") // holds the client's one slot
	time.Sleep(200 * time.Millisecond)
	probe(webhook.PathValidateDriver)
}

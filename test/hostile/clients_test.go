package hostile

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// attacker is the address the attack comes from: another pod, as far as serve can tell (the
// API server calls from 127.0.0.1).
var attacker = net.ParseIP("127.0.0.2")

// Bounds asserted here: serve's defaults (docs/webhook.md, "Bounds").
const (
	maxAttackRSSGrowth = 64 << 20
	// answerWithin is how soon a new request must be answered or closed: the header timeout
	// and the body timeout (the longest a connection may stay silent before and after its
	// headers), with room for a loaded machine.
	answerWithin = webhook.DefaultHeaderTimeout + webhook.DefaultBodyTimeout + 5*time.Second
)

// TestSlowAndStalledClients: 64 requests that send most of a 256 KiB body and stop, and
// 2,000 connections that never send a request (half stop before the TLS handshake, half after
// it, in the middle of their headers), all from one address. Meanwhile admission through the
// API server keeps working, every new request of the attacker is answered (429) or closed
// within the header timeout, and serve's memory grows by at most 64 MiB.
func TestSlowAndStalledClients(t *testing.T) {
	requireEnv(t)
	c := newClient(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	freshServe(t) // measured on a process no other test has grown
	stop := peakWatcher(t)
	before := memory(t, "VmRSS")

	var (
		attackers sync.WaitGroup
		opened    atomic.Int64 // connections the attack opened
		conns     = make(chan net.Conn, 4096)
	)
	hold := func(conn net.Conn) {
		opened.Add(1)
		conns <- conn
	}
	t.Cleanup(func() {
		close(conns)
		for conn := range conns {
			conn.Close()
		}
	})
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: attacker}, Timeout: 5 * time.Second}
	// 64 slow requests: headers, 200 KiB of a 256 KiB body, then nothing.
	for range 64 {
		attackers.Go(func() {
			conn, err := tls.DialWithDialer(dialer, "tcp", webhookAddr(), tlsConfig(t))
			if err != nil {
				return // refused: the server holds enough of this client's connections
			}
			hold(conn)
			_, _ = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", webhook.PathValidateDriver, 256<<10)
			_, _ = conn.Write(make([]byte, 200<<10))
		})
	}
	// 2,000 stalled connections.
	for i := range 2000 {
		attackers.Go(func() {
			raw, err := dialer.DialContext(ctx, "tcp", webhookAddr())
			if err != nil {
				return
			}
			hold(raw)
			if i%2 == 0 {
				return // silent before the handshake
			}
			conn := tls.Client(raw, tlsConfig(t))
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if conn.Handshake() != nil {
				return
			}
			_, _ = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n", webhook.PathValidateDriver) // and no more headers
		})
	}
	attackers.Wait()
	t.Logf("the attack holds %d connections (some already closed by the server)", opened.Load())

	// During the attack: admission through the API server works, and the attacker's new
	// requests are answered or closed at once.
	var slowest time.Duration
	for i := range 10 {
		d := wt.Driver(fmt.Sprintf("rbln-driver-during-%d", i), wt.Sel(operator.LabelFamily, "atom", "attack", fmt.Sprint(i)))
		assert.NoError(t, c.Create(t.Context(), d, client.DryRunAll), "admission through the API server during the attack (round %d)", i)

		start := time.Now()
		probe(t, dialer)
		slowest = max(slowest, time.Since(start))
		time.Sleep(500 * time.Millisecond)
	}
	peak := stop()
	t.Logf("serve's resident memory: %s before, peak %s (+%s); the attacker's slowest answer %s",
		mib(before), mib(peak), mib(peak-before), slowest.Round(time.Millisecond))
	assert.LessOrEqual(t, peak-before, int64(maxAttackRSSGrowth), "serve's memory growth")
	assert.Less(t, slowest, answerWithin, "a new request of the attacker is answered or closed within the timeouts")
}

// probe sends a request that announces 1,000 bytes of body and sends none, from the attacker:
// serve answers it (429 at once, or 400 once the body times out) or closes the connection; it
// never leaves it hanging.
func probe(t *testing.T, dialer *net.Dialer) {
	t.Helper()
	conn, err := tls.DialWithDialer(dialer, "tcp", webhookAddr(), tlsConfig(t))
	if err != nil {
		return // closed at once
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * answerWithin))
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", webhook.PathValidateDriver); err != nil {
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return // closed
	}
	resp.Body.Close()
	// 200 carries the AdmissionReview that says the body could not be read (code 400).
	assert.Contains(t, []int{http.StatusTooManyRequests, http.StatusOK}, resp.StatusCode, "the attacker's probe")
}

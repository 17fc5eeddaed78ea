package docs

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// registryProxy is the only way out of the sandbox: every command's HTTPS_PROXY. It tunnels a
// CONNECT to any host into an in-process OCI registry (go-containerregistry's) that answers as
// that host, with a certificate for it from a CA of the test's own (the commands' SSL_CERT_FILE).
// So `--check-images` asks "repo.rebellions.ai" — this registry, which holds no image — and
// nothing a command does reaches beyond this machine. Plain HTTP through the proxy is refused.
type registryProxy struct {
	addr     string // host:port of the proxy
	caFile   string // the CA certificate, PEM
	requests atomic.Int64

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	certs sync.Map // SNI -> *tls.Certificate

	proxy    *http.Server
	registry *http.Server
	conns    chan net.Conn
	done     chan struct{}
}

func startRegistryProxy(dir string) (*registryProxy, error) {
	p := &registryProxy{conns: make(chan net.Conn), done: make(chan struct{})}
	var err error
	if p.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "driverguard test/docs registry CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		return nil, err
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	p.caFile = dir + "/registry-ca.pem"
	if err := os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}

	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	p.registry = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.requests.Add(1)
			reg.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = p.registry.Serve(chanListener{p}) }()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = l.Addr().String()
	p.proxy = &http.Server{Handler: http.HandlerFunc(p.connect), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = p.proxy.Serve(l) }()
	return p, nil
}

// connect answers a CONNECT with the tunnel, whose TLS this proxy ends with a certificate for the
// host asked for, and hands the connection to the registry's server.
func (p *registryProxy) connect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "test/docs: this proxy only tunnels HTTPS to its test registry", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := rw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n"); err != nil || rw.Flush() != nil {
		conn.Close()
		return
	}
	tlsConn := tls.Server(bufferedConn{conn, rw.Reader}, &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"},
		GetCertificate: p.certificate,
	})
	select {
	case p.conns <- tlsConn:
	case <-p.done:
		conn.Close()
	}
}

// certificate is a leaf certificate for the server name the client asks for, signed by the CA.
func (p *registryProxy) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := hello.ServerName
	if name == "" {
		return nil, errors.New("no server name")
	}
	if c, ok := p.certs.Load(name); ok {
		return c.(*tls.Certificate), nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.DNSNames, tmpl.IPAddresses = nil, []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	actual, _ := p.certs.LoadOrStore(name, c)
	return actual.(*tls.Certificate), nil
}

func (p *registryProxy) Close() error {
	close(p.done)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(p.proxy.Shutdown(ctx), p.registry.Shutdown(ctx))
}

// chanListener is the registry server's listener: the tunnels the proxy opened.
type chanListener struct{ p *registryProxy }

func (l chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.p.conns:
		return c, nil
	case <-l.p.done:
		return nil, net.ErrClosed
	}
}

func (l chanListener) Close() error   { return nil }
func (l chanListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// bufferedConn reads what the proxy's reader already buffered before the connection itself.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

package browserproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
)

// A development server's https usually has a certificate no browser trusts
// (self-signed, or a local CA's). Under Options.PrivateTLS the proxy accepts
// such a certificate for a loopback or private destination, and only there:
//
//   - For a CONNECT whose every address is loopback or private (as the
//     guard's resolver answers, classified by the Dialer's Classify), the
//     proxy terminates the browser's TLS itself with a certificate for the
//     requested host made from one key it generated at start and never
//     writes anywhere, and sends each request on to the server over a new
//     TLS connection that does not verify the server's certificate. That
//     connection is dialed through the guard, and its remote address is
//     checked to be non-public after the dial, so a name that rebinds to a
//     public address between the two answers is refused, not trusted.
//   - The browser trusts that one key (its SPKI hash, PrivateTLSSPKI, goes to
//     Chromium's --ignore-certificate-errors-spki-list), so only this proxy
//     can present a certificate the browser accepts without a chain.
//   - Every other CONNECT is a byte tunnel, as without PrivateTLS: the browser
//     verifies a public host's certificate against the system roots, and an
//     invalid one fails as it always did.

// privateResolver is what PrivateTLS needs of the Dialer (*egress.Guard has
// it): the guard's classified answers for a host, without dialing; they are
// judged with egress.AllPrivate.
type privateResolver interface {
	Resolve(ctx context.Context, host string) ([]netip.Addr, error)
}

// privateTLS holds the proxy's interception key and its leaf certificates.
type privateTLS struct {
	key  *ecdsa.PrivateKey
	spki string // base64 SHA-256 of the key's SubjectPublicKeyInfo

	mu     sync.Mutex // guards leaves
	leaves map[string]*tls.Certificate
}

func newPrivateTLS() (*privateTLS, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("browserproxy: private TLS key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("browserproxy: private TLS key: %w", err)
	}
	sum := sha256.Sum256(der)
	return &privateTLS{key: key, spki: base64.StdEncoding.EncodeToString(sum[:]), leaves: map[string]*tls.Certificate{}}, nil
}

// leaf returns a certificate for host signed by the interception key.
func (pt *privateTLS) leaf(host string) (*tls.Certificate, error) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if c := pt.leaves[host]; c != nil {
		return c, nil
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{ip.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &pt.key.PublicKey, pt.key)
	if err != nil {
		return nil, fmt.Errorf("browserproxy: leaf certificate: %w", err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: pt.key}
	if len(pt.leaves) < 1024 {
		pt.leaves[host] = c
	}
	return c, nil
}

// PrivateTLSSPKI returns the base64 SHA-256 SPKI hash of the key the proxy
// presents to the browser for loopback and private https destinations, for
// Chromium's --ignore-certificate-errors-spki-list, or "" without
// Options.PrivateTLS.
func (p *Proxy) PrivateTLSSPKI() string {
	if p.ptls == nil {
		return ""
	}
	return p.ptls.spki
}

// interceptsPrivate reports whether a CONNECT to host goes to a loopback or
// private destination whose TLS the proxy terminates.
func (p *Proxy) interceptsPrivate(ctx context.Context, host string) bool {
	if p.ptls == nil {
		return false
	}
	r, ok := p.dialer.(privateResolver)
	if !ok {
		return false
	}
	addrs, err := r.Resolve(ctx, host)
	return err == nil && egress.AllPrivate(addrs)
}

// servePrivateTLS terminates the browser's TLS on client for host and
// forwards its requests to address (host:port) over unverified TLS to a
// non-public address.
func (s *Session) servePrivateTLS(client net.Conn, host, address, shown string) {
	conn := tls.Server(client, &tls.Config{
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.p.ptls.leaf(host)
		},
	})
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := s.dial(ctx, network, address)
			if err != nil {
				return nil, err
			}
			if ap, perr := netip.ParseAddrPort(c.RemoteAddr().String()); perr != nil || !egress.AllPrivate([]netip.Addr{ap.Addr()}) {
				_ = c.Close()
				return nil, fault.New(fault.DNSTargetProhibited, "host %s no longer resolves to a private address", host)
			}
			return c, nil
		},
		// The point: a development server's own certificate is not
		// verified, and the connection was checked to be non-public above.
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: true, ServerName: host, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       s.p.opts.IdleTimeout / 2,
		DisableCompression:    true,
	}
	defer transport.CloseIdleConnections()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "https", address
			pr.Out.Host = pr.In.Host
		},
		Transport:      transport,
		ModifyResponse: s.modifyResponse,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.refuse(w, r, shown, err)
		},
		ErrorLog: s.rp.ErrorLog,
	}
	ln := &oneConnListener{conn: conn, done: make(chan struct{})}
	// A websocket upgrade hijacks the connection and is copied inside its
	// handler, so the connection is released only when handlers are done.
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	srv := s.p.newServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer inFlight.Done()
		r.Body = http.MaxBytesReader(w, r.Body, s.p.opts.MaxBodyBytes)
		rp.ServeHTTP(w, r)
	}))
	stop := context.AfterFunc(s.ctx, func() { _ = srv.Close() })
	defer stop()
	srv.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			ln.Close()
		}
	}
	_ = srv.Serve(ln)
	<-ln.done
	_ = srv.Close()
}

// oneConnListener hands out one connection, then blocks until closed.
type oneConnListener struct {
	mu   sync.Mutex
	conn net.Conn // nil once handed out
	done chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, errors.New("browserproxy: listener closed")
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

package demo

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"path"
	"sync/atomic"
	"time"
)

// Host is the sample site's name. In the demo it resolves, inside the
// bastion child only, to StubAddr.
const Host = "preview.example.com"

// StubAddr is the public address Host resolves to in the demo (the address
// example.com had for years). The egress guard classifies it like any public
// address; the demo's dial override then connects to the local site instead.
var StubAddr = netip.AddrFrom4([4]byte{93, 184, 216, 34})

// The sample site's revisions: Revision1 has the seeded defects, Revision2
// (the "deployed fix") repairs some of them but not all.
const (
	Revision1 = "demo-rev-1"
	Revision2 = "demo-rev-2"
)

//go:embed site
var siteFS embed.FS

// Site is the sample site: a realistic pricing page served over HTTPS on
// 127.0.0.1 with a freshly generated self-signed certificate for Host.
// SetRevision switches what it serves, as a deploy would.
type Site struct {
	// Set once by StartSite.
	srv  *http.Server
	ln   net.Listener
	spki string

	rev atomic.Int32 // 1 or 2
}

// StartSite serves revision 1 of the sample site on 127.0.0.1 with a random
// port until Close.
func StartSite(logger *slog.Logger) (*Site, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cert, spki, err := selfSigned(Host)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: listen: %w", err)
	}
	s := &Site{ln: ln, spki: spki}
	s.rev.Store(1)
	s.srv = &http.Server{
		Handler:           s,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	go func() {
		if err := s.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("demo site stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the loopback address the site listens on.
func (s *Site) Addr() netip.AddrPort { return netip.MustParseAddrPort(s.ln.Addr().String()) }

// SPKIHash is the base64 SHA-256 of the certificate's SubjectPublicKeyInfo,
// the form Chromium's --ignore-certificate-errors-spki-list takes.
func (s *Site) SPKIHash() string { return s.spki }

// SetRevision switches the served revision: 1 or 2.
func (s *Site) SetRevision(n int) error {
	if n != 1 && n != 2 {
		return fmt.Errorf("demo: no revision %d", n)
	}
	s.rev.Store(int32(n))
	return nil
}

// Revision returns the served revision's name.
func (s *Site) Revision() string {
	if s.rev.Load() == 2 {
		return Revision2
	}
	return Revision1
}

// Close stops the site.
func (s *Site) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// ServeHTTP serves the current revision: /pricing and /assets/site.css. Every
// other path is a 404, as on a real preview.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	dir := fmt.Sprintf("site/rev%d", s.rev.Load())
	var file, ctype string
	switch path.Clean(r.URL.Path) {
	case "/pricing":
		file, ctype = "pricing.html", "text/html; charset=utf-8"
	case "/assets/site.css":
		file, ctype = "site.css", "text/css; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(siteFS, dir+"/"+file)
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Revision", s.Revision())
	w.Write(b)
}

// selfSigned returns a fresh ECDSA certificate for host, valid for a day,
// and its SPKI hash.
func selfSigned(host string) (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("demo: key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("demo: serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host, Organization: []string{"bastion demo"}},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("demo: certificate: %w", err)
	}
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("demo: spki: %w", err)
	}
	sum := sha256.Sum256(spki)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, base64.StdEncoding.EncodeToString(sum[:]), nil
}

package targets

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
)

// memStore is an in-memory Store for these tests only; production uses the
// SQLite and Postgres stores.
type memStore struct {
	mu sync.Mutex
	m  map[[2]string]Target
}

func newMemStore() *memStore { return &memStore{m: make(map[[2]string]Target)} }

func (s *memStore) TargetPut(_ context.Context, t Target) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[[2]string{t.Tenant, t.Host}] = t
	return nil
}

func (s *memStore) TargetGet(_ context.Context, tenant, host string) (Target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.m[[2]string{tenant, host}]
	if !ok {
		return Target{}, ErrNotFound
	}
	return t, nil
}

func (s *memStore) TargetList(_ context.Context, tenant string) ([]Target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ts []Target
	for k, t := range s.m {
		if k[0] == tenant {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(a, b Target) int { return strings.Compare(a.Host, b.Host) })
	return ts, nil
}

func (s *memStore) TargetDelete(_ context.Context, tenant, host string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, [2]string{tenant, host})
	return nil
}

// txtZone answers TXT lookups from a map, like a DNS server would: a name
// that is absent is NXDOMAIN. Only DNS is stubbed in these tests.
type txtZone struct {
	mu sync.Mutex
	m  map[string][]string
}

func (z *txtZone) set(name string, vals ...string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.m[name] = vals
}

func (z *txtZone) LookupTXT(_ context.Context, name string) ([]string, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	v, ok := z.m[name]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	return v, nil
}

// clock is an injected, settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// publicIP is what the stubbed DNS answers for the proof hosts: a public
// address, so the guard allows it; the test dialer then connects to the
// loopback TLS server instead of the internet.
var publicIP = netip.MustParseAddr("93.184.215.14")

type testBundle struct {
	reg   *Registry
	store *memStore
	zone  *txtZone
	clock *clock
	site  *httptest.Server
	mux   *http.ServeMux
}

// setup builds a registry whose well-known fetches go through a real egress
// guard (static DNS) to a real loopback HTTPS server. httptest's certificate
// covers example.com and *.example.com, so the proof hosts live there.
func setup(t *testing.T, o Options) *testBundle {
	t.Helper()
	mux := http.NewServeMux()
	site := httptest.NewTLSServer(mux)
	t.Cleanup(site.Close)

	guard := egress.NewGuard(egress.Policy{}, egress.StaticResolver{
		"proof.example.com": {publicIP},
		"www.example.com":   {publicIP},
		"other.example.com": {publicIP},
		"evil.example.com":  {publicIP, netip.MustParseAddr("127.0.0.1")},
		"inner.example.com": {netip.MustParseAddr("10.0.0.7")},
	})
	d := &redirectDialer{guard: guard, to: site.Listener.Addr().String()}
	roots := x509.NewCertPool()
	roots.AddCert(site.Certificate())
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:           nil,
			DialContext:     d.DialContext,
			TLSClientConfig: &tls.Config{RootCAs: roots},
		},
		// Re-check every hop with the guard, as the guarded client does.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			_, err := guard.Check(req.Context(), req.URL.String())
			return err
		},
		Timeout: 5 * time.Second,
	}
	b := &testBundle{
		store: newMemStore(),
		zone:  &txtZone{m: make(map[string][]string)},
		clock: &clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)},
		site:  site,
		mux:   mux,
	}
	b.reg = NewRegistry(b.store, b.zone, client, b.clock.Now, o)
	return b
}

// redirectDialer asks the real guard about every address (resolve once,
// classify, policy) and, only for an allowed answer, connects to the local
// TLS server in place of the pinned public address.
type redirectDialer struct {
	guard *egress.Guard
	to    string
}

func (d *redirectDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if _, err := d.guard.Check(ctx, "https://"+address+"/"); err != nil {
		return nil, err
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, d.to)
}

func (b *testBundle) serveProof(path, body string) {
	b.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(body))
	})
}

func TestAddIssuesChallenge(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	c, err := b.reg.Add(ctx, "acme", "Proof.Example.COM.")
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "proof.example.com" {
		t.Errorf("Host = %q, want proof.example.com", c.Host)
	}
	if len(c.Token) != 52 || strings.ToLower(c.Token) != c.Token {
		t.Errorf("Token = %q, want 52 lowercase base32 characters", c.Token)
	}
	if c.TXTName != "_bastion-challenge.proof.example.com" || c.TXTValue != "bastion-verification="+c.Token {
		t.Errorf("TXT = %q %q", c.TXTName, c.TXTValue)
	}
	if c.WellKnownURL != "https://proof.example.com/.well-known/bastion-verification.txt" {
		t.Errorf("WellKnownURL = %q", c.WellKnownURL)
	}
	if want := b.clock.Now().Add(DefaultTokenTTL); !c.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v", c.ExpiresAt, want)
	}
	again, err := b.reg.Add(ctx, "acme", "proof.example.com")
	if err != nil || again.Token != c.Token {
		t.Errorf("second Add = %q, %v; want the same live token %q", again.Token, err, c.Token)
	}
	other, err := b.reg.Add(ctx, "globex", "proof.example.com")
	if err != nil || other.Token == c.Token {
		t.Errorf("another tenant's Add = %q, %v; want its own token", other.Token, err)
	}
	if _, err := b.reg.Add(ctx, "acme", "127.0.0.1"); !fault.Is(err, fault.URLNotAllowed) {
		t.Errorf("Add(IP literal) error = %v, want URL_NOT_ALLOWED", err)
	}
	if ok, err := b.reg.IsVerified(ctx, "acme", "proof.example.com"); ok || err != nil {
		t.Errorf("IsVerified before proof = %v, %v; want false", ok, err)
	}
}

func TestVerifyDNSTXT(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	c, err := b.reg.Add(ctx, "acme", "proof.example.com")
	if err != nil {
		t.Fatal(err)
	}
	b.zone.set(c.TXTName, "v=spf1 -all", "  "+c.TXTValue+" ")
	got, err := b.reg.Verify(ctx, "acme", "proof.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != MethodDNSTXT || !got.VerifiedAt.Equal(b.clock.Now()) || !got.ExpiresAt.Equal(b.clock.Now().Add(DefaultProofTTL)) {
		t.Errorf("Verify = %+v", got)
	}
	if ok, err := b.reg.IsVerified(ctx, "acme", "PROOF.example.com."); !ok || err != nil {
		t.Errorf("IsVerified = %v, %v; want true", ok, err)
	}
	if ok, err := b.reg.Verifier("acme").IsVerified(ctx, "proof.example.com"); !ok || err != nil {
		t.Errorf("Verifier(acme).IsVerified = %v, %v; want true", ok, err)
	}
}

func TestVerifyWellKnown(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	c, err := b.reg.Add(ctx, "acme", "proof.example.com")
	if err != nil {
		t.Fatal(err)
	}
	b.serveProof(WellKnownPath, c.Token+"\n")
	got, err := b.reg.Verify(ctx, "acme", "proof.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != MethodWellKnown {
		t.Errorf("Method = %q, want %q", got.Method, MethodWellKnown)
	}
	if ok, _ := b.reg.IsVerified(ctx, "acme", "proof.example.com"); !ok {
		t.Error("IsVerified = false after a well-known proof")
	}
}

func TestVerifyWrongToken(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	c, err := b.reg.Add(ctx, "acme", "proof.example.com")
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Repeat("a", len(c.Token))
	b.zone.set(c.TXTName, TXTValuePre+wrong)
	b.serveProof(WellKnownPath, wrong)
	_, err = b.reg.Verify(ctx, "acme", "proof.example.com")
	fe, ok := fault.As(err)
	if !ok || fe.Code != fault.DomainUnverified || fe.NextAction != fault.VerifyDomain {
		t.Fatalf("Verify error = %v, want DOMAIN_UNVERIFIED/verify_domain", err)
	}
	for _, want := range []string{c.TXTName, c.TXTValue, c.WellKnownURL, "expected value", "expected token"} {
		if !strings.Contains(fe.Message, want) {
			t.Errorf("message %q does not mention %q", fe.Message, want)
		}
	}
	if ok, _ := b.reg.IsVerified(ctx, "acme", "proof.example.com"); ok {
		t.Error("IsVerified = true after a wrong token")
	}
}

func TestVerifyNothingPublished(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	if _, err := b.reg.Verify(ctx, "acme", "proof.example.com"); !fault.Is(err, fault.DomainUnverified) ||
		!strings.Contains(err.Error(), "add the host first") {
		t.Errorf("Verify without Add = %v, want DOMAIN_UNVERIFIED asking to add first", err)
	}
	if _, err := b.reg.Add(ctx, "acme", "proof.example.com"); err != nil {
		t.Fatal(err)
	}
	_, err := b.reg.Verify(ctx, "acme", "proof.example.com")
	if !fault.Is(err, fault.DomainUnverified) || !strings.Contains(err.Error(), "no TXT record") ||
		!strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("Verify = %v, want DOMAIN_UNVERIFIED naming the missing TXT record and the 404", err)
	}
}

func TestVerifyOversizedFile(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{MaxProofBytes: 100})
	ctx := context.Background()
	c, err := b.reg.Add(ctx, "acme", "proof.example.com")
	if err != nil {
		t.Fatal(err)
	}
	// The token is there, but inside a body past the cap: refused unread.
	b.serveProof(WellKnownPath, c.Token+strings.Repeat(" ", 200))
	_, err = b.reg.Verify(ctx, "acme", "proof.example.com")
	if !fault.Is(err, fault.DomainUnverified) || !strings.Contains(err.Error(), "larger than 100 bytes") {
		t.Errorf("Verify = %v, want DOMAIN_UNVERIFIED for an oversized file", err)
	}
}

func TestVerifyRedirects(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	for _, h := range []string{"proof.example.com", "www.example.com"} {
		if _, err := b.reg.Add(ctx, "acme", h); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := b.reg.Add(ctx, "acme", "proof.example.com")
	// Same-host redirect: followed. The server is shared by every name, so
	// the hop target is told apart by the Host header.
	b.mux.HandleFunc(WellKnownPath, func(w http.ResponseWriter, r *http.Request) {
		switch r.Host {
		case "proof.example.com":
			http.Redirect(w, r, "/moved.txt", http.StatusFound)
		case "www.example.com":
			http.Redirect(w, r, "https://other.example.com/moved.txt", http.StatusFound)
		}
	})
	b.mux.HandleFunc("/moved.txt", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(c.Token))
	})
	if got, err := b.reg.Verify(ctx, "acme", "proof.example.com"); err != nil || got.Method != MethodWellKnown {
		t.Errorf("Verify through a same-host redirect = %+v, %v; want verified", got, err)
	}
	// Another host answering would prove nothing about www.example.com.
	if _, err := b.reg.Verify(ctx, "acme", "www.example.com"); !fault.Is(err, fault.DomainUnverified) ||
		!strings.Contains(err.Error(), "REDIRECT_NOT_ALLOWED") {
		t.Errorf("Verify through a cross-host redirect = %v, want DOMAIN_UNVERIFIED (REDIRECT_NOT_ALLOWED)", err)
	}
}

func TestVerifyFetchGuarded(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	tokens := make(map[string]string)
	for _, h := range []string{"evil.example.com", "inner.example.com"} {
		c, err := b.reg.Add(ctx, "acme", h)
		if err != nil {
			t.Fatal(err)
		}
		tokens[h] = c.Token
	}
	// The server would prove both hosts, if the guard let the fetch reach it.
	b.mux.HandleFunc(WellKnownPath, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(tokens[r.Host]))
	})
	for h := range tokens {
		_, err := b.reg.Verify(ctx, "acme", h)
		if !fault.Is(err, fault.DomainUnverified) || !strings.Contains(err.Error(), "DNS_TARGET_PROHIBITED") {
			t.Errorf("Verify(%s) = %v, want DOMAIN_UNVERIFIED (DNS_TARGET_PROHIBITED)", h, err)
			continue
		}
		if strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "10.0.0.7") {
			t.Errorf("Verify(%s) error leaks an internal address: %v", h, err)
		}
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TokenTTL: time.Hour, ProofTTL: 24 * time.Hour})
	ctx := context.Background()

	// A pending challenge cannot be verified after TokenTTL.
	c, err := b.reg.Add(ctx, "acme", "proof.example.com")
	if err != nil {
		t.Fatal(err)
	}
	b.zone.set(c.TXTName, c.TXTValue)
	b.clock.Advance(time.Hour)
	if _, err := b.reg.Verify(ctx, "acme", "proof.example.com"); !fault.Is(err, fault.DomainUnverified) ||
		!strings.Contains(err.Error(), "expired") {
		t.Fatalf("Verify after TokenTTL = %v, want DOMAIN_UNVERIFIED (expired)", err)
	}
	// Add after expiry issues a fresh token.
	c2, err := b.reg.Add(ctx, "acme", "proof.example.com")
	if err != nil || c2.Token == c.Token {
		t.Fatalf("Add after expiry = %q, %v; want a new token", c2.Token, err)
	}
	b.zone.set(c2.TXTName, c2.TXTValue)
	if _, err := b.reg.Verify(ctx, "acme", "proof.example.com"); err != nil {
		t.Fatal(err)
	}
	// A proof lasts ProofTTL, then stops counting.
	b.clock.Advance(24*time.Hour - time.Second)
	if ok, _ := b.reg.IsVerified(ctx, "acme", "proof.example.com"); !ok {
		t.Error("IsVerified = false just before ProofTTL")
	}
	// A re-verify with the record still published renews the proof.
	if _, err := b.reg.Verify(ctx, "acme", "proof.example.com"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(24*time.Hour - time.Second)
	if ok, _ := b.reg.IsVerified(ctx, "acme", "proof.example.com"); !ok {
		t.Error("IsVerified = false before the renewed ProofTTL")
	}
	b.clock.Advance(time.Second)
	if ok, _ := b.reg.IsVerified(ctx, "acme", "proof.example.com"); ok {
		t.Error("IsVerified = true at ProofTTL")
	}
}

func TestTenantIsolationAndExactHost(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ctx := context.Background()
	c, err := b.reg.Add(ctx, "acme", "proof.example.com")
	if err != nil {
		t.Fatal(err)
	}
	b.zone.set(c.TXTName, c.TXTValue)
	if _, err := b.reg.Verify(ctx, "acme", "proof.example.com"); err != nil {
		t.Fatal(err)
	}
	// Tenant B has no entry, and one holding A's published record still
	// fails: B's own token is different.
	if ok, _ := b.reg.Verifier("globex").IsVerified(ctx, "proof.example.com"); ok {
		t.Error("globex sees acme's proof")
	}
	if _, err := b.reg.Add(ctx, "globex", "proof.example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.reg.Verify(ctx, "globex", "proof.example.com"); !fault.Is(err, fault.DomainUnverified) {
		t.Errorf("globex Verify with acme's record = %v, want DOMAIN_UNVERIFIED", err)
	}
	for _, h := range []string{"www.proof.example.com", "example.com", "proof.example.co"} {
		if ok, err := b.reg.IsVerified(ctx, "acme", h); ok || err != nil {
			t.Errorf("IsVerified(%s) = %v, %v; want false (exact match only)", h, ok, err)
		}
	}
	if _, err := b.reg.IsVerified(ctx, "acme", "10.0.0.1"); !fault.Is(err, fault.URLNotAllowed) {
		t.Errorf("IsVerified(IP) error = %v, want URL_NOT_ALLOWED", err)
	}

	ts, err := b.reg.List(ctx, "acme")
	if err != nil || len(ts) != 1 || ts[0].Host != "proof.example.com" || ts[0].Method != MethodDNSTXT {
		t.Errorf("List(acme) = %+v, %v", ts, err)
	}
	if err := b.reg.Remove(ctx, "acme", "proof.example.com"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.reg.IsVerified(ctx, "acme", "proof.example.com"); ok {
		t.Error("IsVerified = true after Remove")
	}
	if ts, _ := b.reg.List(ctx, "globex"); len(ts) != 1 {
		t.Errorf("Remove for acme touched globex: %+v", ts)
	}
}

// The registry's verifier is what the egress guard's target policy asks.
func TestVerifierSatisfiesEgress(t *testing.T) {
	t.Parallel()
	var _ egress.HostVerifier = NewRegistry(newMemStore(), nil, nil, nil, Options{}).Verifier("acme")
}

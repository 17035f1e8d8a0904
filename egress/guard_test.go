package egress

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bastion-mcp/bastion/fault"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// countingResolver counts lookups so tests can prove "never" and "once".
type countingResolver struct {
	Resolver
	n atomic.Int32
}

func (c *countingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	c.n.Add(1)
	return c.Resolver.LookupNetIP(ctx, network, host)
}

// failingResolver fails every lookup with err, as a resolver outage does.
type failingResolver struct{ err error }

func (f failingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, f.err
}

var testDNS = StaticResolver{
	"public.example":           addrs("93.184.216.34"),
	"dual.example":             addrs("2606:2800:220:1::1", "93.184.216.34", "93.184.216.34"),
	"rebind.example":           addrs("93.184.216.34", "127.0.0.1"),
	"rebind6.example":          addrs("2606:2800:220:1::1", "::ffff:10.0.0.1"),
	"private.example":          addrs("10.0.0.7"),
	"loopback.example":         addrs("127.0.0.1"),
	"metadata.example":         addrs("169.254.169.254"),
	"azure.example":            addrs("168.63.129.16"),
	"nat64.example":            addrs("64:ff9b::a9fe:a9fe"),
	"sixtofour.example":        addrs("2002:a00:1::1"),
	"teredo.example":           addrs("2001:0:4136:e378:8000:63bf:80ff:fffe"),
	"ula.example":              addrs("fd12:3456::1"),
	"aws6.example":             addrs("fd00:ec2::254"),
	"cgnat.example":            addrs("100.64.0.1"),
	"unspecified.example":      addrs("0.0.0.0"),
	"multicast.example":        addrs("224.0.0.251"),
	"empty.example":            {},
	"nat64public.example":      addrs("64:ff9b::808:808"),
	"sixtofourpublic.example":  addrs("2002:808:808::1"),
	"metadata.google.internal": addrs("93.184.216.34"), // a lying resolver must not matter
	"localhost":                addrs("93.184.216.34"),
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host string
		want []netip.Addr // nil: rejected with code
		code fault.Code
	}{
		{"public.example", addrs("93.184.216.34"), ""},
		{"PUBLIC.example.", addrs("93.184.216.34"), ""},
		{"dual.example", addrs("93.184.216.34", "2606:2800:220:1::1"), ""},
		{"93.184.216.34", addrs("93.184.216.34"), ""},
		{"2606:2800:220:1::1", addrs("2606:2800:220:1::1"), ""},
		{"rebind.example", nil, fault.DNSTargetProhibited},
		{"rebind6.example", nil, fault.DNSTargetProhibited},
		{"private.example", nil, fault.DNSTargetProhibited},
		{"loopback.example", nil, fault.DNSTargetProhibited},
		{"metadata.example", nil, fault.DNSTargetProhibited},
		{"azure.example", nil, fault.DNSTargetProhibited},
		{"nat64.example", nil, fault.DNSTargetProhibited},
		{"sixtofour.example", nil, fault.DNSTargetProhibited},
		{"teredo.example", nil, fault.DNSTargetProhibited},
		{"ula.example", nil, fault.DNSTargetProhibited},
		{"cgnat.example", nil, fault.DNSTargetProhibited},
		{"empty.example", nil, fault.DNSTargetProhibited},
		{"nxdomain.example", nil, fault.DNSTargetProhibited},
		{"metadata.google.internal", nil, fault.DNSTargetProhibited},
		{"localhost", nil, fault.DNSTargetProhibited},
		{"app.localhost", nil, fault.DNSTargetProhibited},
		{"10.0.0.7", nil, fault.DNSTargetProhibited},
		{"169.254.169.254", nil, fault.DNSTargetProhibited},
		{"::1", nil, fault.DNSTargetProhibited},
		{"2130706433", nil, fault.URLNotAllowed},
		{"0x7f.1", nil, fault.URLNotAllowed},
		{"::ffff:127.0.0.1", nil, fault.URLNotAllowed},
		{"fe80::1%eth0", nil, fault.URLNotAllowed},
		{"", nil, fault.URLNotAllowed},
	}
	var logs bytes.Buffer
	var mu lockedWriter
	mu.w = &logs
	g := NewGuard(Policy{Logger: slog.New(slog.NewTextHandler(&mu, nil))}, testDNS)
	for _, tt := range tests {
		got, err := g.Resolve(context.Background(), tt.host)
		if tt.want != nil {
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Resolve(%q) = %v, %v; want %v", tt.host, got, err, tt.want)
			}
			continue
		}
		if !fault.Is(err, tt.code) {
			t.Errorf("Resolve(%q) = %v, %v; want %s", tt.host, got, err, tt.code)
			continue
		}
		assertNoInternalAddr(t, err, tt.host)
	}
	if !strings.Contains(logs.String(), "class=metadata") || !strings.Contains(logs.String(), "class=loopback") {
		t.Errorf("refusals were not logged with their class:\n%s", logs.String())
	}
}

// lockedWriter is a trivial writer; Resolve in TestResolve runs sequentially.
type lockedWriter struct{ w *bytes.Buffer }

func (l *lockedWriter) Write(p []byte) (int, error) { return l.w.Write(p) }

// assertNoInternalAddr fails if err's client-facing text names any address
// the test resolver knows for host.
func assertNoInternalAddr(t *testing.T, err error, host string) {
	t.Helper()
	fe, ok := fault.As(err)
	if !ok {
		t.Fatalf("%v is not a *fault.Error", err)
	}
	for _, a := range testDNS[strings.ToLower(host)] {
		if a.String() != host && (strings.Contains(fe.Error(), a.String()) || strings.Contains(fe.Message, a.Unmap().String())) {
			t.Errorf("error %q leaks the address %v", fe.Error(), a)
		}
	}
}

func TestResolveFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		code fault.Code
	}{
		{"Timeout", &net.DNSError{Err: "i/o timeout", Name: "x.example", IsTimeout: true}, fault.DNSResolutionFailed},
		{"Temporary", &net.DNSError{Err: "server misbehaving", Name: "x.example", IsTemporary: true}, fault.DNSResolutionFailed},
		{"ServFail", &net.DNSError{Err: "server misbehaving", Name: "x.example"}, fault.DNSResolutionFailed},
		{"Other", errors.New("resolver exploded"), fault.DNSResolutionFailed},
		{"Deadline", context.DeadlineExceeded, fault.DNSResolutionFailed},
		{"NotFound", &net.DNSError{Err: "no such host", Name: "x.example", IsNotFound: true}, fault.DNSTargetProhibited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewGuard(Policy{}, failingResolver{tt.err})
			_, err := g.Check(context.Background(), "https://x.example/")
			fe, ok := fault.As(err)
			if !ok || fe.Code != tt.code {
				t.Fatalf("Check = %v, want %s", err, tt.code)
			}
			if tt.code == fault.DNSResolutionFailed && (!fe.Retriable || fe.NextAction != fault.Wait) {
				t.Errorf("resolver outage is not retriable/wait: %+v", fe)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("the cause %v is not kept for logs", tt.err)
			}
			if strings.Contains(fe.Error(), tt.err.Error()) {
				t.Errorf("client text %q carries the internal cause", fe.Error())
			}
		})
	}
}

func TestPolicy(t *testing.T) {
	t.Parallel()
	pfx := netip.MustParsePrefix
	tests := []struct {
		name   string
		policy Policy
		host   string
		allow  bool
	}{
		{"PublicAllowed", Policy{}, "93.184.216.34", true},
		{"DenyCIDR", Policy{Deny: []netip.Prefix{pfx("93.184.216.0/24")}}, "93.184.216.34", false},
		{"DenyBeatsAllow", Policy{Deny: []netip.Prefix{pfx("10.0.0.0/24")}, Allow: []netip.Prefix{pfx("10.0.0.0/8")}}, "10.0.0.7", false},
		{"DenyEmbedded", Policy{Deny: []netip.Prefix{pfx("8.8.8.0/24")}}, "nat64public.example", false},
		{"DenyEmbedded6to4", Policy{Deny: []netip.Prefix{pfx("8.8.8.0/24")}}, "sixtofourpublic.example", false},
		{"EmbeddedPublic", Policy{}, "nat64public.example", true},
		{"Embedded6to4Public", Policy{}, "sixtofourpublic.example", true},
		{"AllowHole", Policy{Allow: []netip.Prefix{pfx("10.0.0.0/8")}}, "10.0.0.7", true},
		{"AllowHoleElsewhere", Policy{Allow: []netip.Prefix{pfx("10.1.0.0/16")}}, "10.0.0.7", false},
		{"AllowCannotOpenMetadata", Policy{Allow: []netip.Prefix{pfx("169.254.0.0/16")}}, "169.254.169.254", false},
		{"AllowCannotOpenAzure", Policy{Allow: []netip.Prefix{pfx("168.63.129.16/32")}}, "168.63.129.16", false},
		{"PrivateLoopback", Policy{AllowPrivate: true}, "127.0.0.1", true},
		{"PrivateRFC1918", Policy{AllowPrivate: true}, "192.168.1.10", true},
		{"PrivateCGNAT", Policy{AllowPrivate: true}, "100.64.0.1", true},
		{"PrivateULA", Policy{AllowPrivate: true}, "fd12:3456::1", true},
		{"PrivateLinkLocal", Policy{AllowPrivate: true}, "fe80::1", true},
		{"PrivateIPv6Loopback", Policy{AllowPrivate: true}, "::1", true},
		{"PrivateNotMetadata", Policy{AllowPrivate: true}, "169.254.169.254", false},
		{"PrivateNotECS", Policy{AllowPrivate: true}, "169.254.170.2", false},
		{"PrivateNotAlibaba", Policy{AllowPrivate: true}, "100.100.100.200", false},
		{"PrivateNotAWS6", Policy{AllowPrivate: true}, "fd00:ec2::254", false},
		{"PrivateNotUnspecified", Policy{AllowPrivate: true}, "0.0.0.0", false},
		{"PrivateNotMulticast", Policy{AllowPrivate: true}, "224.0.0.251", false},
		{"PrivateNotBroadcast", Policy{AllowPrivate: true}, "255.255.255.255", false},
		{"PrivateNotDocumentation", Policy{AllowPrivate: true}, "192.0.2.1", false},
		{"PrivateDenied", Policy{AllowPrivate: true, Deny: []netip.Prefix{pfx("127.0.0.0/8")}}, "127.0.0.1", false},
		{"PrivateLocalhost", Policy{AllowPrivate: true}, "localhost", true},
		{"PrivateSubLocalhost", Policy{AllowPrivate: true}, "app.localhost", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &countingResolver{Resolver: testDNS}
			g := NewGuard(tt.policy, r)
			got, err := g.Resolve(context.Background(), tt.host)
			if tt.allow != (err == nil) {
				t.Fatalf("Resolve(%q) = %v, %v; want allowed=%v", tt.host, got, err, tt.allow)
			}
			if !tt.allow && !fault.Is(err, fault.DNSTargetProhibited) {
				t.Errorf("refusal is %v, want DNS_TARGET_PROHIBITED", err)
			}
			if strings.HasSuffix(tt.host, "localhost") {
				if r.n.Load() != 0 {
					t.Errorf("localhost reached the resolver")
				}
				if !slices.Equal(got, addrs("127.0.0.1", "::1")) {
					t.Errorf("localhost = %v, want loopback", got)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	dns := StaticResolver{
		"public.example": addrs("93.184.216.34"),
		"dev.example":    addrs("127.0.0.1"),
		"mixed.example":  addrs("10.0.0.1", "93.184.216.34"),
	}
	tests := []struct {
		name   string
		policy Policy
		raw    string
		pinned string
		code   fault.Code
	}{
		{"Public", Policy{}, "https://public.example/x#y", "93.184.216.34", ""},
		{"HTTPDenied", Policy{}, "http://public.example/", "", fault.URLNotAllowed},
		{"PrivateDenied", Policy{}, "https://dev.example/", "", fault.DNSTargetProhibited},
		{"DevServer", Policy{AllowPrivate: true}, "http://dev.example:3000/", "127.0.0.1", ""},
		{"DevLocalhost", Policy{AllowPrivate: true}, "http://localhost:3000/", "127.0.0.1", ""},
		{"PublicStaysStrictScheme", Policy{AllowPrivate: true}, "http://public.example/", "", fault.URLNotAllowed},
		{"PublicStaysStrictPort", Policy{AllowPrivate: true}, "https://public.example:3000/", "", fault.URLNotAllowed},
		{"MixedPrivatePublicStrict", Policy{AllowPrivate: true}, "http://mixed.example:3000/", "", fault.URLNotAllowed},
		{"MixedPrivatePublic443", Policy{AllowPrivate: true}, "https://mixed.example/", "10.0.0.1", ""},
		{"PortPolicy", Policy{Ports: []uint16{8443}}, "https://public.example:8443/", "93.184.216.34", ""},
		{"PortPolicyExcludes443", Policy{Ports: []uint16{8443}}, "https://public.example/", "", fault.URLNotAllowed},
		{"Userinfo", Policy{}, "https://a:b@public.example/", "", fault.URLNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := NewGuard(tt.policy, dns).Check(context.Background(), tt.raw)
			if tt.code != "" {
				if !fault.Is(err, tt.code) {
					t.Fatalf("Check(%q) = %+v, %v; want %s", tt.raw, got, err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check(%q): %v", tt.raw, err)
			}
			if got.Addrs[0].String() != tt.pinned || got.Host != got.URL.Hostname() {
				t.Errorf("Check(%q) = %+v, want pinned %s", tt.raw, got, tt.pinned)
			}
		})
	}
}

// verifiedSet is a HostVerifier over a fixed set of hosts.
type verifiedSet map[string]bool

func (v verifiedSet) IsVerified(_ context.Context, host string) (bool, error) { return v[host], nil }

type brokenVerifier struct{}

func (brokenVerifier) IsVerified(context.Context, string) (bool, error) {
	return false, errors.New("registry at 10.0.0.9 is down")
}

func TestCheckTarget(t *testing.T) {
	t.Parallel()
	verified := verifiedSet{"public.example": true, "rebind.example": true, "preview.example": true}
	tests := []struct {
		name     string
		raw      string
		v        HostVerifier
		code     fault.Code
		next     fault.NextAction
		lookups  int32
		wantHost string
	}{
		{"Verified", "https://Public.Example./a", verified, "", "", 1, "public.example"},
		{"Unverified", "https://other.example/", verified, fault.DomainUnverified, fault.VerifyDomain, 0, ""},
		{"ParentNotChild", "https://sub.public.example/", verified, fault.DomainUnverified, fault.VerifyDomain, 0, ""},
		{"NilVerifier", "https://public.example/", nil, fault.DomainUnverified, fault.VerifyDomain, 0, ""},
		{"IPLiteral", "https://93.184.216.34/", verified, fault.URLNotAllowed, fault.ChangeTarget, 0, ""},
		{"IPv6Literal", "https://[2606:2800:220:1::1]/", verified, fault.URLNotAllowed, fault.ChangeTarget, 0, ""},
		{"VerifiedButRebinding", "https://rebind.example/", verified, fault.DNSTargetProhibited, fault.ChangeTarget, 1, ""},
		{"VerifiedButNoRecords", "https://preview.example/", verified, fault.DNSTargetProhibited, fault.ChangeTarget, 1, ""},
		{"EgressRulesFirst", "http://public.example/", verified, fault.URLNotAllowed, fault.ChangeTarget, 0, ""},
		{"BrokenRegistry", "https://public.example/", brokenVerifier{}, fault.InternalError, fault.Wait, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &countingResolver{Resolver: testDNS}
			got, err := NewGuard(Policy{}, r).CheckTarget(context.Background(), tt.raw, tt.v)
			if n := r.n.Load(); n != tt.lookups {
				t.Errorf("%d lookups, want %d", n, tt.lookups)
			}
			if tt.code == "" {
				if err != nil || got.Host != tt.wantHost {
					t.Fatalf("CheckTarget(%q) = %+v, %v", tt.raw, got, err)
				}
				return
			}
			fe, ok := fault.As(err)
			if !ok || fe.Code != tt.code || fe.NextAction != tt.next {
				t.Fatalf("CheckTarget(%q) = %v (%+v); want %s/%s", tt.raw, err, fe, tt.code, tt.next)
			}
			if strings.Contains(fe.Message, "10.0.0.9") {
				t.Errorf("message leaks the registry's address: %q", fe.Message)
			}
		})
	}
}

func TestStaticResolver(t *testing.T) {
	t.Parallel()
	s := StaticResolver{"dual.example": addrs("93.184.216.34", "2606:2800:220:1::1")}
	ctx := context.Background()
	if got, _ := s.LookupNetIP(ctx, "ip4", "DUAL.example."); !slices.Equal(got, addrs("93.184.216.34")) {
		t.Errorf("ip4 = %v", got)
	}
	if got, _ := s.LookupNetIP(ctx, "ip6", "dual.example"); !slices.Equal(got, addrs("2606:2800:220:1::1")) {
		t.Errorf("ip6 = %v", got)
	}
	var dnsErr *net.DNSError
	if _, err := s.LookupNetIP(ctx, "ip", "missing.example"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("missing host: %v, want a not-found *net.DNSError", err)
	}
	next := &countingResolver{Resolver: StaticResolver{"other.example": addrs("1.1.1.1")}}
	layered := s.Over(next)
	if got, _ := layered.LookupNetIP(ctx, "ip", "dual.example"); len(got) != 2 || next.n.Load() != 0 {
		t.Errorf("layered asked the next resolver for a static host: %v, %d", got, next.n.Load())
	}
	if got, _ := layered.LookupNetIP(ctx, "ip", "other.example"); !slices.Equal(got, addrs("1.1.1.1")) || next.n.Load() != 1 {
		t.Errorf("layered did not fall through: %v", got)
	}
}

// TestWithPrivate: the derived guard reaches a loopback server, keeps the
// base policy's deny list and metadata denial, and leaves the base guard
// strict.
func TestWithPrivate(t *testing.T) {
	t.Parallel()
	dns := StaticResolver{
		"dev.example":  addrs("127.0.0.1"),
		"meta.example": addrs("169.254.169.254"),
		"deny.example": addrs("10.1.2.3"),
	}
	base := NewGuard(Policy{Deny: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}, dns)
	open := base.WithPrivate()
	ctx := context.Background()
	if _, err := open.Check(ctx, "http://dev.example:3000/mcp"); err != nil {
		t.Errorf("derived guard refused a loopback server: %v", err)
	}
	if _, err := base.Check(ctx, "http://dev.example:3000/mcp"); err == nil {
		t.Error("the base guard was opened too")
	}
	for _, raw := range []string{"http://meta.example/", "http://deny.example/"} {
		if _, err := open.Check(ctx, raw); err == nil {
			t.Errorf("derived guard allowed %s", raw)
		}
	}
}

// TestRefusedHook: the guard tells Policy.Refused the code of each refusal
// it makes when it resolves and classifies a host, or dials; an allowed
// URL, a resolver outage and a URL refused for its spelling before any
// lookup (plain http here: the caller's input, checked again by a caller
// that falls back, as review.TargetPolicy does) are not counted.
func TestRefusedHook(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[fault.Code]int{}
	p := Policy{Refused: func(c fault.Code) { mu.Lock(); got[c]++; mu.Unlock() }}
	g := NewGuard(p, testDNS)
	ctx := context.Background()
	for _, raw := range []string{"https://public.example/", "https://metadata.example/", "https://rebind.example/", "http://public.example/"} {
		g.Check(ctx, raw)
	}
	if _, err := g.DialContext(ctx, "tcp", "metadata.example:443"); !fault.Is(err, fault.DNSTargetProhibited) {
		t.Fatalf("dial metadata: %v", err)
	}
	if _, err := g.DialContext(ctx, "tcp", "public.example:25"); !fault.Is(err, fault.URLNotAllowed) {
		t.Fatalf("dial port 25: %v", err)
	}
	NewGuard(p, failingResolver{errors.New("resolver down")}).Check(ctx, "https://public.example/")
	mu.Lock()
	defer mu.Unlock()
	want := map[fault.Code]int{fault.DNSTargetProhibited: 3, fault.URLNotAllowed: 1}
	if len(got) != len(want) || got[fault.DNSTargetProhibited] != 3 || got[fault.URLNotAllowed] != 1 {
		t.Fatalf("Refused saw %v, want %v", got, want)
	}
}

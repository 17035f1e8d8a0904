package review_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/store/sqlite"
	"github.com/bastion-mcp/bastion/targets"
)

// tenant is the tenant whose registry setupAuth fills.
const tenant = "local"

// setupAuth returns an Authorizer over a real SQLite registry in which the
// local tenant has verified preview.example.com.
func setupAuth(t *testing.T, allowPrivate bool) review.TargetPolicy {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.PathIn(t.TempDir()), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	resolver := egress.StaticResolver{
		"preview.example.com":  {netip.MustParseAddr("93.184.216.34")},
		"other.example.com":    {netip.MustParseAddr("93.184.216.35")},
		"dev.internal.example": {netip.MustParseAddr("10.0.0.7")},
		"mixed.example.com":    {netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("93.184.216.36")},
	}
	guard := egress.NewGuard(egress.Policy{AllowPrivate: allowPrivate}, resolver)
	reg := targets.NewRegistry(db, nil, guard.HTTPClient(egress.ClientOptions{}), nil, targets.Options{})
	now := time.Now()
	if err := db.TargetPut(ctx, targets.Target{Tenant: tenant, Host: "preview.example.com", Token: "t", Method: targets.MethodDNSTXT,
		CreatedAt: now, VerifiedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	return review.TargetPolicy{Guard: guard, Targets: reg, AllowPrivate: allowPrivate}
}

func TestTargetPolicy(t *testing.T) {
	t.Parallel()
	// A real listener standing in for bastion's edge: never a target.
	own, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	_, ownPort, _ := net.SplitHostPort(own.Addr().String())
	cases := []struct {
		name         string
		allowPrivate bool
		tenant, url  string
		want         string     // canonical URL when allowed
		code         fault.Code // when refused
		msg          string     // in the refusal's message, when set
	}{
		{"verified host", false, tenant, "https://Preview.Example.com/pricing", "https://preview.example.com/pricing", "", ""},
		{"unverified host", false, tenant, "https://other.example.com/", "", fault.DomainUnverified, ""},
		{"another tenant's proof", false, "acme", "https://preview.example.com/", "", fault.DomainUnverified, ""},
		{"IP literal", false, tenant, "https://93.184.216.34/", "", fault.URLNotAllowed, ""},
		{"plain http", false, tenant, "http://preview.example.com/", "", fault.URLNotAllowed, ""},
		{"private dev server without allow-private", false, tenant, "http://dev.internal.example:3000/", "", fault.URLNotAllowed, ""},
		{"private https host without allow-private", false, tenant, "https://dev.internal.example/", "", fault.DomainUnverified, ""},
		{"private dev server", true, tenant, "http://dev.internal.example:3000/", "http://dev.internal.example:3000/", "", ""},
		{"localhost dev server", true, tenant, "http://localhost:5173/app", "http://localhost:5173/app", "", ""},
		{"loopback literal", true, tenant, "http://127.0.0.1:8080/", "http://127.0.0.1:8080/", "", ""},
		{"public host still needs a proof", true, tenant, "https://other.example.com/", "", fault.DomainUnverified, ""},
		{"rebinding set is not private", true, tenant, "https://mixed.example.com/", "", fault.DomainUnverified, ""},
		{"metadata stays denied", true, tenant, "http://169.254.169.254/latest/", "", fault.DNSTargetProhibited, ""},
		{"metadata over https", true, tenant, "https://169.254.169.254/", "", fault.DNSTargetProhibited, ""},
		{"metadata name", true, tenant, "http://metadata.google.internal/", "", fault.DomainUnverified, ""},
		{"loopback literal without allow-private", false, tenant, "http://127.0.0.1:3000/pricing", "", fault.URLNotAllowed, "--allow-private"},
		{"localhost without allow-private", false, tenant, "https://localhost:8443/", "", fault.URLNotAllowed, "--allow-private"},
		{"private literal without allow-private", false, tenant, "http://192.168.1.20:8000/", "", fault.URLNotAllowed, "--allow-private"},
		{"https loopback dev server", true, tenant, "https://127.0.0.1:8443/", "https://127.0.0.1:8443/", "", ""},
		{"public verified host over http", true, tenant, "http://preview.example.com/", "", fault.URLNotAllowed, "public host needs https"},
		{"public unverified host over http", true, tenant, "http://other.example.com/", "", fault.URLNotAllowed, "public host needs https"},
		{"public literal over http", true, tenant, "http://93.184.216.34/", "", fault.URLNotAllowed, "public host needs https"},
		{"bastion's own listener", true, tenant, "http://127.0.0.1:" + ownPort + "/mcp", "", fault.URLNotAllowed, "own listeners"},
		{"bastion's own listener by name", true, tenant, "http://localhost:" + ownPort + "/", "", fault.URLNotAllowed, "own listeners"},
	}
	auths := map[bool]review.TargetPolicy{false: setupAuth(t, false), true: setupAuth(t, true)}
	defer auths[true].Guard.ExcludeListener(own.Addr())()
	for _, tc := range cases {
		if tc.msg != "" && tc.code != "" {
			_, _, err := auths[tc.allowPrivate].AuthorizeTarget(context.Background(), tc.tenant, tc.url)
			if fe, ok := fault.As(err); !ok || !strings.Contains(fe.Message, tc.msg) {
				t.Errorf("%s: AuthorizeTarget(%s) = %v; want a message with %q", tc.name, tc.url, err, tc.msg)
			}
		}
		got, _, err := auths[tc.allowPrivate].AuthorizeTarget(context.Background(), tc.tenant, tc.url)
		switch {
		case tc.code == "" && (err != nil || got != tc.want):
			t.Errorf("%s: AuthorizeTarget(%s) = %q, %v; want %q", tc.name, tc.url, got, err, tc.want)
		case tc.code != "" && !fault.Is(err, tc.code):
			t.Errorf("%s: AuthorizeTarget(%s) = %q, %v; want %s", tc.name, tc.url, got, err, tc.code)
		}
	}
}

// TestOpenBaseDemo shows the demo wiring verifies only its one host, for
// the local tenant only, and resolves it to the stub address.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/targets"
)

// runBastion runs the real command tree with args and returns its output and
// exit status (0, the exitError code, or -1 for a usage error).
func runBastion(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	var ec exitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ec):
		return out.String(), ec.code
	}
	return out.String() + err.Error(), -1
}

func TestEgressCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"Allow", []string{"--resolve", "preview.example.com=93.184.216.34", "https://Preview.Example.com:443/pricing#plans"},
			"allow https://preview.example.com/pricing 93.184.216.34\n", 0},
		{"Rebinding", []string{"--resolve", "rebind.example.com=93.184.216.34,10.0.0.7", "https://rebind.example.com/"},
			"reject DNS_TARGET_PROHIBITED\n", 1},
		{"Metadata", []string{"--resolve", "meta.example.com=169.254.169.254", "https://meta.example.com/"},
			"reject DNS_TARGET_PROHIBITED\n", 1},
		{"NoRecords", []string{"--resolve", "empty.example.com=", "https://empty.example.com/"},
			"reject DNS_TARGET_PROHIBITED\n", 1},
		{"HexIPv4", []string{"https://0x7f.1/"}, "reject URL_NOT_ALLOWED\n", 1},
		{"PlainHTTP", []string{"--resolve", "preview.example.com=93.184.216.34", "http://preview.example.com/"},
			"reject URL_NOT_ALLOWED\n", 1},
		{"AllowHTTP", []string{"--allow-http", "--resolve", "preview.example.com=93.184.216.34", "http://preview.example.com/"},
			"allow http://preview.example.com/ 93.184.216.34\n", 0},
		{"Localhost", []string{"https://localhost/"}, "reject DNS_TARGET_PROHIBITED\n", 1},
		{"LocalhostHTTP", []string{"http://localhost:3000/"}, "reject URL_NOT_ALLOWED\n", 1},
		{"LocalhostDev", []string{"--allow-private", "http://localhost:3000/"}, "allow http://localhost:3000/ 127.0.0.1\n", 0},
		{"TargetUnverified", []string{"--target", "--resolve", "preview.example.com=93.184.216.34", "https://preview.example.com/"},
			"reject DOMAIN_UNVERIFIED\n", 1},
		{"TargetVerified", []string{"--target", "--verified", "preview.example.com", "--resolve", "preview.example.com=93.184.216.34", "https://preview.example.com/"},
			"allow https://preview.example.com/ 93.184.216.34\n", 0},
		{"TargetIPLiteral", []string{"--target", "--verified", "93.184.216.34", "https://93.184.216.34/"},
			"reject URL_NOT_ALLOWED\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, code := runBastion(t, append([]string{"egress", "check"}, tt.args...)...)
			if out != tt.want || code != tt.code {
				t.Errorf("bastion egress check %s\n got %q (exit %d)\nwant %q (exit %d)", strings.Join(tt.args, " "), out, code, tt.want, tt.code)
			}
		})
	}
}

func TestEgressCheckJSON(t *testing.T) {
	t.Parallel()
	out, code := runBastion(t, "egress", "check", "--json", "--resolve", "rebind.example.com=93.184.216.34,10.0.0.7", "https://rebind.example.com/")
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 {
		t.Fatalf("output %q (exit %d): %v", out, code, err)
	}
	if got["decision"] != "reject" || got["code"] != "DNS_TARGET_PROHIBITED" || got["retriable"] != false || got["next_action"] != "change_target" {
		t.Errorf("JSON reject = %v", got)
	}
	if strings.Contains(out, "10.0.0.7") {
		t.Errorf("the JSON names the internal address: %s", out)
	}

	out, code = runBastion(t, "egress", "check", "--json", "--resolve", "preview.example.com=93.184.216.34", "https://preview.example.com/")
	got = nil
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
		t.Fatalf("output %q (exit %d): %v", out, code, err)
	}
	if got["decision"] != "allow" || got["url"] != "https://preview.example.com/" || got["pinned_ip"] != "93.184.216.34" {
		t.Errorf("JSON allow = %v", got)
	}
}

func TestEgressCheckBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"egress", "check", "--resolve", "nohost", "https://a.example/"},
		{"egress", "check", "--resolve", "a.example=not-an-ip", "https://a.example/"},
		{"egress", "check"},
	} {
		if out, code := runBastion(t, args...); code != -1 {
			t.Errorf("bastion %s = %q, exit %d; want a usage error", strings.Join(args, " "), out, code)
		}
	}
}

// TestEgressCheckTenantRegistry checks that --target --tenant consults the
// tenant's verified hosts in the store, and only that tenant's.
func TestEgressCheckTenantRegistry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	b, err := app.OpenBase(ctx, app.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// A proof as `bastion targets verify` records it.
	err = b.Store.TargetPut(ctx, targets.Target{Tenant: "acme", Host: "preview.acme.example", Token: "t",
		Method: targets.MethodDNSTXT, CreatedAt: now, VerifiedAt: now, ExpiresAt: now.Add(time.Hour)})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"egress", "check", "--target", "--data-dir", dir, "--resolve", "preview.acme.example=93.184.216.34", "https://preview.acme.example/"}
	if out, code := runBastion(t, append(args[:3:3], append([]string{"--tenant", "acme"}, args[3:]...)...)...); code != 0 || out != "allow https://preview.acme.example/ 93.184.216.34\n" {
		t.Errorf("tenant acme: %q (exit %d), want allow", out, code)
	}
	if out, code := runBastion(t, append(args[:3:3], append([]string{"--tenant", "other"}, args[3:]...)...)...); code != 1 || out != "reject DOMAIN_UNVERIFIED\n" {
		t.Errorf("tenant other: %q (exit %d), want reject DOMAIN_UNVERIFIED", out, code)
	}
}

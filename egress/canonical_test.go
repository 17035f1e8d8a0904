package egress

import (
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/fault"
)

func TestCanonicalize(t *testing.T) {
	t.Parallel()
	strictGuard := NewGuard(Policy{}, StaticResolver{})
	httpGuard := NewGuard(Policy{AllowHTTP: true}, StaticResolver{})
	portGuard := NewGuard(Policy{Ports: []uint16{443, 8443}}, StaticResolver{})
	devGuard := NewGuard(Policy{AllowPrivate: true}, StaticResolver{})
	tests := []struct {
		name  string
		guard *Guard
		raw   string
		want  string // "" means rejected with URL_NOT_ALLOWED
	}{
		// Accepted, and how.
		{"Plain", strictGuard, "https://example.com/a?b=c", "https://example.com/a?b=c"},
		{"FragmentDropped", strictGuard, "https://example.com/a#frag", "https://example.com/a"},
		{"EmptyFragment", strictGuard, "https://example.com/#", "https://example.com/"},
		{"HostLowercased", strictGuard, "https://ExAmple.COM/Path", "https://example.com/Path"},
		{"SchemeLowercased", strictGuard, "HTTPS://example.com/", "https://example.com/"},
		{"TrailingDot", strictGuard, "https://example.com./", "https://example.com/"},
		{"EmptyPath", strictGuard, "https://example.com", "https://example.com/"},
		{"EmptyPathQuery", strictGuard, "https://example.com?q=1", "https://example.com/?q=1"},
		{"DefaultPortDropped", strictGuard, "https://example.com:443/", "https://example.com/"},
		{"EmptyPort", strictGuard, "https://example.com:/", "https://example.com/"},
		{"LeadingZeroPort", strictGuard, "https://example.com:0443/", "https://example.com/"},
		{"ForceQueryDropped", strictGuard, "https://example.com/?", "https://example.com/"},
		{"AtInPath", strictGuard, "https://example.com/@evil.com", "https://example.com/@evil.com"},
		{"AtInQuery", strictGuard, "https://example.com/?next=a@b", "https://example.com/?next=a@b"},
		{"EncodedPathKept", strictGuard, "https://example.com/a%2Fb", "https://example.com/a%2Fb"},
		{"Underscore", strictGuard, "https://my_app.example.com/", "https://my_app.example.com/"},
		{"IDNA", strictGuard, "https://bücher.example/", "https://xn--bcher-kva.example/"},
		{"IDNAUppercase", strictGuard, "https://BÜCHER.example/", "https://xn--bcher-kva.example/"},
		{"Punycode", strictGuard, "https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"},
		{"IPv4Literal", strictGuard, "https://93.184.216.34/", "https://93.184.216.34/"},
		{"IPv4LiteralTrailingDot", strictGuard, "https://93.184.216.34./", "https://93.184.216.34/"},
		{"IPv6Literal", strictGuard, "https://[2606:4700:4700:0:0:0:0:1111]/", "https://[2606:4700:4700::1111]/"},
		{"IPv6LiteralUpper", strictGuard, "https://[2606:4700:4700::ABCD]:443/", "https://[2606:4700:4700::abcd]/"},
		{"HTTPAllowed", httpGuard, "http://example.com:80/", "http://example.com/"},
		{"HTTPSOn80WithHTTP", httpGuard, "https://example.com:80/", "https://example.com:80/"},
		{"ConfiguredPort", portGuard, "https://example.com:8443/x", "https://example.com:8443/x"},
		{"DevAnyPort", devGuard, "http://localhost:3000/", "http://localhost:3000/"},
		{"DevIPv6Port", devGuard, "http://[::1]:5173/", "http://[::1]:5173/"},

		// Scheme, port and shape.
		{"Empty", strictGuard, "", ""},
		{"TooLong", strictGuard, "https://example.com/" + strings.Repeat("a", MaxURLLen), ""},
		// 700 quotes fit as given but not once each is spelled %22.
		{"TooLongEscaped", strictGuard, "https://example.com/" + strings.Repeat(`"`, 700), ""},
		{"LongestEscaped", strictGuard, "https://example.com/" + strings.Repeat(`"`, (MaxURLLen-20)/3),
			"https://example.com/" + strings.Repeat("%22", (MaxURLLen-20)/3)},
		{"HTTPDenied", strictGuard, "http://example.com/", ""},
		{"FTP", strictGuard, "ftp://example.com/", ""},
		{"Javascript", strictGuard, "javascript:alert(1)", ""},
		{"Data", strictGuard, "data:text/html,hi", ""},
		{"File", strictGuard, "file:///etc/passwd", ""},
		{"SchemeRelative", strictGuard, "//example.com/", ""},
		{"Relative", strictGuard, "/path", ""},
		{"Opaque", strictGuard, "https:example.com", ""},
		{"OneSlash", strictGuard, "https:/example.com", ""},
		{"NoHost", strictGuard, "https:///example.com", ""},
		{"PortNotAllowed", strictGuard, "https://example.com:8443/", ""},
		{"Port80WithoutHTTP", strictGuard, "https://example.com:80/", ""},
		{"PortZero", devGuard, "https://example.com:0/", ""},
		{"PortOverflow", devGuard, "https://example.com:65536/", ""},
		{"PortNotNumber", devGuard, "https://example.com:ab/", ""},
		{"TwoPorts", devGuard, "https://example.com:1:2/", ""},

		// Userinfo and parser confusion.
		{"Userinfo", strictGuard, "https://user:pass@example.com/", ""},
		{"UserOnly", strictGuard, "https://user@example.com/", ""},
		{"AtTrick", strictGuard, "https://example.com@evil.com/", ""},
		{"AtTrickPort", strictGuard, "https://example.com:443@evil.com/", ""},
		{"BackslashAt", strictGuard, "https://evil.com\\@example.com/", ""},
		{"BackslashHost", strictGuard, "https://example.com\\evil.com", ""},
		{"BackslashPath", strictGuard, "https://example.com/a\\b", ""},
		{"Space", strictGuard, "https://exa mple.com/", ""},
		{"LeadingSpace", strictGuard, " https://example.com/", ""},
		{"SpaceInPath", strictGuard, "https://example.com/a b", ""},
		{"Tab", strictGuard, "https://example.com\t/", ""},
		{"Newline", strictGuard, "https://example.com/\n", ""},
		{"NUL", strictGuard, "https://example.com\x00.evil.com/", ""},
		{"EncodedDot", strictGuard, "https://example.com%2eevil.com/", ""},
		{"EncodedLetter", strictGuard, "https://ex%61mple.com/", ""},
		{"EncodedAt", strictGuard, "https://evil.com%40example.com/", ""},
		{"DoubleDot", strictGuard, "https://a..b/", ""},
		{"TwoTrailingDots", strictGuard, "https://example.com../", ""},
		{"LeadingHyphen", strictGuard, "https://-example.com/", ""},
		{"BadChar", strictGuard, "https://exa!mple.com/", ""},
		{"LongLabel", strictGuard, "https://" + strings.Repeat("a", 64) + ".com/", ""},
		{"LongName", strictGuard, "https://" + strings.Repeat("abcdefghi.", 26) + "com/", ""},

		// Numeric-looking hosts that are not canonical dotted quads.
		{"Decimal", strictGuard, "https://2130706433/", ""},
		{"Octal", strictGuard, "https://0177.0.0.1/", ""},
		{"LeadingZeroOctet", strictGuard, "https://127.0.0.01/", ""},
		{"Hex", strictGuard, "https://0x7f.1/", ""},
		{"HexWhole", strictGuard, "https://0x7f000001/", ""},
		{"HexUpper", strictGuard, "https://0X7F.0.0.1/", ""},
		{"Short", strictGuard, "https://127.1/", ""},
		{"ShortThree", strictGuard, "https://10.0.1/", ""},
		{"Overflow", strictGuard, "https://256.0.0.1/", ""},
		{"Overflow32", strictGuard, "https://4294967296/", ""},
		{"FiveParts", strictGuard, "https://1.2.3.4.5/", ""},
		{"NumericLastLabel", strictGuard, "https://a.123/", ""},
		{"HexLastLabel", strictGuard, "https://example.0x10/", ""},
		{"BareHexPrefix", strictGuard, "https://example.0x/", ""},

		// IPv6 literals that are not canonical.
		{"Zone", devGuard, "http://[fe80::1%25eth0]/", ""},
		{"Mapped", strictGuard, "https://[::ffff:127.0.0.1]/", ""},
		{"MappedHex", strictGuard, "https://[::ffff:7f00:1]/", ""},
		{"MappedPublic", strictGuard, "https://[::ffff:8.8.8.8]/", ""},
		{"Compatible", strictGuard, "https://[::127.0.0.1]/", ""},
		{"SIIT", strictGuard, "https://[::ffff:0:a00:1]/", ""},
		{"NAT64", strictGuard, "https://[64:ff9b::7f00:1]/", ""},
		{"NAT64Local", strictGuard, "https://[64:ff9b:1::a00:1]/", ""},
		{"SixToFour", strictGuard, "https://[2002:7f00:1::1]/", ""},
		{"Teredo", strictGuard, "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", ""},
		{"UnclosedBracket", strictGuard, "https://[::1/", ""},
		{"BracketedIPv4", strictGuard, "https://[127.0.0.1]/", ""},

		// IDNA look-alikes.
		{"FullWidth", strictGuard, "https://ｅｘａｍｐｌｅ.com/", ""},
		{"FullWidthPartial", strictGuard, "https://ｅxample.com/", ""},
		{"Enclosed", strictGuard, "https://ⓔⓧⓐⓜⓟⓛⓔ.com/", ""},
		{"IdeographicDot", strictGuard, "https://example。com/", ""},
		{"FullWidthDot", strictGuard, "https://bücher．example/", ""},
		{"HalfWidthDot", strictGuard, "https://example｡com/", ""},
		{"FullWidthIPv4", strictGuard, "https://１２７.０.０.１/", ""},
		{"DigitDot", strictGuard, "https://⒈com/", ""},
		{"PunycodeOfASCII", strictGuard, "https://xn--example-.com/", ""},
		{"BadPunycode", strictGuard, "https://xn--a.com/", ""},
		{"UpperPunycode", strictGuard, "https://xn--BCHER-KVA.example/", "https://xn--bcher-kva.example/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, err := tt.guard.Canonicalize(tt.raw)
			if tt.want == "" {
				if !fault.Is(err, fault.URLNotAllowed) {
					t.Fatalf("Canonicalize(%q) = %v, %v; want URL_NOT_ALLOWED", tt.raw, u, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Canonicalize(%q) error: %v", tt.raw, err)
			}
			if got := u.String(); got != tt.want {
				t.Fatalf("Canonicalize(%q) = %q, want %q", tt.raw, got, tt.want)
			}
			again, err := tt.guard.Canonicalize(u.String())
			if err != nil || again.String() != u.String() {
				t.Fatalf("Canonicalize is not a fixed point on %q: %v, %v", u, again, err)
			}
		})
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		"https://example.com/a?b=c#d", "https://Example.COM.:443", "https://bücher.example/",
		"https://user:pass@example.com/", "https://example.com@evil.com/", "https://evil.com\\@example.com/",
		"https://2130706433/", "https://0177.0.0.1/", "https://0x7f.1/", "https://127.1/", "https://4294967296/",
		"https://[fe80::1%25eth0]/", "https://[::ffff:127.0.0.1]/", "https://[64:ff9b::a9fe:a9fe]/",
		"https://[2002:7f00:1::1]/", "https://ｅｘａｍｐｌｅ.com/", "https://example。com/", "https://ex%61mple.com/",
		"https://xn--bcher-kva.example/", "https://[::1]:8443/a/../b", "http://localhost:3000/", "https://a..b/",
		"https://example.com/%zz", "https://example.com/a%2Fb?x=%41#y", "https://example.com/;x?y#z",
		"https://example.com:0443", "https://⒈com/", "https://[::1", "https://example.com/\u00e9", "HTTP://X.Y/?",
	} {
		f.Add(s)
	}
	g := NewGuard(Policy{AllowPrivate: true}, StaticResolver{})
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := g.Canonicalize(raw)
		if err != nil {
			if !fault.Is(err, fault.URLNotAllowed) {
				t.Fatalf("Canonicalize(%q) error %v is not URL_NOT_ALLOWED", raw, err)
			}
			return
		}
		out := u.String()
		if u.User != nil || u.Fragment != "" || strings.Contains(out, "#") {
			t.Fatalf("Canonicalize(%q) = %q keeps userinfo or fragment", raw, out)
		}
		if strings.Contains(u.Host, "@") || strings.Contains(u.Host, "%") || u.Hostname() != strings.ToLower(u.Hostname()) {
			t.Fatalf("Canonicalize(%q) = %q has a non-canonical host", raw, out)
		}
		again, err := g.Canonicalize(out)
		if err != nil {
			t.Fatalf("Canonicalize(%q) = %q, which is rejected: %v", raw, out, err)
		}
		if again.String() != out {
			t.Fatalf("Canonicalize is not a fixed point: %q -> %q -> %q", raw, out, again.String())
		}
	})
}

package targets

import (
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/fault"
)

func TestCanonicalHost(t *testing.T) {
	t.Parallel()
	good := []struct{ in, want string }{
		{"example.com", "example.com"},
		{"Preview.Example.COM", "preview.example.com"},
		{"example.com.", "example.com"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"BÜCHER.example", "xn--bcher-kva.example"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"a-b.c-d.example", "a-b.c-d.example"},
		{"1.example.com", "1.example.com"},
		{"preview-123.vercel.app", "preview-123.vercel.app"},
	}
	for _, c := range good {
		got, err := CanonicalHost(c.in)
		if err != nil || got != c.want {
			t.Errorf("CanonicalHost(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	bad := []string{
		"",
		"example",                         // single label
		"example.com:443",                 // port
		"https://example.com",             // URL
		"example.com/path",                // path
		"user@example.com",                // userinfo
		"exa mple.com",                    // space
		"example.com\\evil",               // backslash
		"ex%61mple.com",                   // encoded
		"127.0.0.1",                       // IPv4 literal
		"[::1]",                           // IPv6 literal
		"::1",                             // bare IPv6
		"2130706433",                      // decimal IPv4
		"0177.0.0.1",                      // octal IPv4
		"0x7f.1",                          // hex IPv4
		"127.1",                           // short IPv4
		"1.2.3.0x4",                       // hex last label
		"localhost",                       // never a target
		"app.localhost",                   // never a target
		"LOCALHOST.",                      // case and dot
		"\uff45xample.com",                // full-width e maps to plain ASCII
		"example\u3002com",                // ideographic dot
		"example\uff0ecom",                // full-width dot
		"\u24d4xample.com",                // enclosed alphanumeric
		"a..example.com",                  // empty label
		"-a.example.com",                  // leading hyphen
		"a-.example.com",                  // trailing hyphen
		"a_b.example.com",                 // underscore
		strings.Repeat("a", 64) + ".com",  // label too long
		strings.Repeat("a.", 130) + "com", // name too long
	}
	for _, in := range bad {
		got, err := CanonicalHost(in)
		if err == nil {
			t.Errorf("CanonicalHost(%q) = %q, nil; want URL_NOT_ALLOWED", in, got)
			continue
		}
		if !fault.Is(err, fault.URLNotAllowed) {
			t.Errorf("CanonicalHost(%q) error = %v; want URL_NOT_ALLOWED", in, err)
		}
	}
}

func FuzzCanonicalHost(f *testing.F) {
	for _, s := range []string{
		"example.com", "bücher.example", "\uff45xample.com", "example\u3002com", "127.1", "0x7f.1",
		"[::1]", "a..b", "localhost.", "xn--bcher-kva.example", "XN--BCHER-KVA.EXAMPLE", "a.b:80",
		"\u0660.example", "ß.example", "\u200d.example", "xn--.example", "a.xn--9t4b11yi5a",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := CanonicalHost(in)
		if err != nil {
			if !fault.Is(err, fault.URLNotAllowed) {
				t.Fatalf("CanonicalHost(%q) error %v is not URL_NOT_ALLOWED", in, err)
			}
			return
		}
		if !allLDH(out) {
			t.Fatalf("CanonicalHost(%q) = %q: not lowercase letter-digit-hyphen labels", in, out)
		}
		again, err := CanonicalHost(out)
		if err != nil || again != out {
			t.Fatalf("CanonicalHost(%q) = %q, but CanonicalHost(%q) = %q, %v", in, out, out, again, err)
		}
	})
}

// allLDH reports whether every label of name is lowercase ASCII letters,
// digits and hyphens.
func allLDH(name string) bool {
	for l := range strings.SplitSeq(name, ".") {
		if !isLDH(l) {
			return false
		}
	}
	return true
}

func BenchmarkCanonicalHost(b *testing.B) {
	for _, in := range []string{"preview-123.example.com", "Bücher.Example."} {
		b.Run(in, func(b *testing.B) {
			for b.Loop() {
				if _, err := CanonicalHost(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package loop

import (
	"testing"

	"github.com/bastion-mcp/bastion/principal"
)

// FuzzOpenState: a request state opens only as sealed — for the principal,
// method and name it was sealed for, to exactly the upstream state inside —
// and any other string is refused without a panic.
func FuzzOpenState(f *testing.F) {
	k, err := newRoundKey()
	if err != nil {
		f.Fatal(err)
	}
	p, err := principal.New("acme", "alice")
	if err != nil {
		f.Fatal(err)
	}
	q, err := principal.New("acme", "bob")
	if err != nil {
		f.Fatal(err)
	}
	f.Add("", "")
	f.Add("state", k.seal(p, "tools/call", "t", "state"))
	f.Add("a.b", sealPrefix+"..")
	f.Fuzz(func(t *testing.T, inner, state string) {
		sealed := k.seal(p, "tools/call", "t", inner)
		if got, ok := k.open(p, "tools/call", "t", sealed); !ok || got != inner {
			t.Fatalf("own seal of %q opened as %q, %v", inner, got, ok)
		}
		if _, ok := k.open(q, "tools/call", "t", sealed); ok {
			t.Fatal("another principal opened the seal")
		}
		if _, ok := k.open(p, "tools/call", "u", sealed); ok {
			t.Fatal("the seal opened for another name")
		}
		if got, ok := k.open(p, "tools/call", "t", state); ok && state != k.seal(p, "tools/call", "t", got) {
			t.Fatalf("%q opened but is not the seal of %q", state, got)
		}
	})
}

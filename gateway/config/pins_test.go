package config

import (
	"strings"
	"testing"
)

// TestPinsTable: [pins] decodes next to [pin], and a typo in it is refused
// with its line by the strict decoder.
func TestPinsTable(t *testing.T) {
	t.Parallel()
	f, err := Parse("t.toml", []byte(`
[server.fx]
kind = "review"

[pin]
mode = "strict"

[pins]
file = "/var/lib/bastion/pins.json"
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Pins.File != "/var/lib/bastion/pins.json" || f.Pin.Mode != PinStrict {
		t.Errorf("decoded [pins] %+v [pin] %+v", f.Pins, f.Pin)
	}
	_, err = Parse("t.toml", []byte("[pins]\n\nfiel = \"x\"\n"))
	if err == nil || !strings.Contains(err.Error(), "t.toml:3") {
		t.Errorf("unknown [pins] key: %v", err)
	}
}

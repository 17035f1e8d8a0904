package main

import (
	"strings"
	"testing"
)

// TestValidateExample keeps the README's gateway example true: it parses
// strictly and its policy is deny-by-default.
func TestValidateExample(t *testing.T) {
	t.Parallel()
	out, code := runBastion(t, "validate", "--config", "../../examples/bastion.toml")
	if code != 0 {
		t.Fatalf("bastion validate examples/bastion.toml: exit %d\n%s", code, out)
	}
	for _, want := range []string{"files__delete_file\n    approve", "files__read_file\n    allow", "files__write_file\n    deny (deny-default)"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	out, code = runBastion(t, "validate", "--config", "testdata/unknown-key.toml")
	if code == 0 || !strings.Contains(out, ":2:") {
		t.Errorf("an unknown key: exit %d, output %q; want a failure naming line 2", code, out)
	}
}

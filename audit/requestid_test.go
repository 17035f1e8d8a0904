package audit

import (
	"regexp"
	"testing"
)

// TestNewRequestID: "r-" and 24 lowercase hex digits, and no two alike
// (96 random bits: a repeat in a few thousand means the source is broken).
func TestNewRequestID(t *testing.T) {
	t.Parallel()
	form := regexp.MustCompile(`^r-[0-9a-f]{24}$`)
	seen := map[string]bool{}
	for range 5000 {
		id := NewRequestID()
		if !form.MatchString(id) {
			t.Fatalf("NewRequestID() = %q, want r- and 24 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("NewRequestID() repeated %q", id)
		}
		seen[id] = true
	}
}

func BenchmarkNewRequestID(b *testing.B) {
	for b.Loop() {
		_ = NewRequestID()
	}
}

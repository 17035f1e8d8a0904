package audit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// fileFlags returns the open flags of f as /proc reports them.
func fileFlags(t *testing.T, f *os.File) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatalf("no flags in fdinfo: %q", b)
	return 0
}

// TestSegmentsAreDsync: with writeIsDurable the writer skips fsync, so
// every segment it writes, the reopened one and the rotated ones, must be
// O_DSYNC or acknowledged records would sit only in the page cache.
func TestSegmentsAreDsync(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{MaxFileBytes: 2 << 10})
	tb.writeLedger(t, 1)
	l := tb.open(t) // reopens segment 1
	defer l.Close()
	if fileFlags(t, l.seg)&syscall.O_DSYNC == 0 {
		t.Fatal("reopened segment is not O_DSYNC")
	}
	for i := range 20 {
		if _, err := l.Append(context.Background(), entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Append returned, so the rotation happened before it.
	if l.segIndex < 2 {
		t.Fatalf("segIndex = %d, want a rotation", l.segIndex)
	}
	if fileFlags(t, l.seg)&syscall.O_DSYNC == 0 {
		t.Fatal("rotated segment is not O_DSYNC")
	}
}

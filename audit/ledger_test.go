package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/testdisk"
	"github.com/bastion-mcp/bastion/principal"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixedClock returns a clock that starts at a fixed instant and advances by
// step on each call, so ledgers written with it are byte-reproducible.
func fixedClock(step time.Duration) func() time.Time {
	var n atomic.Int64
	start := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { return start.Add(time.Duration(n.Add(1)) * step) }
}

// testKey writes a deterministic Ed25519 key (from seed) to dir/name with
// mode 0600 and returns its path and public key.
func testKey(t testing.TB, dir string, seed byte) (string, ed25519.PublicKey) {
	t.Helper()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fmt.Sprintf("key-%d.pem", seed))
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, key.Public().(ed25519.PublicKey)
}

type testBundle struct {
	dir  string
	pub  ed25519.PublicKey
	opts Options
}

// setup returns a fresh ledger dir with a key kept outside it.
func setup(t testing.TB, opts Options) *testBundle {
	t.Helper()
	root := t.TempDir()
	keyPath, pub := testKey(t, root, 7)
	if opts.KeyFile == "" {
		opts.KeyFile = keyPath
	}
	if opts.Now == nil {
		opts.Now = fixedClock(time.Millisecond)
	}
	return &testBundle{dir: filepath.Join(root, "audit"), pub: pub, opts: opts}
}

func (tb *testBundle) open(t testing.TB) *Ledger {
	t.Helper()
	l, err := Open(tb.dir, tb.opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func mustPrincipal(t testing.TB, tenant, id string) principal.Principal {
	t.Helper()
	p, err := principal.New(tenant, id, principal.ReviewsRead)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func entry(i int) Entry {
	d := Allowed
	if i%3 == 1 {
		d = Denied
	}
	return Entry{Method: "tools/call", Server: "github", Tool: fmt.Sprintf("tool_%d", i), Decision: d,
		Rule: "policy:allow", RequestID: fmt.Sprint(i), Latency: time.Duration(i) * time.Microsecond,
		Args: []byte(fmt.Sprintf(`{"i":%d}`, i))}
}

// writeLedger appends n records and closes the ledger.
func (tb *testBundle) writeLedger(t testing.TB, n int) {
	t.Helper()
	l := tb.open(t)
	for i := range n {
		if _, err := l.Append(context.Background(), entry(i)); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func (tb *testBundle) verify(t testing.TB) Report {
	t.Helper()
	rep, err := Verify(tb.dir, tb.pub)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep
}

func (tb *testBundle) seg(n int) string { return segmentPath(tb.dir, n) }

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func writeLines(t testing.TB, path string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAppendVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{CheckpointEvery: 4})
	l := tb.open(t)
	alice := mustPrincipal(t, "acme", "alice")
	var prev string = Genesis
	for i := range 10 {
		e := entry(i)
		e.Principal = alice
		r, err := l.Append(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq != uint64(i+1) || r.PrevHash != prev || r.Hash != r.ComputeHash() {
			t.Fatalf("record %d: seq %d prev %s hash ok %v", i, r.Seq, r.PrevHash, r.Hash == r.ComputeHash())
		}
		if r.Tenant != "acme" || r.Principal != "alice" || r.ArgsSHA256 != Digest(e.Args) || r.ResultSHA256 != "" {
			t.Fatalf("record %d fields: %+v", i, r)
		}
		prev = r.Hash
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := tb.verify(t)
	if rep.Broken || rep.Records != 10 || rep.LastSeq != 10 || rep.Head != prev {
		t.Fatalf("Verify = %+v, want 10 intact records with head %s", rep, prev)
	}
	// Checkpoints at 4 and 8 (count trigger) and 10 (Close).
	if rep.Checkpoints != 3 || rep.LastCheckpoint != 10 || rep.Unsealed != 0 {
		t.Fatalf("checkpoints = %d, last %d, unsealed %d; want 3, 10, 0", rep.Checkpoints, rep.LastCheckpoint, rep.Unsealed)
	}
}

func TestReopenResumesChain(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	tb.writeLedger(t, 3)
	head := tb.verify(t).Head
	l := tb.open(t)
	r, err := l.Append(context.Background(), entry(9))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 4 || r.PrevHash != head {
		t.Fatalf("after reopen: seq %d prev %s, want 4 and %s", r.Seq, r.PrevHash, head)
	}
	if rep := tb.verify(t); rep.Broken || rep.Records != 4 || rep.Checkpoints != 2 {
		t.Fatalf("Verify = %+v", rep)
	}
}

// TestTamper alters one record in different ways; each must break the chain
// at exactly that record's seq.
func TestTamper(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(line []byte) []byte
		reason string
	}{
		{"ToolByte", func(l []byte) []byte { return bytes.Replace(l, []byte(`"tool_4"`), []byte(`"tool_5"`), 1) }, "does not match its hash"},
		{"Decision", func(l []byte) []byte { return bytes.Replace(l, []byte(`"denied"`), []byte(`"allowed"`), 1) }, "does not match its hash"},
		{"Latency", func(l []byte) []byte { return bytes.Replace(l, []byte(`"latency_us":4`), []byte(`"latency_us":0`), 1) }, "does not match its hash"},
		{"HashRecomputedWithoutChain", func(l []byte) []byte {
			r, _ := ParseRecord(l[:len(l)-1])
			r.Rule = "policy:forged"
			r.Hash = r.ComputeHash()
			return append(r.AppendCanonical(nil), '\n')
		}, "prev_hash does not match"},
		{"Whitespace", func(l []byte) []byte { return bytes.Replace(l, []byte(`,"seq"`), []byte(`, "seq"`), 1) }, "canonical"},
		{"EscapedSpelling", func(l []byte) []byte { return bytes.Replace(l, []byte(`"tool_4"`), []byte(`"tool\u005f4"`), 1) }, "canonical"},
		{"DuplicateKey", func(l []byte) []byte { return bytes.Replace(l, []byte(`{"args`), []byte(`{"tool":"x","args`), 1) }, "canonical"},
		{"UnknownKey", func(l []byte) []byte {
			return bytes.Replace(l, []byte(`,"warnings":[]}`), []byte(`,"warnings":[],"x":1}`), 1)
		}, "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, Options{CheckpointEvery: -1})
			tb.writeLedger(t, 8)
			lines := readLines(t, tb.seg(1))
			// The HashRecomputed case alters record 5 and re-hashes it, so the
			// break shows at seq 6, whose prev_hash no longer matches.
			target, want := 4, uint64(5)
			if strings.HasPrefix(tc.name, "HashRecomputed") {
				want = 6
			}
			lines[target] = tc.mutate(bytes.Clone(lines[target]))
			writeLines(t, tb.seg(1), lines)
			rep := tb.verify(t)
			if !rep.Broken || rep.BrokenAt != want || !strings.Contains(rep.Reason, tc.reason) {
				t.Fatalf("Verify = broken %v at %d (%q), want broken at %d with %q", rep.Broken, rep.BrokenAt, rep.Reason, want, tc.reason)
			}
		})
	}
}

func TestDeleteMiddleRecord(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	tb.writeLedger(t, 6)
	lines := readLines(t, tb.seg(1))
	writeLines(t, tb.seg(1), append(lines[:2:2], lines[3:]...))
	rep := tb.verify(t)
	if !rep.Broken || rep.BrokenAt != 3 || !strings.Contains(rep.Reason, "missing") {
		t.Fatalf("Verify = %+v, want broken at 3 (missing)", rep)
	}
}

func TestReorder(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	tb.writeLedger(t, 6)
	lines := readLines(t, tb.seg(1))
	lines[2], lines[3] = lines[3], lines[2]
	writeLines(t, tb.seg(1), lines)
	rep := tb.verify(t)
	if !rep.Broken || rep.BrokenAt != 3 {
		t.Fatalf("Verify = %+v, want broken at 3", rep)
	}
}

// TestTruncationDetectedByCheckpoint drops the tail: the chain that remains
// is internally consistent, so only the signed checkpoint can tell.
func TestTruncationDetectedByCheckpoint(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{CheckpointEvery: 5})
	tb.writeLedger(t, 10)
	lines := readLines(t, tb.seg(1))
	writeLines(t, tb.seg(1), lines[:7])
	rep := tb.verify(t)
	if !rep.Broken || rep.BrokenAt != 8 || !strings.Contains(rep.Reason, "truncated") {
		t.Fatalf("Verify = %+v, want broken at 8 (truncated)", rep)
	}
	// Open must refuse to continue a ledger that lost signed records.
	if _, err := Open(tb.dir, tb.opts); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open after truncation = %v, want ErrCorrupt", err)
	}
	// Truncating and re-extending with a forged chain is caught at the
	// checkpointed seq.
	tb.forge(t, lines[:7])
	rep = tb.verify(t)
	if !rep.Broken || rep.BrokenAt != 10 || !strings.Contains(rep.Reason, "signed checkpoint") {
		t.Fatalf("Verify after forged re-extension = %+v, want broken at 10", rep)
	}
}

// forge rewrites the ledger as kept plus three forged records that chain
// correctly (hashes are unkeyed, so anyone can do this).
func (tb *testBundle) forge(t *testing.T, kept [][]byte) {
	t.Helper()
	last, err := ParseRecord(bytes.TrimSuffix(kept[len(kept)-1], []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	out := append([][]byte(nil), kept...)
	for i := range 3 {
		r := Record{Seq: last.Seq + 1, Time: last.Time.Add(time.Second), Method: "tools/call", Decision: Allowed,
			Tool: fmt.Sprintf("forged_%d", i), PrevHash: last.Hash}
		r.Hash = r.ComputeHash()
		out = append(out, append(r.AppendCanonical(nil), '\n'))
		last = r
	}
	writeLines(t, tb.seg(1), out)
}

func TestCheckpointWrongKey(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{CheckpointEvery: 2})
	tb.writeLedger(t, 4)
	_, other := testKey(t, t.TempDir(), 9)
	rep, err := Verify(tb.dir, other)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Broken || rep.BrokenAt != 2 || !strings.Contains(rep.Reason, "not by the verifying key") {
		t.Fatalf("Verify(wrong key) = %+v, want broken at checkpoint seq 2", rep)
	}
	// A checkpoint whose signature bytes were altered fails with the right key.
	cp := filepath.Join(tb.dir, checkpointFile)
	lines := readLines(t, cp)
	c, err := parseCheckpoint(bytes.TrimSuffix(lines[0], []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	c.Seq = 3 // claim a different seq under the old signature
	lines[0] = append(c.appendJSON(nil, true), '\n')
	writeLines(t, cp, lines)
	if rep := tb.verify(t); !rep.Broken || rep.BrokenAt != 3 || !strings.Contains(rep.Reason, "bad signature") {
		t.Fatalf("Verify(forged checkpoint) = %+v, want bad signature at 3", rep)
	}
	// Verify without a key uses the one stored in the dir and says so.
	tb2 := setup(t, Options{})
	tb2.writeLedger(t, 1)
	rep, err = Verify(tb2.dir, nil)
	if err != nil || rep.Broken || !rep.KeyFromDir {
		t.Fatalf("Verify(nil key) = %+v, %v; want intact, key from dir", rep, err)
	}
}

func TestOpenRefusesChangedKey(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	tb.writeLedger(t, 1)
	other, _ := testKey(t, t.TempDir(), 11)
	opts := tb.opts
	opts.KeyFile = other
	if _, err := Open(tb.dir, opts); err == nil || !strings.Contains(err.Error(), "key rotation") {
		t.Fatalf("Open with another key = %v, want refusal", err)
	}
}

func TestKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "signing.key")
	k1, err := LoadOrCreateKey(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated key mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	k2, err := LoadOrCreateKey(p)
	if err != nil || !k1.Equal(k2) {
		t.Fatalf("reloaded key differs: %v", err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(p); err == nil {
		t.Fatal("a world-readable key was accepted")
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{MaxFileBytes: 2048, CheckpointEvery: 7})
	tb.writeLedger(t, 40)
	segs, err := listSegments(tb.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 4 {
		t.Fatalf("%d segments, want at least 4 with 2 KiB files", len(segs))
	}
	for _, s := range segs[:len(segs)-1] {
		if fi, _ := os.Stat(s.path); fi.Size() > 2048 {
			t.Fatalf("%s is %d bytes, over the 2048 limit", s.path, fi.Size())
		}
	}
	rep := tb.verify(t)
	if rep.Broken || rep.Records != 40 || rep.Segments != len(segs) {
		t.Fatalf("Verify = %+v", rep)
	}
	// The chain continues across a reopen into the last segment.
	l := tb.open(t)
	if r, err := l.Append(context.Background(), entry(1)); err != nil || r.Seq != 41 {
		t.Fatalf("append after reopen: %+v %v", r, err)
	}
	l.Close()
	var seqs []uint64
	if err := Tail(context.Background(), tb.dir, TailOptions{}, func(r Record) error { seqs = append(seqs, r.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 41 || seqs[0] != 1 || seqs[40] != 41 {
		t.Fatalf("Tail read %d records (%v...), want 1..41", len(seqs), seqs[:min(3, len(seqs))])
	}
	// Deleting a middle segment is a break.
	if err := os.Remove(segs[1].path); err != nil {
		t.Fatal(err)
	}
	if rep := tb.verify(t); !rep.Broken || !strings.Contains(rep.Reason, "missing") {
		t.Fatalf("Verify without segment 2 = %+v, want broken", rep)
	}
}

func TestConcurrentAppends(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{MaxFileBytes: 256 << 10, CheckpointEvery: 500})
	l := tb.open(t)
	const workers, each = 64, 100
	var wg sync.WaitGroup
	seen := make([]atomic.Bool, workers*each+1)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				r, err := l.Append(context.Background(), entry(w*each+i))
				if err != nil {
					errs <- err
					return
				}
				if r.Seq == 0 || r.Seq > workers*each || seen[r.Seq].Swap(true) {
					errs <- fmt.Errorf("seq %d out of range or handed out twice", r.Seq)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := tb.verify(t)
	if rep.Broken || rep.Records != workers*each || rep.LastSeq != workers*each {
		t.Fatalf("Verify = %+v, want %d intact records", rep, workers*each)
	}
}

func TestLockSecondOpenInProcess(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	l := tb.open(t)
	if _, err := Open(tb.dir, tb.opts); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	l.Close()
	l2 := tb.open(t) // the lock is released by Close
	l2.Close()
}

func TestAppendAfterCloseAndBadEntry(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	l := tb.open(t)
	if _, err := l.Append(context.Background(), Entry{Tool: "x"}); !fault.Is(err, fault.InvalidArgument) {
		t.Fatalf("Append without decision = %v, want INVALID_ARGUMENT", err)
	}
	l.Close()
	_, err := l.Append(context.Background(), entry(1))
	if !errors.Is(err, ErrClosed) || !fault.Is(err, fault.Unavailable) {
		t.Fatalf("Append after Close = %v, want ErrClosed as UNAVAILABLE", err)
	}
}

// TestAppendSurvivesCancelledContext: a client that has gone away must not
// be able to drop its own record.
func TestAppendSurvivesCancelledContext(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	l := tb.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := l.Append(ctx, entry(2))
	if err != nil || r.Seq != 1 {
		t.Fatalf("Append(cancelled ctx) = %+v, %v; want seq 1 recorded", r, err)
	}
	l.Close()
	if rep := tb.verify(t); rep.Records != 1 {
		t.Fatalf("Verify = %+v, want the record on disk", rep)
	}
}

func TestFieldsAreClippedAndSanitized(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	l := tb.open(t)
	r, err := l.Append(context.Background(), Entry{Decision: Denied, Tool: strings.Repeat("é", 1000), Reason: "bad\xffutf8\n\"quoted\""})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if len(r.Tool) > maxTool || !strings.HasSuffix(r.Tool, "…") {
		t.Fatalf("tool is %d bytes, want clipped to %d with a marker", len(r.Tool), maxTool)
	}
	if r.Reason != "bad\uFFFDutf8\n\"quoted\"" {
		t.Fatalf("reason = %q", r.Reason)
	}
	if rep := tb.verify(t); rep.Broken {
		t.Fatalf("Verify = %+v", rep)
	}
}

func TestTornTailRecovery(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	tb.writeLedger(t, 3)
	f, err := os.OpenFile(tb.seg(1), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"args_sha256":"","decision":"allo`)
	f.Close()
	// Before recovery Verify reports the torn bytes but no break: they hide
	// no record.
	if rep := tb.verify(t); rep.Broken || rep.TornBytes == 0 || rep.Records != 3 {
		t.Fatalf("Verify(torn) = %+v", rep)
	}
	l := tb.open(t)
	l.Close()
	rep := tb.verify(t)
	if rep.Broken || rep.TornBytes != 0 || rep.Records != 4 {
		t.Fatalf("Verify(recovered) = %+v, want 4 intact records", rep)
	}
	var last Record
	Tail(context.Background(), tb.dir, TailOptions{Last: 1}, func(r Record) error { last = r; return nil })
	if last.Decision != Recovered || !strings.Contains(last.Reason, "34 torn bytes") {
		t.Fatalf("last record = %+v, want a recovered record naming 34 torn bytes", last)
	}
}

func TestOpenRefusesCorruptLastRecord(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	tb.writeLedger(t, 3)
	lines := readLines(t, tb.seg(1))
	lines[2] = bytes.Replace(lines[2], []byte("tool_2"), []byte("tool_X"), 1)
	writeLines(t, tb.seg(1), lines)
	if _, err := Open(tb.dir, tb.opts); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open(corrupt tail) = %v, want ErrCorrupt", err)
	}
}

func TestTailLastAndFollow(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{MaxFileBytes: 1500})
	tb.writeLedger(t, 12)
	var got []uint64
	if err := Tail(context.Background(), tb.dir, TailOptions{Last: 5}, func(r Record) error { got = append(got, r.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[8 9 10 11 12]" {
		t.Fatalf("Tail -n 5 = %v", got)
	}

	l := tb.open(t)
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recs := make(chan uint64, 100)
	done := make(chan error, 1)
	go func() {
		done <- Tail(ctx, tb.dir, TailOptions{Last: 1, Follow: true, Poll: 5 * time.Millisecond}, func(r Record) error {
			recs <- r.Seq
			return nil
		})
	}()
	// Wait for the last existing record before appending: otherwise a fast
	// writer can land seq 13 before Tail looks, and Last: 1 starts there.
	select {
	case s := <-recs:
		if s != 12 {
			t.Fatalf("follow started at seq %d, want 12", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not emit the last record")
	}
	// New records arrive across several rotations (1500-byte segments).
	for i := range 20 {
		if _, err := l.Append(context.Background(), entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	want := uint64(13)
	deadline := time.After(10 * time.Second)
	for want < 32 {
		select {
		case s := <-recs:
			if s != want {
				t.Fatalf("follow emitted seq %d, want %d", s, want)
			}
			want++
		case <-deadline:
			t.Fatalf("follow stalled before seq %d", want)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Tail(follow) ended with %v, want context.Canceled", err)
	}
}

func TestGoldenLedger(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	l := tb.open(t)
	alice := mustPrincipal(t, "acme", "alice")
	entries := []Entry{
		{Principal: alice, RequestID: "1", Method: "tools/call", Server: "review", Tool: "start_review", Decision: Allowed,
			Rule: "policy:allow", Latency: 1500 * time.Microsecond, Args: []byte(`{"url":"https://example.com"}`), Result: []byte(`{"content":[]}`),
			TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{Principal: alice, RequestID: "2", Method: "tools/call", Server: "github", Tool: "delete_repo", Decision: Denied,
			Rule: "policy:deny-glob", Reason: "tool 'delete_repo' matches deny pattern 'delete_*'", Latency: 40 * time.Microsecond},
		{RequestID: "3", Method: "http", Decision: EdgeRejected, Rule: "edge:auth", Reason: "missing bearer token", Warnings: []string{"pin:held: a warning"}},
	}
	for _, e := range entries {
		if _, err := l.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	got, err := os.ReadFile(tb.seg(1))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "ledger-golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("ledger bytes differ from %s (run with -update after an intended format change)\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}

func TestVerifyRejectsOverlongLine(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	tb.writeLedger(t, 2)
	f, err := os.OpenFile(tb.seg(1), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Repeat("x", maxLine+10) + "\n")
	f.Close()
	if rep := tb.verify(t); !rep.Broken || rep.BrokenAt != 3 || !strings.Contains(rep.Reason, "longer than") {
		t.Fatalf("Verify(overlong line) = %+v", rep)
	}
}

// TestFailedWriteFailsEveryWaiterAndPoisons: when a batch cannot be made
// durable, every appender waiting on it is refused, and so is every later
// Append, until the ledger is reopened.
func TestFailedWriteFailsEveryWaiterAndPoisons(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	l := tb.open(t)
	if _, err := l.Append(context.Background(), entry(0)); err != nil {
		t.Fatal(err)
	}
	// Closing the segment under the ledger makes its next write fail, as
	// a dead disk would; no write is under way, the Append above returned.
	if err := l.seg.Close(); err != nil {
		t.Fatal(err)
	}
	const waiters = 8
	errs := make(chan error, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			_, err := l.Append(context.Background(), entry(i+1))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !fault.Is(err, fault.Unavailable) {
			t.Errorf("Append after a failed write = %v, want UNAVAILABLE", err)
		}
	}
	if _, err := l.Append(context.Background(), entry(99)); !fault.Is(err, fault.Unavailable) {
		t.Fatalf("Append on a poisoned ledger = %v, want UNAVAILABLE", err)
	}
	if err := l.Close(); err == nil {
		t.Fatal("Close of a poisoned ledger = nil, want the write failure")
	}
	if rep := tb.verify(t); rep.Broken || rep.Records != 1 {
		t.Fatalf("Verify = %+v, want only the first record", rep)
	}
}

// TestPreallocatedSegment: a live segment is preallocated (where the file
// system can) and readers stop at its zeros; Close cuts it back to its
// records, and a reopen preallocates again and continues the chain.
func TestPreallocatedSegment(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{MaxFileBytes: 1 << 20})
	l := tb.open(t)
	for i := range 5 {
		if _, err := l.Append(context.Background(), entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	probe, err := os.CreateTemp(t.TempDir(), "probe")
	if err != nil {
		t.Fatal(err)
	}
	canPrealloc, err := preallocate(probe, 4096)
	probe.Close()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(tb.seg(1))
	if err != nil {
		t.Fatal(err)
	}
	if canPrealloc && fi.Size() != 1<<20 {
		t.Fatalf("live segment is %d bytes, want it preallocated to 1 MiB", fi.Size())
	}
	if !canPrealloc {
		t.Logf("this file system cannot preallocate; checking the growing layout only")
	}
	if rep := tb.verify(t); rep.Broken || rep.Records != 5 || rep.TornBytes != 0 {
		t.Fatalf("Verify(live) = %+v, want 5 intact records and no torn bytes", rep)
	}
	var n int
	if err := Tail(context.Background(), tb.dir, TailOptions{}, func(Record) error { n++; return nil }); err != nil || n != 5 {
		t.Fatalf("Tail(live) read %d records (%v), want 5", n, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tb.seg(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(readLines(t, tb.seg(1))) != 5 || bytes.IndexByte(data, 0) >= 0 || data[len(data)-1] != '\n' {
		t.Fatalf("closed segment is %d bytes and not exactly 5 records", len(data))
	}
	l = tb.open(t)
	if r, err := l.Append(context.Background(), entry(5)); err != nil || r.Seq != 6 {
		t.Fatalf("append after reopen: %+v %v", r, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := tb.verify(t); rep.Broken || rep.Records != 6 || rep.TornBytes != 0 {
		t.Fatalf("Verify = %+v, want 6 intact records", rep)
	}
}

// TestZeroByteBeforeCheckpointIsBroken: a zero byte ends the records like a
// truncation does, so one planted among sealed records is caught by the
// checkpoint; in a segment that has a successor it is a break by itself.
func TestZeroByteBeforeCheckpointIsBroken(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{MaxFileBytes: 2048, CheckpointEvery: 2})
	tb.writeLedger(t, 20)
	for _, n := range []int{2, 1} { // the last segment, then an earlier one
		segs, err := listSegments(tb.dir)
		if err != nil {
			t.Fatal(err)
		}
		path := segs[len(segs)-n].path
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		clean := bytes.Clone(data)
		data[len(data)/2] = 0
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if rep := tb.verify(t); !rep.Broken {
			t.Fatalf("Verify with a zero byte in %s = %+v, want broken", filepath.Base(path), rep)
		}
		if err := os.WriteFile(path, clean, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestZeroByteInTailKeepsRecords: one zero byte planted in an unsealed
// record used to make the next Open cut every record after it. Now Open
// keeps every complete record (appending after the last one), and Verify
// names the damaged record's seq.
func TestZeroByteInTailKeepsRecords(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{CheckpointEvery: -1, CheckpointInterval: -1})
	l := tb.open(t)
	for i := range 60 {
		if _, err := l.Append(context.Background(), entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Kill the writer's files without Close: the live segment stays
	// preallocated, as after a crash, and nothing is sealed.
	l.closeFiles()
	data, err := os.ReadFile(tb.seg(1))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data[:bytes.LastIndexByte(data, '\n')+1], []byte("\n"))
	off := 0
	for _, ln := range lines[:8] {
		off += len(ln)
	}
	data[off+10] = 0 // inside record 9
	if err := os.WriteFile(tb.seg(1), data, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := tb.verify(t)
	if !rep.Broken || rep.BrokenAt != 9 || !strings.Contains(rep.Reason, "damaged record") {
		t.Fatalf("Verify = %+v, want broken at seq 9 naming a damaged record", rep)
	}
	l = tb.open(t)
	r, err := l.Append(context.Background(), entry(60))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if r.Seq != 61 {
		t.Fatalf("the first append after reopening has seq %d, want 61: records were cut", r.Seq)
	}
	after := readLines(t, tb.seg(1))
	if len(after) != 61 {
		t.Fatalf("%d lines after reopening, want all 60 plus the new one", len(after))
	}
	if rep := tb.verify(t); !rep.Broken || rep.BrokenAt != 9 {
		t.Fatalf("Verify after reopening = %+v, want still broken at seq 9 (kept for forensics)", rep)
	}
}

// TestVersion1LedgerVerifies: records written before format version 2 (no
// attempt, no warnings) still parse and verify.
func TestVersion1LedgerVerifies(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "ledger-v1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyFS(fstest.MapFS{segmentName(1): {Data: b}}, nil)
	if err != nil || rep.Broken || rep.Records != 3 {
		t.Fatalf("Verify(v1 ledger) = %+v, %v; want 3 intact records", rep, err)
	}
	r, err := ParseRecord(bytes.SplitN(b, []byte("\n"), 2)[0])
	if err != nil || r.Version != 1 || r.Warnings != nil {
		t.Fatalf("v1 record = %+v, %v", r, err)
	}
}

// TestVersion2LedgerVerifies: records written before format version 3 (no
// trace_id), with their checkpoints, still parse and verify; a version 2
// record that names a trace_id is not canonical.
func TestVersion2LedgerVerifies(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "ledger-v2.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyFS(fstest.MapFS{segmentName(1): {Data: b}}, nil)
	if err != nil || rep.Broken || rep.Records != 3 {
		t.Fatalf("Verify(v2 ledger) = %+v, %v; want 3 intact records", rep, err)
	}
	line := bytes.SplitN(b, []byte("\n"), 2)[0]
	r, err := ParseRecord(line)
	if err != nil || r.Version != 2 || r.TraceID != "" {
		t.Fatalf("v2 record = %+v, %v", r, err)
	}
	forged := bytes.Replace(line, []byte(`,"v":2`), []byte(`,"trace_id":"","v":2`), 1)
	if _, err := ParseRecord(forged); err == nil {
		t.Fatal("ParseRecord accepted a version 2 record with a trace_id")
	}
}

// TestTraceIDRecorded: an entry's trace id is in its record (and hashed);
// a malformed one is recorded as "".
func TestTraceIDRecorded(t *testing.T) {
	t.Parallel()
	tb := setup(t, Options{})
	l := tb.open(t)
	defer l.Close()
	const id = "0af7651916cd43dd8448eb211c80319c"
	for _, c := range []struct{ in, want string }{{id, id}, {"", ""}, {"0AF7651916CD43DD8448EB211C80319C", ""}, {"00000000000000000000000000000000", ""}, {"xyz", ""}} {
		e := entry(0)
		e.TraceID = c.in
		r, err := l.Append(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		if r.TraceID != c.want || r.Version != formatVersion {
			t.Errorf("Append(TraceID %q) recorded %q (v%d), want %q", c.in, r.TraceID, r.Version, c.want)
		}
		back, err := ParseRecord(r.AppendCanonical(nil))
		if err != nil || back.TraceID != c.want || back.Hash != back.ComputeHash() {
			t.Errorf("round trip of TraceID %q = %+v, %v", c.in, back, err)
		}
	}
	if rep := tb.verify(t); rep.Broken {
		t.Fatalf("Verify = %+v", rep)
	}
}

// TestFullDiskMidBatchRecovers: concurrent appends on a full tmpfs share
// batches; a batch that does not fit fails as a whole, even where part of
// it reached the file, and no appender of it is told its record is
// durable. Once there is room the ledger recovers by itself: it cuts the
// partial batch, records the failure, and every acknowledged record is in
// a ledger that verifies.
func TestFullDiskMidBatchRecovers(t *testing.T) {
	t.Parallel()
	fs := testdisk.Tmpfs(t, 1<<20)
	tb := setup(t, Options{RetryInterval: 5 * time.Millisecond})
	tb.dir = filepath.Join(fs, "audit")
	l := tb.open(t)
	defer l.Close()
	free := testdisk.Fill(t, fs)
	var mu sync.Mutex
	acked := map[uint64]bool{}
	failed := 0
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			r, err := l.Append(context.Background(), entry(i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if !fault.Is(err, fault.Unavailable) {
					t.Errorf("Append on a full disk = %v, want UNAVAILABLE", err)
				}
				failed++
				return
			}
			acked[r.Seq] = true
		})
	}
	wg.Wait()
	if failed == 0 || l.Err() == nil {
		t.Fatalf("64 appends on a full disk: %d failed, Err() = %v", failed, l.Err())
	}
	free()
	deadline := time.Now().Add(20 * time.Second)
	for l.Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery within 20s: %v", l.Err())
		}
		time.Sleep(2 * time.Millisecond)
	}
	r, err := l.Append(context.Background(), entry(99))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := tb.verify(t)
	if rep.Broken || rep.LastSeq != r.Seq || rep.TornBytes != 0 {
		t.Fatalf("Verify after recovery = %+v", rep)
	}
	var got []Record
	Tail(context.Background(), tb.dir, TailOptions{}, func(r Record) error { got = append(got, r); return nil })
	recovered := 0
	for _, r := range got {
		delete(acked, r.Seq)
		if r.Decision == Recovered && r.Rule == "ledger:write-failed" {
			recovered++
		}
	}
	if len(acked) != 0 || recovered != 1 {
		t.Fatalf("acknowledged records missing: %v; %d recovered records, want 1", acked, recovered)
	}
}

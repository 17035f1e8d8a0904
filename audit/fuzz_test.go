package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bastion-mcp/bastion/internal/clip"
)

// TestHashIsOverLineWithoutHashMember checks the hash rule independently of
// ComputeHash: SHA-256 of the stored line with its "hash" member cut out.
func TestHashIsOverLineWithoutHashMember(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "ledger-golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		i := bytes.Index(line, []byte(`,"hash":"`))
		member := line[i : i+len(`,"hash":"`)+64+1]
		stored := string(member[len(`,"hash":"`) : len(member)-1])
		sum := sha256.Sum256(bytes.Replace(line, member, nil, 1))
		if hex.EncodeToString(sum[:]) != stored {
			t.Fatalf("hash %s is not SHA-256 of the line without it", stored)
		}
	}
}

// FuzzVerify mutates the segment and checkpoint bytes of a sealed ledger.
// Verify must never panic, and must never call a changed ledger intact: the
// only change it may accept is extra bytes after the last newline before
// the first zero byte (a torn tail or preallocated space, which hides no
// record).
func FuzzVerify(f *testing.F) {
	// Small on purpose: the fuzzer minimizes interesting inputs, and every
	// step of that runs Verify with its signature checks.
	tb := setup(f, Options{CheckpointEvery: 2})
	tb.writeLedger(f, 4)
	seg, err := os.ReadFile(tb.seg(1))
	if err != nil {
		f.Fatal(err)
	}
	cps, err := os.ReadFile(filepath.Join(tb.dir, checkpointFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seg, cps)
	f.Add(seg[:len(seg)/2], cps)
	f.Add(seg, cps[:len(cps)-1])
	f.Add(bytes.Replace(seg, []byte(`"seq":3`), []byte(`"seq":4`), 1), cps)
	f.Add(append(bytes.Clone(seg), seg...), cps)
	f.Add([]byte("{}\n"), []byte(nil))
	f.Add(append(bytes.Clone(seg), make([]byte, 300)...), cps)
	f.Add(append(append(bytes.Clone(seg[:len(seg)/2]), 0, 0, 0), seg[len(seg)/2:]...), cps)
	f.Add([]byte(`{"args_sha256":"","seq":18446744073709551615}`+"\n"), cps)
	f.Fuzz(func(t *testing.T, s, c []byte) {
		fsys := fstest.MapFS{segmentName(1): {Data: s}, checkpointFile: {Data: c}}
		rep, err := VerifyFS(fsys, tb.pub)
		if err != nil || rep.Broken {
			return
		}
		// What Verify may accept: a prefix of the original records (dropping
		// a tail that no shown checkpoint covers cannot be detected locally,
		// which is why checkpoints are shipped off the machine), never one
		// shorter than a checkpoint it was shown, and checkpoints that are a
		// prefix of the originals. Bytes after the last newline before the
		// first zero byte are a torn tail: like a truncation, they can hide
		// only records that no shown checkpoint covers.
		complete := func(b []byte) []byte { return b[:bytes.LastIndexByte(b, '\n')+1] }
		good, _ := splitTail(s) // records end at the first zero byte (preallocated segments)
		recs, cks := s[:good], complete(c)
		if len(c) > len(cks) && bytes.HasPrefix(cps, c) {
			cks = c // a checkpoint missing only its newline counts
		}
		if !bytes.HasPrefix(seg, recs) || !bytes.HasPrefix(cps, cks) || rep.LastSeq < rep.LastCheckpoint ||
			(bytes.Equal(cks, cps) && !bytes.Equal(recs, seg)) {
			t.Fatalf("Verify accepted a modified ledger: %+v\nsegment:\n%q\ncheckpoints:\n%q", rep, s, c)
		}
	})
}

// FuzzRecordRoundTrip: any strings survive encode → ParseRecord unchanged
// (after UTF-8 sanitizing), and any bytes ParseRecord accepts re-encode to
// themselves.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("tools/call", "del|ete\x00\"\\\n\u2028é", "reason \xff\xfe", uint64(1), uint64(0), int64(0))
	f.Add("", "", "", uint64(18446744073709551615), uint64(18446744073709551615), int64(-1))
	f.Add("<&>", "\x7f\x1f", "\t\b\f\r", uint64(9), uint64(12345), int64(1783435273731000000))
	f.Fuzz(func(t *testing.T, method, tool, reason string, seq, lat uint64, nanos int64) {
		r := Record{Seq: seq, Time: time.Unix(0, nanos).UTC(), Method: clip.String(method, maxShort), Tool: clip.String(tool, maxTool),
			Reason: clip.String(reason, maxReason), Decision: Denied, LatencyUS: lat, PrevHash: Genesis,
			Attempt: seq / 2, Warnings: clipAll([]string{clip.String(reason, maxShort)}), Version: formatVersion}
		if r.Time.Year() < 0 || r.Time.Year() > 9999 {
			return // RFC 3339 has four-digit years
		}
		r.Hash = r.ComputeHash()
		line := r.AppendCanonical(nil)
		// Append's one-pass encoding agrees with hashing and encoding apart,
		// after whatever the batch already holds.
		s := r
		s.Hash = ""
		if sealed := s.appendSealed([]byte("earlier records\n")); string(sealed) != "earlier records\n"+string(line) || s.Hash != r.Hash {
			t.Fatalf("appendSealed = %q (hash %s), want %q (hash %s)", sealed, s.Hash, line, r.Hash)
		}
		got, err := ParseRecord(line)
		if err != nil {
			t.Fatalf("ParseRecord(own encoding %q): %v", line, err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Fatalf("round trip changed the record (-want +got):\n%s", diff)
		}
		// The raw bytes as a line: whatever parses must be canonical.
		if p, err := ParseRecord([]byte(tool)); err == nil {
			if !bytes.Equal(p.AppendCanonical(nil), []byte(tool)) {
				t.Fatalf("ParseRecord accepted non-canonical %q", tool)
			}
		}
	})
}

// FuzzParseCheckpoint: whatever parses re-encodes to itself.
func FuzzParseCheckpoint(f *testing.F) {
	c := Checkpoint{Seq: 3, Hash: Genesis, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), KeyID: "00", Signature: "ab"}
	f.Add(c.appendJSON(nil, true))
	f.Add([]byte(`{"hash":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCheckpoint(b)
		if err == nil && !bytes.Equal(c.appendJSON(nil, true), b) {
			t.Fatalf("parseCheckpoint accepted non-canonical %q", b)
		}
	})
}

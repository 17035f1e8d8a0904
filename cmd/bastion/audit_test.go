package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/audit"
)

func writeTestLedger(t *testing.T, n int) (dir, pubFile string) {
	t.Helper()
	root := t.TempDir()
	dir = filepath.Join(root, "audit")
	l, err := audit.Open(dir, audit.Options{KeyFile: filepath.Join(root, "signing.key"), CheckpointEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		e := audit.Entry{Method: "tools/call", Server: "github", Tool: "tool|" + string(rune('a'+i)), Decision: audit.Denied, Rule: "policy:deny"}
		if _, err := l.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	pubFile = filepath.Join(root, "pub.pem")
	if err := os.WriteFile(pubFile, audit.EncodePublicKey(l.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, pubFile
}

func TestAuditVerifyCLI(t *testing.T) {
	dir, pub := writeTestLedger(t, 3)
	out, code := runRoot(t, "audit", "verify", "--dir", dir, "--pubkey", pub)
	if code != 0 || !strings.HasPrefix(out, "ok: 3 records, last seq 3, checkpoints 2\n") {
		t.Fatalf("verify intact: exit %d, %q", code, out)
	}

	// Tamper with one byte of record 2's tool field.
	seg := filepath.Join(dir, "ledger-000001.jsonl")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seg, bytes.Replace(b, []byte(`"tool|b"`), []byte(`"tool|c"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = runRoot(t, "audit", "verify", "--dir", dir, "--pubkey", pub)
	if code != 1 || !strings.HasPrefix(out, "broken at seq 2: ") {
		t.Fatalf("verify tampered: exit %d, %q; want exit 1, broken at seq 2", code, out)
	}

	out, code = runRoot(t, "audit", "verify", "--dir", filepath.Join(dir, "missing"))
	if code != 1 || !strings.Contains(out, "nothing to verify") {
		t.Fatalf("verify missing: exit %d, %q", code, out)
	}
}

func TestAuditVerifyCLITruncated(t *testing.T) {
	dir, pub := writeTestLedger(t, 4)
	seg := filepath.Join(dir, "ledger-000001.jsonl")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if err := os.WriteFile(seg, bytes.Join(lines[:3], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runRoot(t, "audit", "verify", "--dir", dir, "--pubkey", pub)
	if code != 1 || !strings.HasPrefix(out, "broken at seq 4: ") || !strings.Contains(out, "truncated") {
		t.Fatalf("verify truncated: exit %d, %q", code, out)
	}
}

func TestAuditTailCLI(t *testing.T) {
	dir, _ := writeTestLedger(t, 5)
	for _, tc := range []struct {
		format, prefix string
	}{
		{"json", `{"args_sha256":`},
		{"ocsf", `{"activity_id":99`},
		{"cef", `CEF:0|bastion|bastion|`},
		{"syslog", `<108>1 `},
	} {
		out, code := runRoot(t, "audit", "tail", "--dir", dir, "--format", tc.format, "-n", "2")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], tc.prefix) {
			t.Fatalf("tail --format %s: exit %d, %q", tc.format, code, out)
		}
		if tc.format == "cef" && !strings.Contains(lines[1], `cs2=tool|e`) {
			t.Fatalf("tail -n 2 did not end at the last record: %q", lines[1])
		}
	}
	if out, code := runRoot(t, "audit", "tail", "--dir", dir, "--format", "csv"); code == 0 || !strings.Contains(out, "unknown format") {
		t.Fatalf("tail --format csv: exit %d, %q", code, out)
	}
}

// TestAuditVerifyCLIDamagedTail: a zero byte planted in an unsealed record
// (no checkpoint covers it) is a damaged record: verify exits 1 naming its
// seq, while the records after it stay in the file for forensics.
func TestAuditVerifyCLIDamagedTail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	l, err := audit.Open(dir, audit.Options{CheckpointEvery: -1, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 10 {
		e := audit.Entry{Method: "tools/call", Server: "s", Tool: "t" + string(rune('a'+i)), Decision: audit.Allowed}
		if _, err := l.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	seg := filepath.Join(dir, "ledger-000001.jsonl")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"tool":"td"`)) // record 4
	b[i+2] = 0
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runRoot(t, "audit", "verify", "--dir", dir)
	if code != 1 || !strings.HasPrefix(out, "broken at seq 4: ") || !strings.Contains(out, "damaged record") {
		t.Fatalf("verify damaged tail: exit %d, %q; want exit 1, broken at seq 4, a damaged record", code, out)
	}
}

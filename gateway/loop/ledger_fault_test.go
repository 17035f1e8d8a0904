package loop_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/internal/testdisk"
)

const faultTOML = `
[server.t]
kind = "stdio"
command = "%BIN%"

[[policy.rule]]
name = "all"
action = "allow"
match = ["t__*"]
`

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// faultGateway is a gateway whose ledger lives in ledgerDir and whose
// upstream (a real stdio child) writes files under out, on another disk.
type faultGateway struct {
	*bundle
	out  string
	logs *syncBuffer
}

func newFaultGateway(t *testing.T, ledgerDir string, opts audit.Options) *faultGateway {
	t.Helper()
	logs := &syncBuffer{}
	opts.RetryInterval = 10 * time.Millisecond
	b := setup(t, faultTOML, setupOpts{ledgerDir: ledgerDir, ledgerOpts: opts,
		log: slog.New(slog.NewTextHandler(logs, nil))})
	return &faultGateway{bundle: b, out: t.TempDir(), logs: logs}
}

// answer is what the client of one call was told.
type answer int

const (
	ranOK    answer = iota // the result
	denied                 // bastion denied: audit ledger unavailable
	withheld               // the call ran but its outcome could not be recorded
)

// write calls t__writefile for a file named n and says what the client
// was told; it fails t on any other answer.
func (g *faultGateway) write(t *testing.T, n int) answer {
	t.Helper()
	cs := g.connect(t, alice, clientOpts{})
	got, isErr := call(t, cs, "t__writefile", map[string]any{"path": g.path(n), "text": "ran"})
	switch {
	case isErr && got == "bastion denied: audit ledger unavailable":
		return denied
	case isErr && strings.HasPrefix(got, "bastion error: "+loop.ReasonUnrecorded):
		return withheld
	case !isErr && got == "written":
		return ranOK
	}
	t.Fatalf("call %d: %q (isError %v)", n, got, isErr)
	return denied
}

func (g *faultGateway) path(n int) string { return filepath.Join(g.out, fmt.Sprintf("call-%d", n)) }

// ran reports whether the upstream carried out call n.
func (g *faultGateway) ran(n int) bool {
	_, err := os.Stat(g.path(n))
	return err == nil
}

// checkCall asserts that the upstream ran call n exactly when the client
// was not told it was denied.
func (g *faultGateway) checkCall(t *testing.T, n int, a answer) {
	t.Helper()
	if a == denied && g.ran(n) {
		t.Errorf("call %d: the client was told the ledger refused it, but the upstream ran it", n)
	}
	if a != denied && !g.ran(n) {
		t.Errorf("call %d: answered %d, but the upstream did not run it", n, a)
	}
}

// waitHealthy waits for the ledger to write again after the fault ended.
func (g *faultGateway) waitHealthy(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for g.ledger.Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the ledger did not recover within 20s: %v", g.ledger.Err())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// afterFault checks what every fault test ends with: the ledger recovered
// by itself, the next call runs and is recorded, the failure was logged
// once, the ledger verifies, and it holds a record of the failure.
func (g *faultGateway) afterFault(t *testing.T, next int) {
	t.Helper()
	g.waitHealthy(t)
	if g.write(t, next) != ranOK || !g.ran(next) {
		t.Fatalf("call %d after recovery did not run", next)
	}
	if up := g.metric(t, "bastion_gateway_ledger_up", nil); up != 1 {
		t.Errorf("bastion_gateway_ledger_up = %v after recovery, want 1", up)
	}
	if n := g.logs.count("audit ledger failed"); n != 1 {
		t.Errorf("%d log lines for the ledger failure, want exactly 1", n)
	}
	g.verify(t)
	recovered := 0
	for _, r := range g.records(t) {
		if r.Decision == audit.Recovered && r.Rule == "ledger:write-failed" {
			recovered++
		}
		if r.Decision == audit.Allowed && r.Attempt == 0 {
			t.Errorf("allowed record %d completes no attempt", r.Seq)
		}
	}
	if recovered != 1 {
		t.Errorf("%d recovered records, want 1", recovered)
	}
}

// fullDiskGateway is a gateway whose ledger is on a small tmpfs, after one
// recorded call; it returns the function that fills the disk.
func fullDiskGateway(t *testing.T) (g *faultGateway, fill func() (free func())) {
	t.Helper()
	fs := testdisk.Tmpfs(t, 1<<20)
	g = newFaultGateway(t, filepath.Join(fs, "audit"), audit.Options{})
	if g.write(t, 0) != ranOK {
		t.Fatal("a call was denied before the disk filled")
	}
	return g, func() func() { return testdisk.Fill(t, fs) }
}

// TestFullDiskDeniesWithoutForwarding: with the ledger on a small tmpfs
// that fills up, a call the ledger cannot record is denied and never
// reaches the upstream; once space is freed the ledger recovers by itself.
func TestFullDiskDeniesWithoutForwarding(t *testing.T) {
	t.Parallel()
	g, fill := fullDiskGateway(t)
	free := fill()
	// The segment's last page may still take a record or two; from the
	// first denial on, every call is refused until the disk has room.
	n, deniedAt := 1, 0
	for ; n < 40 && deniedAt == 0; n++ {
		a := g.write(t, n)
		g.checkCall(t, n, a)
		if a == denied {
			deniedAt = n
		}
	}
	if deniedAt == 0 {
		t.Fatal("40 calls on a full disk and none was denied")
	}
	for ; n < deniedAt+5; n++ {
		if g.write(t, n) != denied {
			t.Fatalf("call %d ran while the ledger had failed", n)
		}
		g.checkCall(t, n, denied)
	}
	if err := g.ledger.Err(); err == nil {
		t.Error("the ledger reports no failure on a full disk")
	}
	if up := g.metric(t, "bastion_gateway_ledger_up", nil); up != 0 {
		t.Errorf("bastion_gateway_ledger_up = %v on a full disk, want 0", up)
	}
	free()
	g.afterFault(t, n)
}

// TestReadOnlyLedgerDirDeniesWithoutForwarding: every batch starts a new
// segment here, so a ledger directory that stops taking new files fails
// the next append; the call is denied and never reaches the upstream.
func TestReadOnlyLedgerDirDeniesWithoutForwarding(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "audit")
	g := newFaultGateway(t, dir, audit.Options{MaxFileBytes: 1})
	if g.write(t, 0) != ranOK {
		t.Fatal("a call was denied before the directory turned read-only")
	}
	undo := testdisk.ReadOnly(t, dir)
	for n := 1; n <= 3; n++ {
		if g.write(t, n) != denied {
			t.Fatalf("call %d ran with a read-only ledger directory", n)
		}
		g.checkCall(t, n, denied)
	}
	undo()
	g.afterFault(t, 4)
}

// TestFailureMidGroupCommit: concurrent calls share group commits when the
// disk fills; the batch that does not fit fails as a whole (part of it may
// be on disk), and every call the client was told was refused did not run,
// while every call that ran is recorded. Recovery cuts the partial batch,
// so the ledger verifies.
func TestFailureMidGroupCommit(t *testing.T) {
	t.Parallel()
	g, fill := fullDiskGateway(t)
	free := fill()
	const calls = 16
	answers := make([]answer, calls+1)
	var wg sync.WaitGroup
	for n := 1; n <= calls; n++ {
		wg.Go(func() { answers[n] = g.write(t, n) })
	}
	wg.Wait()
	some := false
	for n := 1; n <= calls; n++ {
		g.checkCall(t, n, answers[n])
		some = some || answers[n] == denied
	}
	if !some {
		t.Fatal("no call was denied on a full disk")
	}
	free()
	g.afterFault(t, calls+1)
	// Every call that ran has its attempt in the ledger, and its outcome
	// unless the client was told it is withheld.
	attempts, outcomes := 0, 0
	for _, r := range g.allRecords(t) {
		switch r.Decision {
		case audit.Attempting:
			attempts++
		case audit.Allowed:
			outcomes++
		}
	}
	ran, told := 0, 0
	for n := 0; n <= calls+1; n++ {
		if g.ran(n) {
			ran++
		}
		if n == 0 || n == calls+1 || answers[n] == ranOK {
			told++
		}
	}
	if attempts != ran || outcomes != told {
		t.Errorf("%d calls ran (%d answered with their result); the ledger has %d attempts and %d allowed outcomes", ran, told, attempts, outcomes)
	}
}

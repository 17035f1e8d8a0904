package audit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The child-process tests re-run this test binary with helperEnv set; the
// helper then acts as a second gateway process on the same ledger.
const helperEnv = "BASTION_AUDIT_HELPER"

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper for the multi-process tests; runs only when re-executed")
	}
	dir, keyFile := os.Getenv("BASTION_AUDIT_DIR"), os.Getenv("BASTION_AUDIT_KEY")
	l, err := Open(dir, Options{KeyFile: keyFile, CheckpointEvery: 50})
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(3)
	}
	switch mode {
	case "hold":
		fmt.Println("ready")
		time.Sleep(time.Minute) // until the parent kills us
	case "append":
		// Several appenders in a loop so a kill lands mid-batch.
		for w := range 8 {
			go func() {
				for i := 0; ; i++ {
					if _, err := l.Append(context.Background(), entry(w*1_000_000+i)); err != nil {
						fmt.Println("append failed:", err)
						os.Exit(4)
					}
				}
			}()
		}
		fmt.Println("ready")
		time.Sleep(time.Minute)
	}
	os.Exit(0)
}

// startHelper starts the helper in mode and waits for its "ready" line.
func startHelper(t *testing.T, tb *testBundle, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "BASTION_AUDIT_DIR="+tb.dir, "BASTION_AUDIT_KEY="+tb.opts.KeyFile)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper said %q (%v)", line, err)
	}
	return cmd
}

// The tests that start helper processes are not parallel: between fork and
// exec a child holds every file description of this process, the ledger
// lock's included, so a parallel test that closes and reopens a ledger
// would see ErrLocked. Sequential tests finish before parallel ones run.

func TestLockAcrossProcesses(t *testing.T) {
	tb := setup(t, Options{})
	tb.writeLedger(t, 1)
	child := startHelper(t, tb, "hold")
	if _, err := Open(tb.dir, tb.opts); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while another process holds the ledger = %v, want ErrLocked", err)
	}
	// The kernel drops a dead process's lock: no stale-lock cleanup needed.
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	l := tb.open(t)
	l.Close()
}

// TestCrashMidAppend kills a process that is appending as fast as it can,
// then models a power loss mid-write on top, and checks that Open recovers
// and the whole ledger verifies.
func TestCrashMidAppend(t *testing.T) {
	tb := setup(t, Options{})
	child := startHelper(t, tb, "append")
	// Let it write a few batches (and some checkpoints), then kill it hard.
	// The segment is preallocated, so its size says nothing: wait for a
	// record byte at 64 KiB instead (records have no zero bytes).
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b := readAt(t, tb.seg(1), 64<<10, 1); len(b) == 1 && b[0] != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the helper wrote less than 64 KiB in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()

	data, err := os.ReadFile(tb.seg(1))
	if err != nil {
		t.Fatal(err)
	}
	good, end := splitTail(data)
	if end != good {
		t.Fatalf("SIGKILL left %d torn bytes; a write(2) should not tear", end-good)
	}
	if runtime.GOOS == "linux" && int64(len(data)) < 64<<20 {
		t.Logf("segment is %d bytes: this file system did not preallocate", len(data))
	}

	// A SIGKILL cannot tear a write(2), so also model a power loss mid-batch
	// in a preallocated segment, where sectors can land out of order: the
	// start of the batch, a run of sectors that never made it (zeros), and
	// a later piece of the batch that did, complete with newlines.
	torn := []struct {
		off int
		b   string
	}{
		{good, `{"args_sha256":"0123`},
		{good + 1024, `"tool":"t","v":1}` + "\n" + `{"args_sha256":"","decision":"allowed"`},
	}
	f, err := os.OpenFile(tb.seg(1), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range torn {
		if _, err := f.WriteAt([]byte(w.b), int64(w.off)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	wantTorn := int64(torn[1].off + len(torn[1].b) - good)

	before := tb.verify(t)
	if before.Broken || before.TornBytes != wantTorn || before.Records == 0 {
		t.Fatalf("Verify after the crash = %+v, want intact records and %d torn bytes", before, wantTorn)
	}
	l := tb.open(t)
	r, err := l.Append(context.Background(), entry(1))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if r.Seq != before.LastSeq+2 { // +1 for the recovered record
		t.Fatalf("first append after recovery has seq %d, want %d", r.Seq, before.LastSeq+2)
	}
	after := tb.verify(t)
	if after.Broken || after.TornBytes != 0 || after.Records != before.Records+2 || after.Unsealed != 0 {
		t.Fatalf("Verify after recovery = %+v", after)
	}
	var recovered Record
	Tail(context.Background(), tb.dir, TailOptions{Last: 2}, func(r Record) error {
		if r.Decision == Recovered {
			recovered = r
		}
		return nil
	})
	if want := fmt.Sprintf("%d torn bytes", wantTorn); !strings.Contains(recovered.Reason, want) {
		t.Fatalf("recovered record = %+v, want it to name %s", recovered, want)
	}
	t.Logf("the helper got %d records durable before SIGKILL (%d checkpoints)", before.Records, before.Checkpoints)
}

// readAt returns up to n bytes of path at off (fewer past its end).
func readAt(t *testing.T, path string, off int64, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	k, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b[:k]
}

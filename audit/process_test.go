package audit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
// then checks that Open recovers and the whole ledger verifies.
func TestCrashMidAppend(t *testing.T) {
	tb := setup(t, Options{})
	child := startHelper(t, tb, "append")
	// Let it write a few batches (and some checkpoints), then kill it hard.
	deadline := time.Now().Add(10 * time.Second)
	for {
		fi, err := os.Stat(tb.seg(1))
		if err == nil && fi.Size() > 64<<10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the helper wrote less than 64 KiB in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()

	// A SIGKILL cannot tear a write(2) on most filesystems, so also model
	// the power-loss case: half a line at the end.
	f, err := os.OpenFile(tb.seg(1), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"args_sha256":"0123`)
	f.Close()

	before := tb.verify(t)
	if before.Broken || before.TornBytes == 0 || before.Records == 0 {
		t.Fatalf("Verify after the crash = %+v, want intact records and a torn tail", before)
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
	t.Logf("the helper got %d records durable before SIGKILL (%d checkpoints)", before.Records, before.Checkpoints)
}

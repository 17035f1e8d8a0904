package local_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// burnEnv makes the test binary a CPU burner instead of running tests: its
// value is how long to burn. startBurners re-executes the binary with it.
const burnEnv = "BASTION_TEST_BURN_CPU"

// burnLimit bounds a burner whatever it is told, in case its test dies
// without killing it.
const burnLimit = 15 * time.Minute

func TestMain(m *testing.M) {
	if v := os.Getenv(burnEnv); v != "" {
		burn(v)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// burn spins one core until d passes or its parent is gone, after saying
// so on stdout.
func burn(v string) {
	d, err := time.ParseDuration(v)
	if err != nil || d > burnLimit {
		d = burnLimit
	}
	parent := os.Getppid()
	fmt.Println("burning")
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) && os.Getppid() == parent {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if x == 0 {
		fmt.Println() // keeps the loop from being optimized away
	}
}

// startBurners starts n processes that each keep a core busy until the test
// ends (they are killed in cleanup), and returns once each is running.
func startBurners(t *testing.T, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), burnEnv+"="+burnLimit.String())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start burner: %v", err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "burning\n" {
			t.Fatalf("burner did not start: %q, %v", line, err)
		}
	}
	t.Logf("%d CPU burners running beside the review", n)
}

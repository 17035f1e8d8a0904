package testmcp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Binaries are cmd/testmcp built by Build.
type Binaries struct {
	Native string // for this machine, to run as a stdio child
	Wasm   string // for GOOS=wasip1 GOARCH=wasm, to run under wazero; "" unless asked for
}

// Build compiles cmd/testmcp into dir with the go command on PATH: for this
// machine, and also for wasip1 when wasm is set, both at once. Tests build
// it once per test binary (in TestMain); the module cache and the build
// cache make every build after the first cheap.
func Build(dir string, wasm bool) (Binaries, error) {
	b := Binaries{Native: filepath.Join(dir, "testmcp")}
	var wg sync.WaitGroup
	var nerr, werr error
	wg.Go(func() { nerr = goBuild(b.Native) })
	if wasm {
		b.Wasm = filepath.Join(dir, "testmcp.wasm")
		wg.Go(func() { werr = goBuild(b.Wasm, "GOOS=wasip1", "GOARCH=wasm") })
	}
	wg.Wait()
	if nerr != nil || werr != nil {
		return b, fmt.Errorf("building testmcp: %w", errors.Join(nerr, werr))
	}
	return b, nil
}

func goBuild(out string, env ...string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "github.com/bastion-mcp/bastion/internal/testmcp/cmd/testmcp")
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", filepath.Base(out), err, b)
	}
	return nil
}

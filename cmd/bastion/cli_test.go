package main

import (
	"bytes"
	"context"
	"testing"
)

// runCLI runs `bastion args...` in-process and returns stdout, stderr and
// the exit status main would use.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	var ec exitCoder
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case asExitCoder(err, &ec):
		return out.String(), errOut.String(), ec.ExitCode()
	}
	return out.String(), errOut.String() + err.Error(), 2
}

// runRoot is runCLI with stderr appended to stdout, for commands whose
// tests read one stream.
func runRoot(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, errOut, code := runCLI(t, args...)
	return out + errOut, code
}

package upstream

import (
	"fmt"
	"os"
)

// Preflight reports, without starting anything or dialing, why spec's
// upstream could not start on this machine now: a stdio command not found
// (or not executable) in the child's PATH, a Wasm module that cannot be
// read, or a configured env: or file: value that does not resolve. It
// resolves exactly as a start would (getenv nil means os.LookupEnv), so
// `bastion validate` names the upstream the gateway would serve without.
// A nil error promises nothing about the server's own behaviour, and an
// HTTP upstream's reachability is not checked.
func Preflight(spec Spec, getenv func(string) (string, bool)) error {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	c := &Conn{spec: spec, deps: Deps{Getenv: getenv}}
	switch spec.Kind {
	case Stdio:
		env, err := c.childEnv()
		if err != nil {
			return err
		}
		if _, err := lookPath(spec.Command, env); err != nil {
			return fmt.Errorf("upstream %s: %w", spec.Name, err)
		}
	case Wasm:
		if _, err := c.resolve("env", spec.Env); err != nil {
			return err
		}
		f, err := os.Open(spec.Module)
		if err != nil {
			return fmt.Errorf("upstream %s: module: %w", spec.Name, err)
		}
		f.Close()
	case HTTP, SSE:
		if _, err := c.resolve("header", spec.Headers); err != nil {
			return err
		}
	}
	return nil
}

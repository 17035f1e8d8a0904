package local

import (
	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
)

// The design checks as the engine calls them: a nil token set turns the
// token checks off.

func runChecks(s *checks.Snapshot, set *tokens.Set) []design.Finding {
	return checks.Run(s, checks.Config{Tokens: set})
}

func remeasure(s *checks.Snapshot, set *tokens.Set, f design.Finding) design.RecheckOutcome {
	return checks.Remeasure(s, checks.Config{Tokens: set}, f)
}

// CheckKinds lists every check kind the engine runs.
func CheckKinds() []string { return checks.Kinds() }

// coverage is what the checks say they judge in s, and why not the rest.
func coverage(s *checks.Snapshot, set *tokens.Set) ([]string, []design.Skip) {
	return checks.Coverage(s, checks.Config{Tokens: set})
}

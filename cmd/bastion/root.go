package main

import (
	"errors"

	"github.com/bastion-mcp/bastion/reviewmcp"
	"github.com/spf13/cobra"
)

// version is the one version: serverInfo, the tool catalog and server.json
// carry the same number, pinned by reviewmcp's tests.
var version = reviewmcp.Version

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "bastion",
		Short:         "Design-review MCP server, remote MCP edge and governing MCP gateway",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newDemoCmd(),
		newEgressCmd(),
		newAuditCmd(),
		newReviewCmd(),
		newValidateCmd(),
		newStdioCmd(),
		newServeCmd(),
		newTokenCmd(),
		newTargetsCmd(),
		newGatewayCmd(),
		newApprovalsCmd(),
		newPinCmd(),
		// Each subcommand lives in its own file; add its constructor here.
	)
	return root
}

// exitCoder is an error that asks for a specific exit status without an
// extra "bastion:" line (the command already printed what it had to say).
type exitCoder interface {
	error
	ExitCode() int
}

func asExitCoder(err error, target *exitCoder) bool { return errors.As(err, target) }

// exitError ends the process with code after the command has printed its result.
type exitError struct{ code int }

func (e exitError) Error() string { return "exit status" }
func (e exitError) ExitCode() int { return e.code }

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/reviewmcp"
	"github.com/bastion-mcp/bastion/tracing"
)

// version is the one version: serverInfo, the tool catalog and server.json
// carry the same number, pinned by reviewmcp's tests.
var version = reviewmcp.Version

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "bastion",
		Short:         "Design-review MCP server, remote MCP edge and governing MCP gateway",
		Version:       app.ReadBuildInfo(version).String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	format := logFormat("text")
	root.PersistentFlags().Var(&format, "log-format", "log line format on stderr: text or json (slog's JSON handler)")
	root.PersistentFlags().String("otlp-endpoint", "", "export OpenTelemetry traces over OTLP/HTTP to this collector base URL (e.g. http://localhost:4318); off unless this or OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set")
	root.AddCommand(
		newDoctorCmd(),
		newMigrateCmd(),
		newDemoCmd(),
		newEgressCmd(),
		newAuditCmd(),
		newReviewCmd(),
		newValidateCmd(),
		newStdioCmd(),
		newServeCmd(),
		newTokenCmd(),
		newTargetsCmd(),
		newFeedbackCmd(),
		newGatewayCmd(),
		newApprovalsCmd(),
		newPinCmd(),
		newEngineCmd(),
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

// commandFailed prints err on w as "PREFIX: CODE: message (next_action: N)",
// the one shape a command's typed failure takes, and returns exit status 1.
// Anything untyped is reported as internalMessage.
func commandFailed(w io.Writer, prefix string, err error, internalMessage string) error {
	fe := fault.From(err, internalMessage)
	fmt.Fprintf(w, "%s: %s: %s (next_action: %s)\n", prefix, fe.Code, fe.Message, fe.NextAction)
	return exitError{1}
}

// logFormat is --log-format, checked when parsed so a typo fails before
// anything starts.
type logFormat string

func (f *logFormat) String() string { return string(*f) }
func (f *logFormat) Type() string   { return "format" }
func (f *logFormat) Set(s string) error {
	if !slices.Contains(app.LogFormats, s) {
		return fault.New(fault.InvalidArgument, "want text or json")
	}
	*f = logFormat(s)
	return nil
}

// openTracing returns the tracing cmd's --otlp-endpoint or the
// environment asks for (off when neither does), and the func that flushes
// and stops it on exit.
func openTracing(cmd *cobra.Command, log *slog.Logger) (*tracing.Provider, func(), error) {
	tp, err := tracing.New(cmd.Context(), tracing.Config{
		Endpoint: cmd.Flag("otlp-endpoint").Value.String(), Version: version,
		Policy: egress.Policy{Logger: log},
	})
	if err != nil {
		return nil, nil, fault.Wrap(err, fault.InvalidArgument, "bad OTLP endpoint: %v", err)
	}
	if tp.Enabled() && log != nil {
		log.Info("bastion: exporting traces", "endpoint", tp.Endpoint())
	}
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil && log != nil {
			log.Warn("bastion: traces not flushed", "err", err)
		}
	}, nil
}

// newLogger returns the logger of cmd on w at level, in its --log-format.
func newLogger(cmd *cobra.Command, w io.Writer, level slog.Level) (*slog.Logger, error) {
	return app.NewLogger(w, cmd.Flag("log-format").Value.String(), level)
}

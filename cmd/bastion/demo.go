package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/demo"
)

func newDemoCmd() *cobra.Command {
	var out, dataDir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Walk the design-review loop offline against a sample site",
		Long: `demo serves a sample pricing site on loopback, starts ` + "`bastion stdio`" + ` as a
child process and drives it over MCP like a coding agent would: list the
tools, submit a review, poll, read every view, write out/review.json and
out/panel.html, take a grounded fix from the panel, deploy a fixed revision,
recheck (some findings pass, some still fail), resubmit idempotently and be
refused an unverified target. Every finding comes from a real Chromium
capture and the real checks. Offline; needs Chromium (make demo installs it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := capture.FindChrome(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "bastion demo: Chromium is not installed (%v). Run `make demo`, which installs it, or set %s to a Chromium or Chrome binary; `bastion doctor` says what else is missing.\n", err, capture.ChromeEnv)
				return exitError{1}
			}
			format := cmd.Flag("log-format").Value.String()
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("cannot find the bastion executable: %w", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Minute)
			defer cancel()
			_, err = demo.Run(ctx, demo.Options{
				Command: func(args ...string) *exec.Cmd {
					return exec.Command(exe, append([]string{"stdio", "--log-format", format}, args...)...)
				},
				Out:     out,
				DataDir: dataDir,
				Stdout:  cmd.OutOrStdout(),
			})
			if err != nil {
				var te *demo.ToolError
				if errors.As(err, &te) {
					fmt.Fprintf(cmd.ErrOrStderr(), "bastion demo: %s: %s (next_action: %s)\n", te.Code, te.Message, te.NextAction)
				} else {
					fmt.Fprintln(cmd.ErrOrStderr(), "bastion demo:", err)
				}
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "out", "directory for review.json, panel.html and the server's log")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "data directory of the child (default: a fresh temporary one)")
	cmd.Flags().MarkHidden("data-dir")
	return cmd
}

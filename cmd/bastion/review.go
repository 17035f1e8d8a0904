package main

import (
	"context"
	"fmt"
	"github.com/bastion-mcp/bastion/app"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/engine/local"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/panel"
	"github.com/bastion-mcp/bastion/review"
)

type reviewFlags struct {
	routes       []string
	viewports    []string
	tokens       string
	out          string
	json         bool
	allowPrivate bool
	allowPartial bool
	timeout      time.Duration
}

// exitPartial is the exit status of a review that ran but did not review
// everything requested (without --allow-partial): a CI gate must not pass
// on a review that silently dropped a viewport.
const exitPartial = 3

// errPartial reports a partial review; the skipped captures were printed.
type errPartial struct{ skipped int }

func (e errPartial) Error() string { return "partial review" }

func newReviewCmd() *cobra.Command {
	var f reviewFlags
	cmd := &cobra.Command{
		Use:   "review URL",
		Short: "Review a preview URL once, locally, and print or write the result",
		Long: `review captures URL (and --routes on its origin) in network-isolated headless
Chromium at each viewport, runs the design checks and prints the grade and
findings. The local operator chooses the URL and is trusted to (there is no
verified-host registry here), but the egress guard still applies to every
request the browser makes: without --allow-private only public https
targets on port 443 are reachable; --allow-private also allows loopback and
private addresses over http or https on any port, for a local dev server,
whose own https certificate (self-signed, a local CA's) is accepted there and
only there. Public hosts still need https and a valid certificate; metadata
endpoints stay refused.

Progress goes to stderr. The exit status is 0 when every requested route
and viewport was reviewed, whatever the grade; 3 when the review ran but
left something out (each skip is printed with its reason; --allow-partial
makes this 0); and 1 with a typed error line when it could not run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, err := newLogger(cmd, cmd.ErrOrStderr(), slog.LevelWarn)
			if err == nil {
				err = runReview(cmd.Context(), logger, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
			}
			if p, ok := err.(errPartial); ok {
				fmt.Fprintf(cmd.ErrOrStderr(), "bastion: partial review: %d of the requested captures or measurements were not (wholly) reviewed (see \"not reviewed\"); exit status %d (--allow-partial accepts a partial review)\n", p.skipped, exitPartial)
				return exitError{exitPartial}
			}
			if err != nil {
				return commandFailed(cmd.ErrOrStderr(), "bastion", err, "the review could not run")
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.routes, "routes", nil, "routes on the URL's origin to review, e.g. /,/pricing (default: the URL's own path)")
	var vps []string
	for _, v := range review.DefaultViewports() {
		vps = append(vps, string(v))
	}
	fl.StringSliceVar(&f.viewports, "viewports", vps, "viewports: mobile (390×844), tablet (834×1112), desktop (1440×900)")
	fl.StringVar(&f.tokens, "tokens", "", "W3C DTCG design-token file (default: the page's :root custom properties)")
	fl.StringVar(&f.out, "out", "", "directory to write review.json, panel.html and evidence/*.png into")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON on stdout")
	fl.BoolVar(&f.allowPrivate, "allow-private", false, "allow loopback/private targets over http, or https with a self-signed certificate, on any port (a local dev server)")
	fl.DurationVar(&f.timeout, "timeout", review.DefaultTimeout, "give up on the whole review after this long (captures wait for a free browser tab within it)")
	fl.BoolVar(&f.allowPartial, "allow-partial", false, "exit 0 even when some route or viewport could not be reviewed")
	return cmd
}

func runReview(ctx context.Context, logger *slog.Logger, stdout, stderr io.Writer, rawURL string, f reviewFlags) error {
	policy := egress.Policy{Logger: logger}
	// AllowPrivate relaxes scheme and port for private addresses only:
	// a public host still needs https on 443.
	policy.AllowPrivate = f.allowPrivate
	guard := egress.NewGuard(policy, nil)
	target, err := guard.Check(ctx, rawURL)
	if err != nil {
		if hint := review.PrivateTargetHint(rawURL); hint != nil && !f.allowPrivate {
			return hint
		}
		return err
	}
	req := engine.Request{URL: target.URL.String(), Routes: f.routes}
	if len(req.Routes) == 0 {
		req.Routes = review.DefaultRoutes(target.URL)
	}
	for _, v := range f.viewports {
		vp := design.Viewport(strings.TrimSpace(v))
		if _, _, ok := vp.Size(); !ok {
			return fault.New(fault.InvalidArgument, "unknown viewport %q (want mobile, tablet or desktop)", terminalSafe(v))
		}
		req.Viewports = append(req.Viewports, vp)
	}
	if f.tokens != "" {
		if req.Tokens, err = os.ReadFile(f.tokens); err != nil {
			return fault.Wrap(err, fault.InvalidArgument, "cannot read the token file %q", f.tokens)
		}
	}

	fmt.Fprintf(stderr, "reviewing %s: %d route(s) × %d viewport(s)\n", req.URL, len(req.Routes), len(req.Viewports))
	start := time.Now()
	progress := func(route string, vp design.Viewport, took time.Duration, err error) {
		if err != nil {
			fmt.Fprintf(stderr, "  skipped  %s @ %s: %s\n", route, vp, fault.From(err, "capture failed").Message)
			return
		}
		fmt.Fprintf(stderr, "  captured %s @ %s in %.2fs\n", route, vp, took.Seconds())
	}
	eng, err := app.OpenEngine(ctx, app.EngineConfig{Guard: guard, AllowPrivate: f.allowPrivate, Logger: logger,
		Engine: local.Options{Progress: progress, Timeout: f.timeout}})
	if err != nil {
		return err
	}
	defer eng.Close()
	res, err := eng.Review(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "done in %.2fs: %s, %d finding(s)\n", time.Since(start).Seconds(), res.Grade, len(res.Findings))
	if f.json && !res.Coverage.Complete() {
		// stdout is JSON: say here, for the operator, what was left out.
		for _, s := range res.Coverage.Skipped {
			fmt.Fprintf(stderr, "  not reviewed: %s: %s\n", terminalSafe(s.What), terminalSafe(s.Reason))
		}
	}

	meta := panel.Meta{URL: req.URL}
	if f.out != "" {
		files, err := panel.WriteDir(f.out, res, meta)
		if err != nil {
			return fault.Wrap(err, fault.InternalError, "cannot write the review to %q", f.out)
		}
		fmt.Fprintf(stderr, "wrote %d file(s) to %s (open panel.html)\n", len(files), f.out)
	}
	if f.json {
		doc, err := panel.JSON(res, meta)
		if err != nil {
			return err
		}
		if _, err = stdout.Write(doc); err != nil {
			return err
		}
	} else {
		printSummary(stdout, res)
	}
	if !res.Coverage.Complete() && !f.allowPartial {
		return errPartial{skipped: max(len(res.Coverage.Skipped), 1)}
	}
	return nil
}

// printSummary prints the grade and one line per finding.
func printSummary(w io.Writer, res *design.Result) {
	fmt.Fprintf(w, "grade: %s\n", res.Grade)
	for _, f := range res.Findings {
		vps := make([]string, len(f.Viewports))
		for i, v := range f.Viewports {
			vps[i] = string(v)
		}
		fmt.Fprintf(w, "%-7s %-18s %s %s [%s] %s\n", f.Severity, f.Kind, terminalSafe(f.Route), terminalSafe(f.Selector), strings.Join(vps, ","), terminalSafe(f.Title))
	}
	for _, s := range res.Coverage.Skipped {
		fmt.Fprintf(w, "not reviewed: %s: %s\n", terminalSafe(s.What), terminalSafe(s.Reason))
	}
	for _, s := range res.Coverage.ChecksOff {
		fmt.Fprintf(w, "check off: %s: %s\n", s.What, s.Reason)
	}
}

// terminalSafe replaces control characters (C0, DEL, C1) with '?': page-
// derived text (selectors and titles quote the page) must not drive the
// operator's terminal with escape sequences.
func terminalSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

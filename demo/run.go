package demo

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure Run.
type Options struct {
	// Command returns the child `bastion stdio` process with the given extra
	// arguments (the demo's data directory and its hidden site flags).
	// Required.
	Command func(args ...string) *exec.Cmd
	// Out is where review.json, panel.html and stdio.log are written; ""
	// means "out".
	Out string
	// DataDir is the child's data directory; "" means a fresh temporary one,
	// removed at the end.
	DataDir string
	// Stdout receives the numbered steps; nil means os.Stdout.
	Stdout io.Writer
}

// Report is what one run measured.
type Report struct {
	Total            time.Duration // the whole run, site and child start included
	SubmitToComplete time.Duration // created_at to completed_at of the review job
	JobID            string
	ReviewID         string
	Grade            string
	Findings         int
	Fix              string         // the fix apply_fix returned
	Outcomes         map[string]int // recheck outcome → count
	Reused           bool           // the resubmit returned the original job
	DeniedCode       string         // the code the unverified target got
	Files            []string       // files written into Out
}

// Tool names, as served.
const (
	toolReview  = "design_review"
	toolGet     = "design_review_get"
	toolRecheck = "design_recheck"
	toolPanel   = "design_review_panel_action"
)

// The MCP Apps extension the demo client declares, so the evidence view
// carries the panel.
const (
	appsExtension = "io.modelcontextprotocol/ui"
	appsMIMEType  = "text/html;profile=mcp-app"
	panelURIBase  = "ui://bastion/design-review/"
)

// StdioArgs are the hidden `bastion stdio` flags that wire the child to
// site: Host pre-verified, resolved to StubAddr, dialed at site's address,
// and site's certificate trusted by the browser.
func StdioArgs(site *Site) []string {
	return []string{"--unsafe-demo-site", Host + "=" + site.Addr().String(), "--unsafe-demo-spki", site.SPKIHash()}
}

// ClientCapabilities declares what the demo client (and the tests) can show:
// MCP Apps HTML, so the evidence view includes the review panel.
func ClientCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Extensions: map[string]any{
		appsExtension: map[string]any{"mimeTypes": []string{appsMIMEType}},
	}}
}

// Run walks the design-review loop against the sample site, printing each
// step, and returns what it measured. Every judgment in it comes from the
// child's real browser and checks; Run only drives the tools.
func Run(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	if o.Command == nil {
		return nil, errors.New("demo: Options.Command is required")
	}
	w := o.Stdout
	if w == nil {
		w = os.Stdout
	}
	out := cmp.Or(o.Out, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	dataDir := o.DataDir
	if dataDir == "" {
		d, err := os.MkdirTemp("", "bastion-demo-*")
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		defer os.RemoveAll(d)
		dataDir = d
	}
	logPath := filepath.Join(out, "stdio.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer logFile.Close()

	site, err := StartSite(slog.New(slog.NewTextHandler(logFile, nil)))
	if err != nil {
		return nil, err
	}
	defer site.Close()
	fmt.Fprintf(w, "bastion demo: the design-review loop, offline, on a sample site\n")
	fmt.Fprintf(w, "   https://%s is served by this process on %s (revision %s, self-signed certificate);\n", Host, site.Addr(), site.Revision())
	fmt.Fprintf(w, "   the bastion stdio child resolves it to %s and its egress guard dials that address here.\n", StubAddr)

	cmd := o.Command(append([]string{"--data-dir", dataDir, "--log-level", "warn"}, StdioArgs(site)...)...)
	cmd.Stderr = logFile
	client := mcp.NewClient(&mcp.Implementation{Name: "bastion-demo", Version: "1"}, &mcp.ClientOptions{Capabilities: ClientCapabilities()})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		return nil, fmt.Errorf("demo: the bastion stdio child did not start (see %s): %w", logPath, err)
	}
	defer cs.Close()

	d := &walk{cs: cs, w: w, site: site, out: out, rep: &Report{Outcomes: map[string]int{}}, runID: runID()}
	err = d.steps(ctx)
	d.rep.Total = time.Since(start)
	if err != nil {
		return d.rep, fmt.Errorf("%w (the server's log is %s)", err, logPath)
	}
	fmt.Fprintf(w, "done in %.1fs; submit → completed %.1fs. Open %s.\n",
		d.rep.Total.Seconds(), d.rep.SubmitToComplete.Seconds(), filepath.Join(out, "panel.html"))
	return d.rep, nil
}

// runID makes this run's client_request_ids unique, so a reused data
// directory does not replay an earlier run's jobs.
func runID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// walk is one run's state.
type walk struct {
	cs    *mcp.ClientSession
	w     io.Writer
	site  *Site
	out   string
	rep   *Report
	runID string
}

func (d *walk) printf(format string, args ...any) { fmt.Fprintf(d.w, format, args...) }

// call calls a tool and decodes its result; a tool error is a *ToolError.
func (d *walk) call(ctx context.Context, tool string, args any) (*payload, []byte, *mcp.CallToolResult, error) {
	res, err := d.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("demo: %s: %w", tool, err)
	}
	p, raw, err := decode(res)
	return p, raw, res, err
}

func (d *walk) steps(ctx context.Context) error {
	// 1. The catalog.
	tools, err := d.cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("demo: tools/list: %w", err)
	}
	var names []string
	for _, t := range tools.Tools {
		n := t.Name
		if a := t.Annotations; a != nil {
			switch {
			case a.ReadOnlyHint:
				n += " (read-only)"
			case a.DestructiveHint != nil && *a.DestructiveHint:
				n += " (destructive)"
			}
		}
		names = append(names, n)
	}
	d.printf("1. tools/list → %d tools: %s\n", len(tools.Tools), strings.Join(names, ", "))

	// 2. Submit.
	submit := map[string]any{
		"url":               "https://" + Host + "/pricing",
		"routes":            []string{"/pricing"},
		"viewports":         []string{"mobile", "tablet", "desktop"},
		"expected_revision": Revision1,
		"client_request_id": "demo-review-" + d.runID,
	}
	d.printf("2. design_review %s routes [/pricing] viewports [mobile tablet desktop] expected_revision %s\n", submit["url"], Revision1)
	p, _, _, err := d.call(ctx, toolReview, submit)
	if err != nil {
		return err
	}
	job := p.Job
	d.rep.JobID = job.JobID
	d.printf("   → job %s %s, poll after %d ms, %d unit reserved (%d left)\n",
		job.JobID, job.Status, job.PollAfterMS, p.Budget.UnitsReserved, p.Budget.TenantUnitsRemaining)

	// 3. Poll.
	d.printf("3. design_review_get view=status wait_ms=%d: each answer held until the job changes state\n", demoWaitMS)
	job, err = d.poll(ctx, job)
	if err != nil {
		return err
	}
	d.rep.ReviewID = job.ReviewID
	d.rep.SubmitToComplete = elapsed(job)
	d.printf("   → completed; submit → completed %.1fs (server clock)\n", d.rep.SubmitToComplete.Seconds())

	// 4. The views.
	d.printf("4. read the views\n")
	d.printf("   status:   %s (review %s)\n", job.Status, job.ReviewID)
	sum, sumRaw, _, err := d.call(ctx, toolGet, map[string]any{"job_id": job.JobID, "view": "summary"})
	if err != nil {
		return err
	}
	if sum.Summary == nil {
		return errors.New("demo: the summary view has no summary")
	}
	d.printf("   summary (%d bytes of data): grade %s, %d finding(s), coverage %s, by kind %s\n",
		len(sumRaw), sum.Summary.Grade, sum.Summary.Findings, sum.Summary.Coverage.State, kinds(sum.Summary.ByKind))
	for _, f := range sum.Summary.Top {
		d.printf("     %-10s %s\n", f.Severity, safe(f.Line, 110))
	}
	all, allRaw, allRes, err := d.call(ctx, toolGet, map[string]any{"job_id": job.JobID, "view": "findings"})
	if err != nil {
		return err
	}
	if all.Review == nil {
		return errors.New("demo: the findings view has no review")
	}
	rev := all.Review
	d.rep.Grade, d.rep.Findings = rev.Grade, len(rev.Findings)
	d.printf("   findings: %d finding(s) with their measured facts (%d bytes)\n", len(rev.Findings), len(allRaw))
	focus, _, _, err := d.call(ctx, toolGet, map[string]any{"job_id": job.JobID, "view": "focus"})
	if err != nil {
		return err
	}
	d.printf("   focus:    %d actionable finding(s): an element, a concrete fix, not advisory\n", len(focus.Review.Findings))
	for _, f := range focus.Review.Findings {
		d.printf("     %-10s %-17s %-34s [%s] %s\n", f.Severity, f.Kind, safe(ref(f.ElementRef), 34), strings.Join(f.Viewports, ","), safe(f.Title, 80))
	}
	_, _, evRes, err := d.call(ctx, toolGet, map[string]any{"job_id": job.JobID, "view": "evidence"})
	if err != nil {
		return err
	}
	var panelHTML string
	var nText, nImage, nPanel int
	for _, c := range evRes.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			nText++
		case *mcp.ImageContent:
			nImage++
		case *mcp.EmbeddedResource:
			if c.Resource != nil && strings.HasPrefix(c.Resource.URI, "ui://") {
				nPanel++
				panelHTML = c.Resource.Text
			}
		}
	}
	d.printf("   evidence: %d content blocks: %d panel resource, %d image crop(s), %d text\n", len(evRes.Content), nPanel, nImage, nText)

	// 5. Files.
	if panelHTML == "" {
		rr, err := d.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: panelURIBase + job.JobID})
		if err != nil {
			return fmt.Errorf("demo: read the panel resource: %w", err)
		}
		if len(rr.Contents) > 0 {
			panelHTML = rr.Contents[0].Text
		}
	}
	if err := d.write("review.json", indent(allRes, allRaw)); err != nil {
		return err
	}
	if err := d.write("panel.html", []byte(panelHTML)); err != nil {
		return err
	}
	d.printf("5. wrote %s\n", strings.Join(d.rep.Files, ", "))

	// 6. The panel hands a grounded finding's fix to the agent.
	var grounded *findingWire
	for i, f := range rev.Findings {
		if !f.Advisory && f.ElementRef != nil && f.Suggestion != nil {
			grounded = &rev.Findings[i]
			break
		}
	}
	if grounded == nil {
		return errors.New("demo: the review has no grounded finding to fix")
	}
	pa, _, _, err := d.call(ctx, toolPanel, map[string]any{"job_id": job.JobID, "action": "apply_fix", "finding_id": grounded.FindingID})
	if err != nil {
		return err
	}
	d.rep.Fix = pa.Response.Fix
	d.printf("6. design_review_panel_action apply_fix %s (%s) → %s: %s\n", grounded.FindingID, grounded.Kind, pa.Response.Type, safe(pa.Response.Fix, 200))

	// 7. The agent deploys its fixes.
	d.site.SetRevision(2)
	d.printf("7. the agent applies its fixes and deploys revision %s of the sample site\n", d.site.Revision())

	// 8. Recheck every finding on the new revision.
	ids := make([]string, 0, len(rev.Findings))
	byID := map[string]findingWire{}
	for _, f := range rev.Findings {
		if len(ids) < 20 {
			ids = append(ids, f.FindingID)
		}
		byID[f.FindingID] = f
	}
	d.printf("8. design_recheck %d finding(s) with expected_revision %s\n", len(ids), Revision2)
	rp, _, _, err := d.call(ctx, toolRecheck, map[string]any{
		"review_id": job.ReviewID, "finding_ids": ids, "expected_revision": Revision2,
		"client_request_id": "demo-recheck-" + d.runID,
	})
	if err != nil {
		return err
	}
	d.printf("   → job %s %s, %d unit(s) reserved\n", rp.Job.JobID, rp.Job.Status, rp.Budget.UnitsReserved)
	rjob, err := d.poll(ctx, rp.Job)
	if err != nil {
		return err
	}
	rg, _, _, err := d.call(ctx, toolGet, map[string]any{"job_id": rjob.JobID, "view": "summary"})
	if err != nil {
		return err
	}
	if rg.Recheck == nil {
		return errors.New("demo: the completed recheck has no report")
	}
	for _, o := range rg.Recheck.Outcomes {
		d.rep.Outcomes[o.Outcome]++
		f := byID[o.FindingID]
		d.printf("   %-12s %s %-17s %-34s %s%s\n", o.Outcome, o.FindingID, f.Kind, safe(ref(f.ElementRef), 34), safe(o.Reason, 90), facts(o.Facts))
	}
	d.printf("   → %d passed, %d failed, %d inconclusive\n", d.rep.Outcomes["passed"], d.rep.Outcomes["failed"], d.rep.Outcomes["inconclusive"])

	// 9. A retry of the same submit is the same job.
	again, _, _, err := d.call(ctx, toolReview, submit)
	if err != nil {
		return err
	}
	d.rep.Reused = again.Job.Reused && again.Job.JobID == job.JobID
	d.printf("9. design_review again with the same client_request_id → job %s, reused: %t\n", again.Job.JobID, again.Job.Reused)

	// 10. A target nobody verified is refused before anything is fetched.
	_, _, _, err = d.call(ctx, toolReview, map[string]any{
		"url": "https://evil.example.net/", "client_request_id": "demo-denied-" + d.runID,
	})
	var te *ToolError
	if !errors.As(err, &te) {
		return fmt.Errorf("demo: the unverified target was not refused: %v", err)
	}
	d.rep.DeniedCode = te.Code
	d.printf("10. design_review https://evil.example.net/ → %s: %s\n", te.Code, safe(te.Message, 200))
	return nil
}

// demoWaitMS is how long the demo lets the server hold each status read:
// an agent polls a few times instead of every poll_after_ms.
const demoWaitMS = 20000

// poll reads the job's status view, each read a long poll (wait_ms), until
// it is terminal, printing each change; a job that did not complete is an
// error with its kept reason.
func (d *walk) poll(ctx context.Context, job jobWire) (jobWire, error) {
	last := ""
	for {
		state := job.Status
		if job.Stage != "" {
			state += " (" + job.Stage + ")"
		}
		if state != last {
			d.printf("   … %s\n", state)
			last = state
		}
		switch job.Status {
		case "completed":
			return job, nil
		case "failed", "cancelled":
			if job.Error != nil {
				return job, fmt.Errorf("demo: job %s %s: %s: %s", job.JobID, job.Status, job.Error.Code, job.Error.Message)
			}
			return job, fmt.Errorf("demo: job %s %s", job.JobID, job.Status)
		}
		p, _, _, err := d.call(ctx, toolGet, map[string]any{"job_id": job.JobID, "view": "status", "wait_ms": demoWaitMS})
		if err != nil {
			return job, err
		}
		job = p.Job
	}
}

func (d *walk) write(name string, b []byte) error {
	path := filepath.Join(d.out, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.rep.Files = append(d.rep.Files, path)
	return nil
}

// elapsed is a job's created_at to completed_at, by the server's clock.
func elapsed(j jobWire) time.Duration {
	c, err1 := time.Parse(time.RFC3339Nano, j.CreatedAt)
	f, err2 := time.Parse(time.RFC3339Nano, j.CompletedAt)
	if err1 != nil || err2 != nil {
		return 0
	}
	return f.Sub(c)
}

// indent returns the review document as the server wrote it: the JSON text
// block (field order kept), else structuredContent, indented.
func indent(res *mcp.CallToolResult, structured []byte) []byte {
	doc := structured
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && json.Valid([]byte(t.Text)) {
			doc = []byte(t.Text)
			break
		}
	}
	var b bytes.Buffer
	if json.Indent(&b, doc, "", "  ") != nil {
		return doc
	}
	b.WriteByte('\n')
	return b.Bytes()
}

func ref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// facts renders measured facts as " {k: v, ...}" in key order.
func facts(f map[string]any) string {
	if len(f) == 0 {
		return ""
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		if k != "also" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %v", k, f[k]))
	}
	return " {" + safe(strings.Join(parts, ", "), 160) + "}"
}

// safe shortens page-derived text to n runes and replaces control
// characters, so a page cannot drive the terminal.
// kinds renders counts by kind as "a 2, b 1", sorted by kind.
func kinds(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", safe(k, 40), m[k])
	}
	return strings.Join(parts, ", ")
}

func safe(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

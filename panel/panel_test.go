package panel

import (
	"bytes"
	"encoding/json"
	"github.com/bastion-mcp/bastion/design"
	"os"
	"regexp"
	"strings"
	"testing"
)

// hostile is page-derived text that would be markup if it were not escaped.
const hostile = `"><script>alert(1)</script><img src=x onerror=alert(2)>`

func hostileResult() *design.Result {
	return &design.Result{
		Grade: design.NeedsWork,
		Findings: []design.Finding{{
			ID: "f_0123456789", Kind: "contrast", Severity: design.Major,
			Title: "Low contrast " + hostile, Description: hostile, Route: "/" + hostile,
			Viewports: []design.Viewport{design.Mobile}, Selector: hostile,
			Facts: design.Facts{"ratio": 2.9, "text": hostile, "ok": true},
			Fix:   "Darken " + hostile, EvidenceID: "ev_1",
		}},
		Evidence: []design.Evidence{{ID: "ev_1", MIMEType: "image/png", Data: []byte("\x89PNG fake bytes")}},
		Coverage: design.Coverage{
			RoutesRequested: []string{"/"}, RoutesReviewed: []string{"/"},
			Skipped:   []design.Skip{{What: "/x @ mobile", Reason: "CAPTURE_FAILED: " + hostile}},
			ChecksRun: []string{"contrast"},
		},
		Health: []design.PageHealth{{
			Route: "/", Viewport: design.Mobile, StatusCode: 200,
			ConsoleErrors:  []string{hostile},
			Failed:         []design.Failure{{URL: "javascript:alert(3)//" + hostile, Code: "HTTP_404"}},
			EgressBlocked:  []design.Failure{{URL: "http://169.254.169.254/" + hostile, Code: "DNS_TARGET_PROHIBITED"}},
			FontsNotLoaded: []string{hostile},
		}},
		TokensFrom: "none",
	}
}

func TestRenderEscapesPageText(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Render(&buf, hostileResult(), Meta{URL: "https://preview.example/" + hostile}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script", "<img src=x"} {
		if strings.Contains(out, bad) {
			t.Errorf("panel contains unescaped %q", bad)
		}
	}
	if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("hostile text was dropped instead of shown escaped")
	}
	if !strings.Contains(out, `content="default-src 'none'; img-src data:; style-src 'unsafe-inline'"`) {
		t.Error("no Content-Security-Policy forbidding scripts and fetches")
	}
	// The only image is the inline evidence; nothing is fetched.
	imgs := regexp.MustCompile(`<img [^>]*src="([^"]*)"`).FindAllStringSubmatch(out, -1)
	if len(imgs) != 1 || !strings.HasPrefix(imgs[0][1], "data:image/png;base64,") {
		t.Errorf("images = %q, want exactly the one data: URI evidence", imgs)
	}
	for _, attr := range []string{`href="`, `src="http`, `<link`, `<iframe`, `url(`} {
		if strings.Contains(out, attr) {
			t.Errorf("panel references something external: %q", attr)
		}
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	t.Parallel()
	var a, b bytes.Buffer
	if err := Render(&a, hostileResult(), Meta{URL: "https://x.example/"}); err != nil {
		t.Fatal(err)
	}
	if err := Render(&b, hostileResult(), Meta{URL: "https://x.example/"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two renders of one result differ")
	}
	if err := Render(&a, nil, Meta{}); err == nil {
		t.Error("nil result rendered")
	}
}

func TestWriteDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := hostileResult()
	res.Evidence = append(res.Evidence, design.Evidence{ID: "../../escape", MIMEType: "image/png", Data: []byte("x")})
	files, err := WriteDir(dir, res, Meta{URL: "https://x.example/"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{dir + "/review.json", dir + "/panel.html", dir + "/evidence/ev_1.png"}
	if strings.Join(files, "\n") != strings.Join(want, "\n") {
		t.Errorf("wrote %q, want %q (an id that is not ev_<hex> is never a file name)", files, want)
	}
	doc, err := os.ReadFile(dir + "/review.json")
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		URL      string           `json:"url"`
		Grade    design.Grade     `json:"grade"`
		Findings []design.Finding `json:"findings"`
	}
	if err := json.Unmarshal(doc, &back); err != nil {
		t.Fatal(err)
	}
	if back.URL != "https://x.example/" || back.Grade != design.NeedsWork || len(back.Findings) != 1 || back.Findings[0].EvidenceID != "ev_1" {
		t.Errorf("review.json round trip = %+v", back)
	}
}

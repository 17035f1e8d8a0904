package checks_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/checks/corpus"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
)

// goldenPages are corpus pages whose snapshots are saved in
// testdata/snapshots, so their checks (and exceptions: ellipsis, line-clamp,
// scroll containers, opaque badges, disabled buttons) are re-judged without a
// browser.
var goldenPages = []struct {
	file string
	vp   design.Viewport
}{
	{"checkout-clipped.html", design.Mobile},
	{"blog-overlap.html", design.Desktop},
	{"editor-toolbar.html", design.Mobile},
	{"clean-dashboard.html", design.Mobile},
	{"settings-escape.html", design.Tablet},
	{"pricing-contrast.html", design.Tablet},
}

func goldenName(file string, vp design.Viewport) string {
	return strings.TrimSuffix(file, ".html") + "@" + string(vp)
}

// TestGoldens re-runs the checks on saved snapshots and compares the
// findings with the saved findings. With -update it first re-captures the
// snapshots in Chromium and rewrites both.
func TestGoldens(t *testing.T) {
	c, err := corpus.Load(corpus.Dir())
	if err != nil {
		t.Fatal(err)
	}
	set, err := tokens.Parse(c.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		b := newBrowser(t)
		base := serveCorpus(t, c.Dir)
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, g := range goldenPages {
			s := b.snapshot(t, base+"/"+g.file, g.vp)
			writeJSON(t, filepath.Join(goldenDir, goldenName(g.file, g.vp)+".json"), s)
			writeJSON(t, filepath.Join(goldenDir, goldenName(g.file, g.vp)+".findings.json"), checks.Run(s, checks.Config{Tokens: set}))
		}
	}
	for _, g := range goldenPages {
		name := goldenName(g.file, g.vp)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := readGolden(t, name+".json")
			got, err := json.MarshalIndent(checks.Run(s, checks.Config{Tokens: set}), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(goldenDir, name+".findings.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
				t.Errorf("findings differ from %s.findings.json (rerun with -update if the change is intended):\n%s", name, got)
			}
		})
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

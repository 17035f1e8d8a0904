package realworld_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/checks/corpus"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// The helpers below restate a few lines of engine/local's corpus tests
// (quiet, localGuard): a test package cannot import
// another's, and these tests left engine/local so that their minutes of
// Chromium run as a package of their own.

var quiet = slog.New(slog.DiscardHandler)

// localGuard is the local operator's guard: loopback dev servers allowed.
func localGuard() *egress.Guard {
	return egress.NewGuard(egress.Policy{AllowHTTP: true, AllowPrivate: true}, egress.StaticResolver{})
}

// pagesInFlight is how many page reviews run at once; each review runs its
// viewports concurrently too, and the pool bounds the captures.
const pagesInFlight = 3

// ratio scores as corpus.Report does.
var ratio = corpus.Ratio

// logMisses logs every false positive and false negative of rep.
func logMisses(t *testing.T, rep corpus.Report, got map[string][]design.Finding) {
	t.Helper()
	if m := rep.Misses(got); m != "" {
		t.Logf("misses:\n%s", m)
	}
}

// A labelled set of installed pages: the regression set (labels.json) or
// the held-out one (heldout.json).
const (
	regressionLabels = "labels.json"
	heldOutLabels    = "heldout.json"
)

// labelledSet is a label file: the directory its pages are read from,
// how they were labelled, and the pages with their expected findings.
type labelledSet struct {
	Root   string        `json:"root"`
	Method string        `json:"method,omitempty"`
	Pages  []corpus.Page `json:"pages"`
}

// loadSet reads testdata/name and skips t (or fails it under
// BASTION_REQUIRE_DEPS=1) when a page's package is not installed.
func loadSet(t *testing.T, name string) labelledSet {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var set labelledSet
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, p := range set.Pages {
		if _, err := os.Stat(filepath.Join(set.Root, p.File)); err != nil {
			testenv.Missing(t, "the Debian documentation packages of the real-world sets (scripts/deps.sh installs them): "+p.File)
		}
		if p.Clean && len(p.Expect) > 0 {
			t.Fatalf("%s: clean page %s expects findings", name, p.File)
		}
	}
	return set
}

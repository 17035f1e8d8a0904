package checks_test

import (
	"github.com/bastion-mcp/bastion/internal/testenv"
	"os"
	"testing"

	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/checks/corpus"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
)

// BenchmarkRun judges a saved dashboard snapshot with tokens.
func BenchmarkRun(b *testing.B) {
	c, err := corpus.Load(corpus.Dir())
	if err != nil {
		b.Fatal(err)
	}
	set, err := tokens.Parse(c.Tokens)
	if err != nil {
		b.Fatal(err)
	}
	s := readGolden(b, goldenName("clean-dashboard.html", design.Mobile)+".json")
	b.ReportAllocs()
	for b.Loop() {
		checks.Run(s, checks.Config{Tokens: set})
	}
}

// BenchmarkCollect measures Collect on a loaded corpus page in a warm tab
// (the page is loaded once; each iteration re-measures it).
func BenchmarkCollect(b *testing.B) {
	for _, page := range []string{"clean-dashboard.html", "clean-article.html"} {
		b.Run(page, func(b *testing.B) {
			br := newBrowser(b)
			base := serveCorpus(b, corpus.Dir())
			tb := br.newTab(b)
			defer tb.cancel()
			tb.snapshot(b, base+"/"+page, design.Mobile)
			for b.Loop() {
				if _, err := checks.Collect(tb.ctx, design.Mobile); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSnapshot measures a whole capture in a warm browser: navigate,
// wait for load and fonts, collect.
func BenchmarkSnapshot(b *testing.B) {
	br := newBrowser(b)
	base := serveCorpus(b, corpus.Dir())
	tb := br.newTab(b)
	defer tb.cancel()
	for b.Loop() {
		tb.snapshot(b, base+"/clean-landing.html", design.Mobile)
	}
}

// BenchmarkCollectRealPage measures Collect on a long real page nobody here
// wrote (Python's tutorial from Debian's python3-doc) at each viewport: a
// page of about 3,000 measured elements, where the collector's cost shows.
func BenchmarkCollectRealPage(b *testing.B) {
	const site, route = "/usr/share/doc/python3/html", "/tutorial/controlflow.html"
	if _, err := os.Stat(site + route); err != nil {
		testenv.Missing(b, "python3-doc (scripts/deps.sh installs it)")
	}
	br := newBrowser(b)
	base := serveCorpus(b, site)
	for _, vp := range design.Viewports() {
		b.Run(string(vp), func(b *testing.B) {
			tb := br.newTab(b)
			defer tb.cancel()
			tb.load(tb.ctx, b, base+route, vp)
			for b.Loop() {
				if _, err := checks.Collect(tb.ctx, vp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package checks_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// trickyControls names or fails to name controls in the ways the DOM alone
// misreads: text that is aria-hidden, invisible or not rendered, labels by
// reference, roles not named from content, shadow trees, image maps.
const trickyControls = `<!doctype html><html lang="en"><head><title>controls</title></head><body>
<button id="x"><span aria-hidden="true">×</span></button>
<button id="ok">Save</button>
<a id="hid" href="#a"><span style="visibility:hidden">gone</span></a>
<a id="none" href="#b"><span style="display:none">gone</span></a>
<a id="img" href="#c"><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="20" height="20"></a>
<a id="imgalt" href="#d"><img alt="Home" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="20" height="20"></a>
<a id="named" href="#e" aria-label="Close"></a>
<button id="byref" aria-labelledby="missing">Text</button>
<button id="byref2" aria-labelledby="lbl"></button><span id="lbl">Labelled</span>
<label>Name <input id="labelled"></label>
<input id="bare">
<input id="hidden" type="hidden">
<input id="img-input" type="image" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<select id="sel"><option>a</option></select>
<details><summary id="sum"></summary>x</details>
<div id="divbtn" role="button" tabindex="0"></div>
<div id="divbtn2" role="button" tabindex="0">Go</div>
<div id="slider" role="slider" tabindex="0" aria-valuenow="3">3</div>
<div id="ce" contenteditable="true"></div>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" usemap="#m" width="40" height="40"><map name="m"><area id="ar" href="#f" shape="rect" coords="0,0,20,20"></map>
<div id="host"></div>
<div aria-hidden="true"><button id="inhidden"></button></div>
<script>
  const r = document.getElementById('host').attachShadow({mode: 'open'});
  r.innerHTML = '<button id="shadow-bare"></button><button id="shadow-ok">Ok</button>';
</script>
` + "%LINKS%" + `</body></html>`

// TestUnnamedCandidatesMatchTheTree holds the candidate shortcut to what the
// whole accessibility tree says, on controls built to mislead it and on real
// documentation sites nobody here wrote.
func TestUnnamedCandidatesMatchTheTree(t *testing.T) {
	br := newBrowser(t)
	var links strings.Builder
	for i := range 60 {
		links.WriteString(`<p><a href="#l` + string(rune('a'+i%26)) + `">link text</a></p>`)
	}
	page := strings.Replace(trickyControls, "%LINKS%", links.String(), 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	urls := []string{srv.URL + "/"}
	for _, p := range []struct{ site, route string }{
		{"/usr/share/doc/python3/html", "/tutorial/controlflow.html"},
		{"/usr/share/doc/python3/html", "/index.html"},
		{"/usr/share/doc/git-doc", "/git.html"},
		{"/usr/share/doc/rust-doc/html", "/book/ch01-00-getting-started.html"},
	} {
		if _, err := os.Stat(p.site + p.route); err != nil {
			testenv.Missing(t, p.site+p.route+" (scripts/deps.sh installs the doc packages)")
			continue
		}
		urls = append(urls, serveCorpus(t, p.site)+p.route)
	}
	for _, u := range urls {
		for _, vp := range []design.Viewport{design.Mobile, design.Desktop} {
			tb := br.newTab(t)
			tb.load(tb.ctx, t, u, vp)
			fast, full, err := checks.UnnamedBothWays(tb.ctx)
			tb.cancel()
			if err != nil {
				t.Fatalf("%s @%s: %v", u, vp, err)
			}
			sel := func(us []checks.Unnamed) []string {
				var out []string
				for _, x := range us {
					out = append(out, x.Role+" "+x.Selector)
				}
				slices.Sort(out)
				return out
			}
			if a, b := sel(fast), sel(full); !slices.Equal(a, b) {
				t.Errorf("%s @%s: candidates found %v; the whole tree %v", u, vp, a, b)
			}
			if u == urls[0] && len(full) < 8 {
				t.Errorf("%s @%s: the tree found only %v unnamed; the page has at least 8", u, vp, sel(full))
			}
			t.Logf("%s @%s: %d unnamed", u, vp, len(full))
		}
	}
}

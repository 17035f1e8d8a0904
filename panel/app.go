package panel

import (
	_ "embed"
	"encoding/json"
	"strings"
)

// appHTML is the review panel as an MCP App (SEP-1865): one static page,
// the same for every review, that a host renders in a sandboxed iframe and
// feeds the result of design_review_get over its postMessage bridge.
//
//go:embed app.html
var appHTML string

// AppHTML returns the MCP App page. It carries no review data: the host
// sends the tool result to it after ui/initialize, so one resource serves
// every job and a host may cache it. It does carry the fact labels
// (factLabels, as inert JSON), so the app names facts as the file panel
// does from the one table.
//
// Its inline script is the only script bastion ships. It builds the DOM
// with textContent and setAttribute only (never innerHTML or a string
// template), so a page-derived string from the result stays text; it talks
// only to window.parent (tools/call and ui/* messages) and fetches nothing,
// which the resource's declared CSP (no connect or resource domains) holds
// the host to as well.
func AppHTML() string {
	labels := make(map[string][2]string, len(factLabels))
	for k, v := range factLabels {
		labels[k] = [2]string{v.label, v.unit}
	}
	// json.Marshal escapes <, > and &, so the data cannot end its script
	// element; map keys are sorted, so the page is the same every time. A
	// map of strings cannot fail to marshal.
	b, _ := json.Marshal(labels)
	return strings.Replace(appHTML, "<!--fact-labels-->", `<script type="application/json" id="fact-labels">`+string(b)+`</script>`, 1)
}

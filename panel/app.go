package panel

import _ "embed"

// appHTML is the review panel as an MCP App (SEP-1865): one static page,
// the same for every review, that a host renders in a sandboxed iframe and
// feeds the result of design_review_get over its postMessage bridge.
//
//go:embed app.html
var appHTML string

// AppHTML returns the MCP App page. It carries no review data: the host
// sends the tool result to it after ui/initialize, so one resource serves
// every job and a host may cache it.
//
// Its inline script is the only script bastion ships. It builds the DOM
// with textContent and setAttribute only (never innerHTML or a string
// template), so a page-derived string from the result stays text; it talks
// only to window.parent (tools/call and ui/* messages) and fetches nothing,
// which the resource's declared CSP (no connect or resource domains) holds
// the host to as well.
func AppHTML() string { return appHTML }

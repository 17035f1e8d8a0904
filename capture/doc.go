// Package capture drives headless Chromium to capture a page deterministically
// at a set of viewports.
//
// A Pool owns one Chromium process and reuses it across captures, at most
// Options.MaxConcurrent at a time (by default sized to the machine's cores
// and memory); the others wait in a bounded queue. A capture has no time
// budget of its own: its caller's deadline ends it, wherever it is. A
// browser that crashes is replaced and the capture that met the crash is
// retried once. Each capture runs in a fresh browser context (its own
// cookies, cache and storage) with the viewport's device metrics, reduced
// motion and an animation-freezing style sheet; it waits on events, never on
// fixed delays: the load event, document.fonts.ready, a scroll pass when
// something on the page loads lazily, every image's load or error, no
// request in flight, and a layout unchanged for two animation frames (each
// wait capped for a page that never gets there). Then it hands the live tab
// to the caller's measure function and takes a full-page PNG, unless the
// caller shoots the regions it needs itself (Target.NoScreenshot, Region).
//
// Tabs cost Chromium a renderer process start (0.3–1 s on a loaded 2-core
// machine) when opened and a few round trips when closed. With
// Options.Sessions the pool opens up to three tabs ahead of need while no
// capture runs, each a fresh browser context through its own proxy
// session, and closes a tab after its capture answered, freeing the slot
// only once the tab is gone.
//
// Invariants: the browser has exactly one way out, the egress proxy it is
// launched with (QUIC, non-proxied WebRTC UDP, DNS prefetch and background
// networking are off, and loopback is not bypassed); each route × viewport
// gets a fresh browser context, never one a page has used (a spare tab has
// only ever shown about:blank); every capture ends with its caller's ctx; page
// text reaches the caller only as data (health strings are length-capped and
// never interpreted).
package capture

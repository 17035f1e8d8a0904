// Package capture drives headless Chromium to capture a page deterministically
// at a set of viewports.
//
// A Pool owns one Chromium process and reuses it across captures, at most
// Options.MaxConcurrent at a time. A browser that crashes is replaced and the
// capture that met the crash is retried once. Each capture runs in a fresh
// browser context (its own cookies, cache and storage) with the viewport's
// device metrics, reduced motion and an animation-freezing style sheet; it
// waits for the load event, document.fonts.ready, a scroll pass that
// triggers lazy loading and a stable layout, then hands the live tab to the
// caller's measure function and takes a full-page PNG.
//
// Invariants: the browser has exactly one way out, the egress proxy it is
// launched with (QUIC, non-proxied WebRTC UDP, DNS prefetch and background
// networking are off, and loopback is not bypassed); each route × viewport
// gets a fresh browser context; every capture runs under a time budget; page
// text reaches the caller only as data (health strings are length-capped and
// never interpreted).
package capture

// Package capture drives headless Chromium to capture a page deterministically
// at a set of viewports.
//
// Invariants: the browser has exactly one way out, the egress proxy it is
// launched with (QUIC, non-proxied WebRTC UDP, DNS prefetch and background
// networking are off); each route × viewport gets a fresh browser context;
// every capture runs under a time budget.
package capture

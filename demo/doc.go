// Package demo is bastion's offline demo: an embedded sample site (a
// realistic pricing page in two revisions, the first with seeded design
// defects, the second fixing some of them) served over HTTPS on loopback,
// and a scripted agent that drives a `bastion stdio` child through the whole
// design-review loop with the Go SDK client.
//
// Invariants: the demo never judges anything itself: every finding, fix and
// recheck verdict it prints comes from the child's real browser and checks;
// the child reaches the site only through its egress guard (the stub host
// resolves to a public address, which is classified like any other, and only
// the final connect is redirected to loopback); nothing leaves the machine
// and no credential is needed.
package demo

// Package enginehttp serves bastion's engine over the HMAC-signed job API
// of the peer contract (§14): POST /jobs, GET and DELETE /jobs/{id}, GET
// /readyz, with results in the engine-result shape (§15), so a design-review
// server written for that API can hand its reviews to bastion unchanged.
//
// Invariants: every /jobs request is signed with its installation's secret
// (HMAC-SHA256 over timestamp.installation.body, milliseconds, ±300 s,
// compared in constant time) and each signature is accepted once; an
// unsigned, stale, replayed or wrongly signed request is 401 with one fixed
// body; the server holds no store handle: jobs are review.Service jobs of a
// principal per installation (tenant = installation id), so they are
// durable, per installation, and every target passes the Service's
// Authorizer (the egress guard's target policy and the installation's
// verified hosts); a result says what bastion measured and claims no model
// and no confidence.
package enginehttp

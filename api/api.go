// Package api holds the documents that describe bastion's HTTP APIs, embedded
// so the binary can serve them and tests can hold them against the code.
//
// Invariant: openapi.json documents exactly the routes package rest serves,
// with their methods, parameters and every status they can answer; rest's
// TestOpenAPIMatchesRoutes fails otherwise.
package api

import (
	"bytes"
	_ "embed"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the REST API's OpenAPI 3.1 document (JSON). The caller owns
// the returned slice.
func OpenAPI() []byte { return bytes.Clone(openAPI) }

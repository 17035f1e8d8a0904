package rest_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/api"
	"github.com/google/jsonschema-go/jsonschema"
)

// documented resolves api/openapi.json's component schema name as a JSON
// Schema (OpenAPI 3.1's schema dialect is 2020-12), its references to other
// components rewritten into $defs.
func documented(t testing.TB, name string) *jsonschema.Resolved {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatalf("api/openapi.json: %v", err)
	}
	defs := bytes.ReplaceAll(doc.Components.Schemas, []byte(`"#/components/schemas/`), []byte(`"#/$defs/`))
	root := `{"$schema":"https://json-schema.org/draft/2020-12/schema","$ref":"#/$defs/` + name + `","$defs":` + string(defs) + `}`
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(root), &s); err != nil {
		t.Fatalf("schema %s: %v", name, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("schema %s: %v", name, err)
	}
	return rs
}

// conforms fails unless r's body validates against the documented schema.
func (r resp) conforms(t testing.TB, schema string) resp {
	t.Helper()
	var v any
	if err := json.Unmarshal(r.raw, &v); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if err := documented(t, schema).Validate(v); err != nil {
		t.Fatalf("body does not match schema %s: %v\n%s", schema, err, r.raw)
	}
	return r
}

// TestDocumentedSchemasReject proves conforms can fail: the old wire's
// member names, and a box as Go field names, are not the documented shape.
func TestDocumentedSchemasReject(t *testing.T) {
	t.Parallel()
	good := `{"finding_id":"f_001","severity":"should_fix","bastion_severity":"major","kind":"contrast","dimension":"contrast",
		"title":"t","description":"d","route":"/","viewport":"mobile","viewports":["mobile"],"element_ref":"#cta","suggestion":null,
		"evidence_id":null,"confidence":null,"advisory":false,"facts":{"ratio":2.9},"box":{"x":1,"y":2,"w":3,"h":4}}`
	rs := documented(t, "Finding")
	var v any
	if err := json.Unmarshal([]byte(good), &v); err != nil {
		t.Fatal(err)
	}
	if err := rs.Validate(v); err != nil {
		t.Fatalf("a well-formed finding fails: %v", err)
	}
	for _, bad := range []struct{ from, to string }{
		{`"finding_id"`, `"id"`},
		{`"element_ref"`, `"selector"`},
		{`"suggestion"`, `"fix"`},
		{`"severity":"should_fix"`, `"severity":"major"`},
		{`{"x":1,"y":2,"w":3,"h":4}`, `{"X":1,"Y":2,"W":3,"H":4}`},
	} {
		var v any
		if err := json.Unmarshal([]byte(strings.Replace(good, bad.from, bad.to, 1)), &v); err != nil {
			t.Fatal(err)
		}
		if rs.Validate(v) == nil {
			t.Errorf("a finding with %s for %s validates", bad.to, bad.from)
		}
	}
}

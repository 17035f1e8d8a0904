package auth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

func TestMetadataPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		resource  string
		wantPaths []string
		wantURL   string
	}{
		{"https://b.example/mcp", []string{WellKnownPath, WellKnownPath + "/mcp"}, "https://b.example" + WellKnownPath + "/mcp"},
		{"https://b.example/", []string{WellKnownPath}, "https://b.example" + WellKnownPath},
		{"https://b.example", []string{WellKnownPath}, "https://b.example" + WellKnownPath},
		{"https://b.example:8443/a/b/", []string{WellKnownPath, WellKnownPath + "/a/b/"}, "https://b.example:8443" + WellKnownPath + "/a/b/"},
		{"http://127.0.0.1:7070/mcp?x=1", []string{WellKnownPath, WellKnownPath + "/mcp"}, "http://127.0.0.1:7070" + WellKnownPath + "/mcp"},
		{"/mcp", []string{WellKnownPath, WellKnownPath + "/mcp"}, ""},
	}
	for _, tt := range tests {
		if got := MetadataPaths(tt.resource); !slices.Equal(got, tt.wantPaths) {
			t.Errorf("MetadataPaths(%q) = %q, want %q", tt.resource, got, tt.wantPaths)
		}
		if got := MetadataURL(tt.resource); got != tt.wantURL {
			t.Errorf("MetadataURL(%q) = %q, want %q", tt.resource, got, tt.wantURL)
		}
	}
}

func TestMetadataHandler(t *testing.T) {
	t.Parallel()
	md := ProtectedResourceMetadata{
		Resource:              testAudience,
		AuthorizationServers:  []string{testIssuer},
		ResourceName:          "bastion design review",
		ResourceDocumentation: "https://bastion.example.test/docs",
	}
	mux := http.NewServeMux()
	h := MetadataHandler(md)
	for _, p := range MetadataPaths(md.Resource) {
		mux.Handle(p, h)
	}
	mux.Handle(WellKnownPath+"/", h) // a prefix mount: unknown suffixes must 404
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	get := func(method, path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	var bodies [][]byte
	for _, p := range []string{WellKnownPath, WellKnownPath + "/mcp"} {
		resp, body := get("GET", p)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s = %d %s", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET %s: no CORS header", p)
		}
		bodies = append(bodies, body)
	}
	if string(bodies[0]) != string(bodies[1]) {
		t.Error("the two metadata paths serve different documents")
	}
	var got map[string]any
	if err := json.Unmarshal(bodies[0], &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"resource":                 testAudience,
		"authorization_servers":    []any{testIssuer},
		"scopes_supported":         []any{"reviews:read", "reviews:write", "reviews:cancel", "targets:write"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "bastion design review",
		"resource_documentation":   "https://bastion.example.test/docs",
	}
	for k, v := range want {
		gb, _ := json.Marshal(got[k])
		wb, _ := json.Marshal(v)
		if string(gb) != string(wb) {
			t.Errorf("%s = %s, want %s", k, gb, wb)
		}
	}
	if len(got) != len(want) {
		t.Errorf("document has %d members, want %d: %s", len(got), len(want), bodies[0])
	}
	if resp, _ := get("GET", WellKnownPath+"/other"); resp.StatusCode != 404 {
		t.Errorf("GET /other suffix = %d, want 404", resp.StatusCode)
	}
	if resp, _ := get("POST", WellKnownPath); resp.StatusCode != 405 || resp.Header.Get("Allow") == "" {
		t.Errorf("POST = %d, want 405 with Allow", resp.StatusCode)
	}
	if resp, body := get("HEAD", WellKnownPath); resp.StatusCode != 200 || len(body) != 0 {
		t.Errorf("HEAD = %d with %d body bytes", resp.StatusCode, len(body))
	}
	if resp, _ := get("OPTIONS", WellKnownPath+"/mcp"); resp.StatusCode != 204 {
		t.Errorf("OPTIONS = %d, want 204", resp.StatusCode)
	}
}

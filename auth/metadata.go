package auth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/bastion-mcp/bastion/principal"
)

// WellKnownPath is RFC 9728's well-known suffix for protected resource
// metadata.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// ProtectedResourceMetadata is an RFC 9728 protected resource metadata
// document: what an MCP client fetches, after a 401, to learn which
// authorization server issues tokens for this resource.
type ProtectedResourceMetadata struct {
	// Resource is this resource's canonical URI, the same string as
	// JWTConfig.Audience.
	Resource string `json:"resource"`
	// AuthorizationServers lists issuer identifiers (RFC 8414) trusted here.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// JWKSURI is the resource's own signing keys (RFC 9728 §2), not the
	// authorization server's; bastion signs no responses, so usually empty.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// ScopesSupported defaults to principal.AllScopes() when nil.
	ScopesSupported []principal.Scope `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported defaults to ["header"], the only one bastion
	// accepts.
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
	ResourceDocumentation  string   `json:"resource_documentation,omitempty"`
	ResourcePolicyURI      string   `json:"resource_policy_uri,omitempty"`
	ResourceTOSURI         string   `json:"resource_tos_uri,omitempty"`
}

// MetadataPaths returns the paths at which the metadata of resource is
// served: the bare well-known path and, when resource has a path, the
// path-suffixed form RFC 9728 §3.1 defines ("https://h/mcp" →
// "/.well-known/oauth-protected-resource/mcp"). Clients try either. The
// resource's query, if any, plays no part.
func MetadataPaths(resource string) []string {
	paths := []string{WellKnownPath}
	if p := resourcePath(resource); p != "" {
		paths = append(paths, WellKnownPath+p)
	}
	return paths
}

// MetadataURL returns the absolute URL of resource's metadata to advertise
// in a challenge's resource_metadata: the path-suffixed form when resource
// has a path. It returns "" for a resource that is not an absolute URL.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + WellKnownPath + resourcePath(resource)
}

// resourcePath is resource's escaped path without a lone terminating "/".
func resourcePath(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	p := u.EscapedPath()
	if p == "/" {
		return ""
	}
	return p
}

// MetadataHandler serves md as JSON on the paths MetadataPaths(md.Resource)
// returns (mount it on both, or on a prefix: other paths get 404). The
// document is public and cacheable, and readable cross-origin so that
// browser-based MCP clients can discover the authorization server.
func MetadataHandler(md ProtectedResourceMetadata) http.Handler {
	if md.ScopesSupported == nil {
		md.ScopesSupported = principal.AllScopes()
	}
	if len(md.BearerMethodsSupported) == 0 {
		md.BearerMethodsSupported = []string{"header"}
	}
	body, err := json.MarshalIndent(md, "", "  ")
	if err != nil { // only strings and string slices: cannot happen
		body = []byte(`{}`)
	}
	body = append(body, '\n')
	paths := MetadataPaths(md.Resource)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(paths, r.URL.EscapedPath()) {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

package reviewmcp

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/bastion-mcp/bastion/schemas"
)

// catalogFile is schemas/mcp-tools.json.
type catalogFile struct {
	CatalogVersion string        `json:"catalog_version"`
	Tools          []catalogTool `json:"tools"`
}

// catalogTool is one tool as tools/list shows it.
type catalogTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	Annotations  json.RawMessage `json:"annotations"`
	Meta         json.RawMessage `json:"_meta"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

// catalog is the parsed catalog: each tool's schemas as served and as
// resolved for validation.
//
// A catalog is immutable once loadCatalog returns, and one is shared by every
// server of the process (see sharedCatalog): nothing may write to it, to a
// toolSchema, or to the bytes and schemas they hold. The served schemas go
// to the SDK as json.RawMessage, which it only reads, and validation builds
// its state per call.
type catalog struct {
	version string
	tools   map[string]*toolSchema
}

// toolSchema is one tool's schemas, parsed once. They are served as parsed
// values, not as the file's bytes: the SDK re-parses a schema given as
// bytes on every AddTool to check its type, and the stateless wire adds the
// tools once per request. TestCatalogMatchesLiveServer holds the served
// schemas to the file's.
type toolSchema struct {
	name     string
	in, out  *jsonschema.Schema
	resolved *jsonschema.Resolved
	walk     walker // over in
}

// sharedCatalog returns the process's one parse of the embedded catalog.
// The stateless 2026-07-28 wire builds a server per request, and parsing and
// resolving the schemas is most of that cost, so it is done once, on first
// use rather than at package init. The bytes are embedded, so the result,
// error included, can never change.
var sharedCatalog = sync.OnceValues(loadCatalog)

// loadCatalog parses the embedded catalog and resolves each input schema.
// Every tool toolDefs names must be in it.
func loadCatalog() (*catalog, error) {
	var f catalogFile
	if err := json.Unmarshal(schemas.MCPTools(), &f); err != nil {
		return nil, fmt.Errorf("schemas/mcp-tools.json: %w", err)
	}
	c := &catalog{version: f.CatalogVersion, tools: map[string]*toolSchema{}}
	for _, t := range f.Tools {
		ts := &toolSchema{name: t.Name}
		if err := json.Unmarshal(t.InputSchema, &ts.in); err != nil || ts.in == nil {
			return nil, fmt.Errorf("schemas/mcp-tools.json: %s: inputSchema: %v", t.Name, err)
		}
		r, err := ts.in.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("schemas/mcp-tools.json: %s: inputSchema: %w", t.Name, err)
		}
		ts.resolved = r
		if ts.walk, err = newWalker(ts.in); err != nil {
			return nil, fmt.Errorf("schemas/mcp-tools.json: %s: inputSchema: %w", t.Name, err)
		}
		if err := json.Unmarshal(t.OutputSchema, &ts.out); err != nil || ts.out == nil {
			return nil, fmt.Errorf("schemas/mcp-tools.json: %s: outputSchema: %v", t.Name, err)
		}
		if _, err := ts.out.Resolve(nil); err != nil {
			return nil, fmt.Errorf("schemas/mcp-tools.json: %s: outputSchema: %w", t.Name, err)
		}
		c.tools[t.Name] = ts
	}
	for _, d := range toolDefs() {
		if c.tools[d.name] == nil {
			return nil, fmt.Errorf("schemas/mcp-tools.json: no tool %s", d.name)
		}
	}
	return c, nil
}

package reviewmcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/reviewmcp"
)

var update = flag.Bool("update", false, "rewrite schemas/mcp-tools.json from the live tools/list")

var (
	catalogPath   = filepath.Join("..", "schemas", "mcp-tools.json")
	directoryPath = filepath.Join("..", "directory", "server.json")
	// dockerfilePath builds the OCI image server.json lists.
	dockerfilePath = filepath.Join("..", "deploy", "Dockerfile")
)

// liveCatalog lists the tools and the resources of a fresh server with the
// SDK client and returns them in the catalog file's shape, with the
// serverInfo version.
func liveCatalog(t *testing.T) ([]byte, *mcp.InitializeResult) {
	t.Helper()
	ctx := context.Background()
	srv := reviewmcp.NewServer(nil, reviewmcp.Options{Logger: quiet}) // tools/list never calls the service
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "catalog-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); ss.Wait() }()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	type tool struct {
		Name         string               `json:"name"`
		Title        string               `json:"title"`
		Description  string               `json:"description"`
		Annotations  *mcp.ToolAnnotations `json:"annotations"`
		Meta         mcp.Meta             `json:"_meta"`
		InputSchema  any                  `json:"inputSchema"`
		OutputSchema any                  `json:"outputSchema"`
	}
	doc := struct {
		CatalogVersion string          `json:"catalog_version"`
		Tools          []tool          `json:"tools"`
		Resources      []*mcp.Resource `json:"resources"`
	}{CatalogVersion: cs.InitializeResult().ServerInfo.Version}
	for _, tl := range res.Tools {
		doc.Tools = append(doc.Tools, tool{tl.Name, tl.Title, tl.Description, tl.Annotations, tl.Meta, tl.InputSchema, tl.OutputSchema})
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc.Resources = rl.Resources
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return canonical(t, b), cs.InitializeResult()
}

// canonical re-encodes JSON with sorted keys and two-space indentation.
func canonical(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestCatalogMatchesLiveServer holds schemas/mcp-tools.json to what
// tools/list serves (names, titles, descriptions, annotations, _meta and
// both schemas) and to what resources/list serves (the MCP App with its
// _meta.ui), byte for byte after canonical JSON. Run with -update after
// changing a tool's text in code.
func TestCatalogMatchesLiveServer(t *testing.T) {
	live, _ := liveCatalog(t)
	if *update {
		if err := os.WriteFile(catalogPath, live, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", catalogPath)
	}
	file, err := os.ReadFile(catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := canonical(t, file); !bytes.Equal(got, live) {
		t.Errorf("%s differs from the live tools/list; run go test ./reviewmcp -run TestCatalogMatchesLiveServer -update\n%s",
			catalogPath, firstDiff(got, live))
	}
}

func firstDiff(a, b []byte) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	lo := max(0, n-120)
	return "file: …" + string(a[lo:min(len(a), n+120)]) + "\nlive: …" + string(b[lo:min(len(b), n+120)])
}

// TestVersionsAgree pins serverInfo, the catalog and the MCP registry entry
// to reviewmcp.Version, and the registry entry's tool list to the live one.
func TestVersionsAgree(t *testing.T) {
	_, init := liveCatalog(t)
	if v := init.ServerInfo.Version; v != reviewmcp.Version {
		t.Errorf("serverInfo.version %q, want %q", v, reviewmcp.Version)
	}
	if n := init.ServerInfo.Name; n != reviewmcp.ServerName {
		t.Errorf("serverInfo.name %q, want %q", n, reviewmcp.ServerName)
	}
	var cat struct {
		CatalogVersion string `json:"catalog_version"`
		Tools          []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	b, err := os.ReadFile(catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	if cat.CatalogVersion != reviewmcp.Version {
		t.Errorf("catalog_version %q, want %q", cat.CatalogVersion, reviewmcp.Version)
	}
	var names []string
	for _, tl := range cat.Tools {
		names = append(names, tl.Name)
	}

	var dir struct {
		Schema   string `json:"$schema"`
		Name     string `json:"name"`
		Version  string `json:"version"`
		Packages []struct {
			Identifier string `json:"identifier"`
			Transport  struct {
				Type string `json:"type"`
			} `json:"transport"`
		} `json:"packages"`
		Meta map[string]struct {
			Tools     []string `json:"tools"`
			Resources []string `json:"resources"`
		} `json:"_meta"`
	}
	b, err = os.ReadFile(directoryPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dir); err != nil {
		t.Fatal(err)
	}
	if dir.Name != reviewmcp.ServerName || dir.Version != reviewmcp.Version {
		t.Errorf("server.json name %q version %q, want %q %q", dir.Name, dir.Version, reviewmcp.ServerName, reviewmcp.Version)
	}
	if len(dir.Packages) == 0 || dir.Packages[0].Identifier != "ghcr.io/bastion-mcp/bastion:"+reviewmcp.Version || dir.Packages[0].Transport.Type != "stdio" {
		t.Errorf("server.json packages %+v, want the stdio image tagged %s", dir.Packages, reviewmcp.Version)
	}
	// The registry accepts an OCI package only if the image's label names
	// the server: the Dockerfile that builds the listed image must say so.
	df, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	if label := `io.modelcontextprotocol.server.name="` + dir.Name + `"`; !bytes.Contains(df, []byte("LABEL "+label)) && !bytes.Contains(df, []byte(" "+label)) {
		t.Errorf("deploy/Dockerfile has no %s label", label)
	}
	provided := dir.Meta["io.modelcontextprotocol.registry/publisher-provided"]
	got := slices.Sorted(slices.Values(provided.Tools))
	if slices.Sort(names); !slices.Equal(got, names) {
		t.Errorf("server.json tools %v, live %v", got, names)
	}
	var uris []string
	for _, r := range cat.Resources {
		uris = append(uris, r.URI)
	}
	if !slices.Equal(provided.Resources, uris) || !slices.Equal(uris, []string{reviewmcp.AppURI}) {
		t.Errorf("server.json resources %v, catalog %v, want [%s]", provided.Resources, uris, reviewmcp.AppURI)
	}
}

// TestAnnotationsFromTheTruth pins what each tool claims about itself:
// only the reads are read-only, only cancel is destructive, only the
// tools that capture a target touch the open world.
func TestAnnotationsFromTheTruth(t *testing.T) {
	live, _ := liveCatalog(t)
	var cat struct {
		Tools []struct {
			Name        string              `json:"name"`
			Annotations mcp.ToolAnnotations `json:"annotations"`
			Meta        map[string]any      `json:"_meta"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(live, &cat); err != nil {
		t.Fatal(err)
	}
	type want struct{ readOnly, destructive, idempotent, openWorld, metered bool }
	wants := map[string]want{
		reviewmcp.ToolReview:      {false, false, true, true, true},
		reviewmcp.ToolGet:         {true, false, true, false, false},
		reviewmcp.ToolRecheck:     {false, false, true, true, true},
		reviewmcp.ToolCancel:      {false, true, true, false, false},
		reviewmcp.ToolPanelAction: {true, false, true, false, false},
	}
	if len(cat.Tools) != len(wants) {
		t.Fatalf("%d tools, want %d", len(cat.Tools), len(wants))
	}
	for _, tl := range cat.Tools {
		w, ok := wants[tl.Name]
		a := tl.Annotations
		if !ok || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: unexpected tool or unset hints %+v", tl.Name, a)
			continue
		}
		got := want{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint, tl.Meta["io.github.bastion-mcp/metered"] == true}
		if diff := cmp.Diff(w, got, cmp.AllowUnexported(want{})); diff != "" {
			t.Errorf("%s: annotations (-want +got):\n%s", tl.Name, diff)
		}
	}
}

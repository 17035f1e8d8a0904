package panel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// factKeysWritten reads the checks' source for every fact key they write:
// the string keys of design.Facts literals and of assignments to a fact
// map. Reading the source rather than a list keeps the test true when a
// check gains a fact.
func factKeysWritten(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no checks source in %s: %v", dir, err)
	}
	var keys []string
	add := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if k, err := strconv.Unquote(lit.Value); err == nil && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Facts" {
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							add(kv.Key)
						}
					}
				}
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					if ix, ok := l.(*ast.IndexExpr); ok {
						if id, ok := ix.X.(*ast.Ident); ok && (id.Name == "f" || id.Name == "facts") {
							add(ix.Index)
						}
					}
				}
			}
			return true
		})
	}
	slices.Sort(keys)
	return keys
}

// TestEveryFactHasALabel: a reader of the panel or of the MCP App sees
// words and units, never a key like font_size_px.
func TestEveryFactHasALabel(t *testing.T) {
	keys := factKeysWritten(t, filepath.Join("..", "checks"))
	if len(keys) < 20 {
		t.Fatalf("found only %d fact keys in the checks (%v): the source scan is broken", len(keys), keys)
	}
	for _, k := range keys {
		if _, ok := factLabels[k]; !ok {
			t.Errorf("fact %q has no label in factLabels", k)
		}
	}
}

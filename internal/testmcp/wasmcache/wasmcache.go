// Package wasmcache gives tests a wazero compilation cache that already
// holds a module's compiled code.
//
// A wasm upstream compiles its module when it is made. For the test server
// that takes seconds on an idle machine and ten times as long on a loaded
// two-core CI runner, where it once ate a whole test's deadline. Compiling
// once in TestMain, before any deadline runs, leaves the tests only the
// instantiation they mean to measure. The compile goes through upstream.New
// itself, so the cached code is exactly what the tests' upstreams look up.
package wasmcache

import (
	"context"
	"os"
	"path/filepath"

	"github.com/tetratelabs/wazero"

	"github.com/bastion-mcp/bastion/upstream"
)

// Warm returns a compilation cache under the system's temporary directory,
// in the subdirectory name (so runs of the same test binary share it), or
// in memory when that cannot be made, holding the compiled module at path.
func Warm(name, path string) (wazero.CompilationCache, error) {
	cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(os.TempDir(), name))
	if err != nil {
		cache = wazero.NewCompilationCache()
	}
	c, err := upstream.New(context.Background(), upstream.Spec{Name: "warm", Kind: upstream.Wasm, Module: path}, upstream.Deps{WasmCache: cache})
	if err != nil {
		return cache, err
	}
	return cache, c.Close()
}

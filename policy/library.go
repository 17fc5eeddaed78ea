package policy

import (
	"embed"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The bundled library: one package per rule under driverguard.lib, each with its tests.
//
//go:embed library/*.rego
var libraryFS embed.FS

// LibraryNamespace is the package namespace of the bundled library; user modules may not
// declare packages in it.
const LibraryNamespace = "driverguard.lib"

// bundledPrefix names bundled files in messages and test results.
const bundledPrefix = "bundled:"

// library parses the embedded modules once: the policies, and the tests and fixtures
// (*_test.rego) that only `policy test` and `go test` load. The compiler copies modules, so
// the parsed modules are shared read-only by every compilation.
var library = sync.OnceValues(func() (*libraryModules, error) {
	lib := &libraryModules{policies: map[string]*ast.Module{}, tests: map[string]*ast.Module{}}
	err := fs.WalkDir(libraryFS, "library", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := libraryFS.ReadFile(p)
		if err != nil {
			return err
		}
		name := bundledPrefix + path.Base(p)
		m, err := ast.ParseModuleWithOpts(name, string(src), parserOptions)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, "_test.rego") {
			lib.tests[name] = m
		} else {
			lib.policies[name] = m
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return lib, nil
})

type libraryModules struct {
	policies map[string]*ast.Module
	tests    map[string]*ast.Module
}

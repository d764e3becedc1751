// Package shape measures the shape of the library code of this
// repository: how long its functions are, and which of a package's files
// call each other both ways. Its tests keep both small.
package shape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pacehttp/pace/internal/onecopy"
)

// LongFuncs returns "path:name" of each function and method in files
// longer than max lines, signature and closing brace included.
func LongFuncs(files []onecopy.File, max int) []string {
	var long []string
	for _, f := range files {
		for _, d := range f.AST.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := f.Fset.Position(fd.End()).Line - f.Fset.Position(fd.Pos()).Line + 1
			if n > max {
				long = append(long, f.Path+":"+fd.Name.Name)
			}
		}
	}
	return long
}

// BothWays returns the pairs "a.go b.go" of the non-test files in dir (one
// package) where a function or method of each calls one declared in the
// other. Calls are resolved by type-checking the package alone: a call
// through an interface or a value of another package's type resolves to
// nothing, so only direct calls between the package's own functions count.
func BothWays(dir string) ([]string, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check(dir, fset, files, info) // imported names are missing: their errors are expected
	calls := map[[2]string]bool{}
	for _, f := range files {
		from := filepath.Base(fset.Position(f.Pos()).Filename)
		for id, obj := range info.Uses {
			fn, ok := obj.(*types.Func)
			if !ok || fn.Pkg() != pkg || id.Pos() < f.FileStart || id.Pos() > f.FileEnd {
				continue
			}
			if to := filepath.Base(fset.Position(fn.Pos()).Filename); to != from {
				calls[[2]string{from, to}] = true
			}
		}
	}
	var pairs []string
	for c := range calls {
		if c[0] < c[1] && calls[[2]string{c[1], c[0]}] {
			pairs = append(pairs, c[0]+" "+c[1])
		}
	}
	sort.Strings(pairs)
	return pairs, nil
}

// emptyImporter imports every package as an empty one, so that a package
// is type-checked alone.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
}

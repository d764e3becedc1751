// Package apicount counts the exported identifiers of a Go package as
// `go doc -all` lists them: constants, variables, functions, types, methods,
// struct fields and interface methods. Its test holds the root package of
// pace to a bound, so that the public API does not grow unnoticed.
package apicount

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
)

// Names returns the exported identifiers of the non-test Go package in dir,
// sorted, each qualified by its type when it has one ("Transport.Base",
// "Keyed.Wait"). It returns an error if the package cannot be parsed.
func Names(dir string) ([]string, error) {
	bp, err := build.ImportDir(dir, 0) // the files this platform builds, as go doc reads them
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, bp.ImportPath)
	if err != nil {
		return nil, err
	}
	names := values(d.Consts)
	names = append(names, values(d.Vars)...)
	for _, f := range d.Funcs {
		names = append(names, f.Name)
	}
	for _, t := range d.Types {
		names = append(names, t.Name)
		names = append(names, values(t.Consts)...)
		names = append(names, values(t.Vars)...)
		for _, f := range t.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range t.Methods {
			names = append(names, t.Name+"."+m.Name)
		}
		names = append(names, members(t)...)
	}
	sort.Strings(names)
	return names, nil
}

// values returns the exported names declared by decls.
func values(decls []*doc.Value) []string {
	var names []string
	for _, v := range decls {
		for _, n := range v.Names {
			if token.IsExported(n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// members returns the exported fields of a struct type, or the exported
// methods of an interface type, as "Type.Name".
func members(t *doc.Type) []string {
	var names []string
	for _, spec := range t.Decl.Specs {
		ts, ok := spec.(*ast.TypeSpec)
		if !ok || ts.Name.Name != t.Name {
			continue
		}
		var list *ast.FieldList
		switch x := ts.Type.(type) {
		case *ast.StructType:
			list = x.Fields
		case *ast.InterfaceType:
			list = x.Methods
		}
		if list == nil {
			continue
		}
		for _, f := range list.List {
			for _, n := range f.Names {
				if n.IsExported() {
					names = append(names, t.Name+"."+n.Name)
				}
			}
			if len(f.Names) == 0 { // an embedded field or interface
				if id := TypeName(f.Type); id != "" && token.IsExported(id) {
					names = append(names, t.Name+"."+id)
				}
			}
		}
	}
	return names
}

// TypeName returns the name of a type expression T, *T, pkg.T or *pkg.T,
// or "" for any other.
func TypeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return TypeName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

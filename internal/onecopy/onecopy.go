// Package onecopy finds, in the library code of this repository (no tests,
// examples or benchmarks), the places that implement a rule which must
// live once. Its test keeps each shared helper in one place: a second
// drain, a second config-error constructor, a second list of idempotent
// methods comes back only with a failing test.
package onecopy

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/pacehttp/pace/internal/apicount"
)

// File is one parsed library file; Path is relative to the root walked.
type File struct {
	Path string
	Fset *token.FileSet
	AST  *ast.File
}

// skipped are the directories that hold no library code.
var skipped = map[string]bool{"examples": true, "bench": true, "testdata": true, "faulttest": true, ".git": true}

// Library parses the non-test Go files below root, outside examples,
// benchmarks, test data and test-only internal packages.
func Library(root string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipped[d.Name()] || rel == "internal/testhttp" || rel == "internal/realserver" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, File{Path: rel, Fset: fset, AST: f})
		return nil
	})
	return files, err
}

// Dir returns the directory of f's path, "." for the root package.
func (f File) Dir() string { return filepath.ToSlash(filepath.Dir(f.Path)) }

// Pos returns "path:line" of n.
func (f File) Pos(n ast.Node) string {
	return f.Path + ":" + itoa(f.Fset.Position(n.Pos()).Line)
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for n >= 10 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	i--
	b[i] = byte('0' + n)
	return string(b[i:])
}

// Calls returns the places in files that call pkg.name (pkg as imported,
// e.g. "io", "CopyN") with first argument first ("io.Discard"), or with any
// first argument when first is "".
func Calls(files []File, pkg, name, first string) []string {
	var at []string
	for _, f := range files {
		ast.Inspect(f.AST, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || !isSel(c.Fun, pkg, name) {
				return true
			}
			if first == "" || (len(c.Args) > 0 && isSel(c.Args[0], strings.Split(first, ".")[0], strings.Split(first, ".")[1])) {
				at = append(at, f.Pos(c))
			}
			return true
		})
	}
	return at
}

func isSel(e ast.Expr, pkg, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// Constructors returns the functions in files whose whole body returns a
// composite literal of a type named typ (of any package), such as
// func configErr(...) error { return &ConfigError{...} }.
func Constructors(files []File, typ string) []string {
	var at []string
	for _, f := range files {
		for _, d := range f.AST.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || len(fd.Body.List) != 1 {
				continue
			}
			ret, ok := fd.Body.List[0].(*ast.ReturnStmt)
			if !ok || len(ret.Results) != 1 {
				continue
			}
			e := ret.Results[0]
			if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
				e = u.X
			}
			if cl, ok := e.(*ast.CompositeLit); ok && apicount.TypeName(cl.Type) == typ {
				at = append(at, f.Path+":"+fd.Name.Name)
			}
		}
	}
	return at
}

// Lists returns the case clauses and composite literals in files that
// list every one of values (selector expressions such as
// "http.MethodGet").
func Lists(files []File, values ...string) []string {
	var at []string
	for _, f := range files {
		ast.Inspect(f.AST, func(n ast.Node) bool {
			var list []ast.Expr
			switch x := n.(type) {
			case *ast.CaseClause:
				list = x.List
			case *ast.CompositeLit:
				list = x.Elts
			default:
				return true
			}
			listed := map[string]bool{}
			for _, e := range list {
				if s, ok := e.(*ast.SelectorExpr); ok {
					if id, ok := s.X.(*ast.Ident); ok {
						listed[id.Name+"."+s.Sel.Name] = true
					}
				}
			}
			for _, v := range values {
				if !listed[v] {
					return true
				}
			}
			at = append(at, f.Pos(n))
			return true
		})
	}
	return at
}

// StringConsts returns, for each string value declared as a constant in
// files and accepted by keep, the directories (packages) declaring it.
func StringConsts(files []File, keep func(string) bool) map[string][]string {
	dirs := map[string][]string{}
	for _, f := range files {
		for _, d := range f.AST.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					s := strings.Trim(lit.Value, "\"`")
					if keep(s) && !slicesContains(dirs[s], f.Dir()) {
						dirs[s] = append(dirs[s], f.Dir())
					}
				}
			}
		}
	}
	return dirs
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// FuncCalls returns the places in files that call the function name of
// their own package.
func FuncCalls(files []File, name string) []string {
	var at []string
	for _, f := range files {
		ast.Inspect(f.AST, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == name {
					at = append(at, f.Pos(c))
				}
			}
			return true
		})
	}
	return at
}

// SameMethods returns, for the methods named in names declared in the
// package in dir, those that two or more types declare with the same
// parameters and body (the receiver's name aside), as "name: T1 T2".
func SameMethods(files []File, dir string, names ...string) []string {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	byText := map[string][]string{}
	var order []string
	for _, f := range files {
		if f.Dir() != dir {
			continue
		}
		for _, d := range f.AST.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Body == nil || !want[fd.Name.Name] {
				continue
			}
			recv := fd.Recv.List[0]
			text := fd.Name.Name + ":" + source(f.Fset, fd.Type) + source(f.Fset, fd.Body)
			if len(recv.Names) == 1 {
				text = renameWord(text, recv.Names[0].Name, "_")
			}
			if byText[text] == nil {
				order = append(order, text)
			}
			byText[text] = append(byText[text], apicount.TypeName(recv.Type))
		}
	}
	var out []string
	for _, text := range order {
		if ts := byText[text]; len(ts) > 1 {
			out = append(out, text[:strings.IndexByte(text, ':')]+": "+strings.Join(ts, " "))
		}
	}
	return out
}

func source(fset *token.FileSet, n ast.Node) string {
	var b strings.Builder
	_ = printer.Fprint(&b, fset, n)
	return b.String()
}

// renameWord replaces the identifier old in s by new, whole words only.
func renameWord(s, old, new string) string {
	isWord := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], old) && (i == 0 || !isWord(s[i-1])) && (i+len(old) == len(s) || !isWord(s[i+len(old)])) {
			b.WriteString(new)
			i += len(old)
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// Package prose measures the sentences of the library's documentation:
// its doc comments and README.md. A test holds the figures to a bound, so
// that the prose only gets shorter.
package prose

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Figures are what Measure found: the number of sentences, their median
// length in words, and the share of sentences over 30 words.
type Figures struct {
	Sentences int
	Median    int
	Over30    float64
}

// skipDir reports whether the folder rel of the repository holds no
// library documentation: examples, benchmarks, test helpers, test data.
func skipDir(rel string) bool {
	for _, p := range []string{"examples", "bench", "testdata", "internal/realserver", "internal/testhttp", ".git", "docs"} {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// A Doc is one doc comment, or the prose of a Markdown file: its text and
// where it starts ("path:line", the path relative to root).
type Doc struct {
	Pos  string
	Text string
}

// DocText returns the text of every doc comment (package, declarations,
// fields) of the non-test Go files below root, one comment a string.
func DocText(root string) ([]string, error) {
	ds, err := DocComments(root)
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Text
	}
	return out, err
}

// DocComments is [DocText] with each comment's position.
func DocComments(root string) ([]Doc, error) {
	var out []Doc
	fs := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && skipDir(filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fs, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var g *ast.CommentGroup
			switch n := n.(type) {
			case *ast.File:
				g = n.Doc
			case *ast.FuncDecl:
				g = n.Doc
			case *ast.GenDecl:
				g = n.Doc
			case *ast.TypeSpec:
				g = n.Doc
			case *ast.ValueSpec:
				g = n.Doc
			case *ast.Field:
				g = n.Doc
			}
			if g != nil {
				pos := fs.Position(g.Pos())
				out = append(out, Doc{Pos: filepath.ToSlash(rel) + ":" + strconv.Itoa(pos.Line), Text: g.Text()})
			}
			return true
		})
		return nil
	})
	return out, err
}

// MarkdownText returns the prose of a Markdown file: without code blocks,
// tables, headings and inline code.
func MarkdownText(b []byte) string {
	var keep []string
	fenced := false
	for _, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```"):
			fenced = !fenced
		case fenced, strings.HasPrefix(t, "|"), strings.HasPrefix(t, "#"):
		default:
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

var (
	indented = regexp.MustCompile(`(?m)^(\t| {2,}).*$`) // code in a doc comment, list items' continuations aside
	codeSpan = regexp.MustCompile("`[^`]*`")
	sentEnd  = regexp.MustCompile(`[.!?](\s+|$)|\n\s*\n|\n\s*[-*] `)
	bullet   = regexp.MustCompile(`^[-*] `)
)

// Sentences splits text into sentences: at a full stop, question or
// exclamation mark followed by space, at a blank line and at a list item.
// Code (indented lines, code spans) is left out.
func Sentences(text string) []string {
	text = indented.ReplaceAllString(text, "")
	text = codeSpan.ReplaceAllString(text, "x")
	var out []string
	for _, s := range sentEnd.Split(text, -1) {
		if s = bullet.ReplaceAllString(strings.TrimSpace(s), ""); len(strings.Fields(s)) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// A Long is a sentence over 30 words, where it is and its length.
type Long struct {
	Pos   string
	Words int
	Text  string
}

// Longest returns the sentences of docs over 30 words, longest first.
func Longest(docs []Doc) []Long {
	var out []Long
	for _, d := range docs {
		for _, s := range Sentences(d.Text) {
			if w := len(strings.Fields(s)); w > 30 {
				out = append(out, Long{Pos: d.Pos, Words: w, Text: s})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Long) int { return b.Words - a.Words })
	return out
}

// Measure returns the figures of the sentences of texts.
func Measure(texts []string) Figures {
	var n []int
	for _, t := range texts {
		for _, s := range Sentences(t) {
			n = append(n, len(strings.Fields(s)))
		}
	}
	if len(n) == 0 {
		return Figures{}
	}
	slices.Sort(n)
	over := 0
	for _, w := range n {
		if w > 30 {
			over++
		}
	}
	return Figures{Sentences: len(n), Median: n[len(n)/2], Over30: float64(over) / float64(len(n))}
}

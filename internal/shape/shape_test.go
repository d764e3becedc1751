package shape

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/pacehttp/pace/internal/onecopy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNoLongFunction: no library function is longer than 60 lines, as
// x/time/rate's reserveN (45) and wait stay short.
func TestNoLongFunction(t *testing.T) {
	files, err := onecopy.Library("../..")
	require.NoError(t, err)
	assert.Empty(t, LongFuncs(files, 60))
}

// TestLongFuncsCounts: a function of 61 lines is long, one of 60 is not.
func TestLongFuncsCounts(t *testing.T) {
	dir := t.TempDir()
	body := func(name string, lines int) string {
		return "func " + name + "() {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	src := "package p\n\n" + body("ok", 60) + body("long", 61)
	require.NoError(t, writeFile(filepath.Join(dir, "p.go"), src))
	files, err := onecopy.Library(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"p.go:long"}, LongFuncs(files, 60))
}

// TestNoFilesCallingBothWays: within each package of the library, calls
// between two files go one way only, so that a file reads from the top
// down: the caller's file before the callee's.
func TestNoFilesCallingBothWays(t *testing.T) {
	files, err := onecopy.Library("../..")
	require.NoError(t, err)
	dirs := map[string]bool{}
	for _, f := range files {
		dirs[f.Dir()] = true
	}
	for dir := range dirs {
		pairs, err := BothWays(filepath.Join("../..", dir))
		require.NoError(t, err)
		assert.Empty(t, pairs, "package %s", dir)
	}
}

// TestBothWaysFindsAPair: a.go calling b.go and back is a pair; a call
// through an interface is no call.
func TestBothWaysFindsAPair(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writeFile(filepath.Join(dir, "a.go"), "package p\n\nimport \"io\"\n\nfunc a() { b() }\n\nfunc c(r io.Reader) { var w waiter; w.Wait() }\n"))
	require.NoError(t, writeFile(filepath.Join(dir, "b.go"), "package p\n\nfunc b() {}\n\nfunc d() { a() }\n"))
	require.NoError(t, writeFile(filepath.Join(dir, "c.go"), "package p\n\ntype waiter interface{ Wait() }\n\ntype k struct{}\n\nfunc (k) Wait() { b() }\n"))
	pairs, err := BothWays(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.go b.go"}, pairs)
}

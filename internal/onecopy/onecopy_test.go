package onecopy

import (
	"go/ast"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// paths drops the line numbers of "path:line" places.
func paths(at []string) []string {
	var ps []string
	for _, a := range at {
		ps = append(ps, a[:strings.LastIndexByte(a, ':')])
	}
	return ps
}

func library(t *testing.T) []File {
	t.Helper()
	files, err := Library("../..")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// TestOneDrain: only internal/retryrule drains a body before closing it.
func TestOneDrain(t *testing.T) {
	files := library(t)
	var at []string
	at = append(at, Calls(files, "io", "CopyN", "io.Discard")...)
	at = append(at, Calls(files, "io", "Copy", "io.Discard")...)
	assert.Equal(t, []string{"internal/retryrule/retryrule.go"}, paths(at))
}

// TestOneConfigErrorConstructor: the root package's configErr is the only
// shorthand for a *pace.ConfigError; the other packages build the root's
// type themselves, so errors.As(err, new(*pace.ConfigError)) sees them all.
func TestOneConfigErrorConstructor(t *testing.T) {
	assert.Equal(t, []string{"errors.go:configErr"}, Constructors(library(t), "ConfigError"))
}

// TestOneIdempotentMethodList: RFC 9110 §9.2.2's idempotent methods are
// listed once, in internal/retryrule (the root and batch each had a copy).
func TestOneIdempotentMethodList(t *testing.T) {
	at := Lists(library(t), "http.MethodGet", "http.MethodPut", "http.MethodDelete")
	assert.Equal(t, []string{"internal/retryrule/retryrule.go"}, paths(at))
}

// TestOneHeaderName: a header name is declared as a constant in one
// package only; names two packages share live in internal/hdr.
func TestOneHeaderName(t *testing.T) {
	header := regexp.MustCompile(`^[A-Z][a-z0-9]*(-[A-Z][a-z0-9]*)+$|^Ratelimit$`)
	for name, dirs := range StringConsts(library(t), header.MatchString) {
		assert.Len(t, dirs, 1, "header %q declared in %v", name, dirs)
	}
	for _, name := range []string{"Retry-After", "Ratelimit", "Ratelimit-Policy", "Idempotency-Key", "X-Idempotency-Key"} {
		dirs := StringConsts(library(t), func(s string) bool { return s == name })[name]
		assert.Equal(t, []string{"internal/hdr"}, dirs, "%s", name)
	}
}

// TestOneRetryableStatusList: the default retryable statuses are listed in
// internal/retryrule only (batch kept its own rule beside the root's).
func TestOneRetryableStatusList(t *testing.T) {
	at := Lists(library(t), "http.StatusRequestTimeout", "http.StatusServiceUnavailable", "http.StatusGatewayTimeout")
	assert.Equal(t, []string{"internal/retryrule/retryrule.go", "internal/retryrule/retryrule.go"}, paths(at))
}

// TestOneQuotaFamilyLoop: the quota header families are read in one loop,
// quotaHints, for the delay (serverDelay) and for the pace (serverQuota),
// which each had a loop of their own.
func TestOneQuotaFamilyLoop(t *testing.T) {
	files := library(t)
	for _, name := range []string{"familyHint", "shopifyHint"} {
		assert.Equal(t, []string{"ratelimitfields.go"}, paths(FuncCalls(files, name)), name)
		assert.Len(t, FuncCalls(files, name), 1, name)
	}
}

// TestAlgorithmsShareNoMethodCopies: no two algorithms of the root package
// declare the same method with the same body: what the window limits
// agree on lives once, in their embedded window, and waitBound has one
// default (the fixed window, sliding log and sliding counter each had
// their own no-op resume and relax, their own binds, interval, maxN,
// waitBound, core, parts and params).
func TestAlgorithmsShareNoMethodCopies(t *testing.T) {
	methods := []string{"earliest", "book", "unbook", "depart", "relax", "resume", "idle", "span", "binds",
		"interval", "maxN", "quota", "waitBound", "core", "parts", "params", "String"}
	assert.Empty(t, SameMethods(library(t), ".", methods...))
}

// TestOneStructuredListWalk: the RateLimit and RateLimit-Policy parsers
// share one walk over the List's named members (namedItems), where each
// had its own.
func TestOneStructuredListWalk(t *testing.T) {
	at := FuncCalls(library(t), "parseSFList")
	assert.Len(t, at, 1)
	assert.Equal(t, []string{"ratelimitfields.go"}, paths(at))
}

// TestOneCeilDiv: ⌈a/b⌉ is internal/intmath's CeilDiv; the root and
// redislimit each had a copy.
func TestOneCeilDiv(t *testing.T) {
	var at []string
	for _, f := range library(t) {
		for _, d := range f.AST.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.EqualFold(fd.Name.Name, "ceilDiv") {
				at = append(at, f.Path+":"+fd.Name.Name)
			}
		}
	}
	assert.Equal(t, []string{"internal/intmath/intmath.go:CeilDiv"}, at)
}

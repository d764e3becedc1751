package redact

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// TestURL: user information, query and fragment are dropped; scheme, host,
// port and path kept.
func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:PASS@api.example:8443/v1/items?api_key=Q#frag": "https://api.example:8443/v1/items",
		"http://user:***@127.0.0.1:1/x?api_key=QUERYSECRET":          "http://127.0.0.1:1/x",
		"http://api.example":           "http://api.example",
		"/relative/path?token=T":       "/relative/path",
		"http://api.example/a%20b?x=1": "http://api.example/a%20b",
	} {
		assert.Equal(t, want, URL(mustParse(t, in), false), in)
	}
	assert.Empty(t, URL(nil, false))
}

// TestErrorText: the URL of every *url.Error in the tree is redacted,
// however deep it is wrapped, and the rest of the text is kept.
func TestErrorText(t *testing.T) {
	ue := &url.Error{Op: "Put", URL: "http://user:***@127.0.0.1:1/x?api_key=QUERYSECRET", Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}
	want := `Put "http://127.0.0.1:1/x": dial tcp 127.0.0.1:1: connect: connection refused`
	assert.Equal(t, want, ErrorText(ue, false))
	assert.Equal(t, "item 3: "+want, ErrorText(fmt.Errorf("item 3: %w", ue), false))
	other := &url.Error{Op: "Get", URL: "https://h.example/?sig=SIGSECRET", Err: context.Canceled}
	joined := ErrorText(errors.Join(fmt.Errorf("a: %w", ue), other), false)
	assert.NotContains(t, joined, "QUERYSECRET")
	assert.NotContains(t, joined, "SIGSECRET")
	assert.Contains(t, joined, `Get "https://h.example/": context canceled`)
	assert.Equal(t, `Get "[redacted URL]": EOF`, ErrorText(&url.Error{Op: "Get", URL: "http://[::1/?k=SECRET", Err: errors.New("EOF")}, false))
	assert.Equal(t, "plain", ErrorText(errors.New("plain"), false))
	assert.Empty(t, ErrorText(nil, false))
}

// TestError: a *url.Error comes back as a redacted copy that errors.Is and
// errors.As still see through; the original is not changed.
func TestError(t *testing.T) {
	ue := &url.Error{Op: "Get", URL: "http://u:p@h.example/p?token=T", Err: context.DeadlineExceeded}
	got := Error(ue, false)
	var gu *url.Error
	require.ErrorAs(t, got, &gu)
	assert.Equal(t, "http://h.example/p", gu.URL)
	assert.Equal(t, "Get", gu.Op)
	assert.ErrorIs(t, got, context.DeadlineExceeded)
	assert.Equal(t, "http://u:p@h.example/p?token=T", ue.URL, "the original is kept")
	// A Base that wraps an http.Client: the inner URL is redacted in the
	// text too, and errors.As still finds the outer copy first.
	inner := &url.Error{Op: "Get", URL: "http://h.example/p?api_key=Q", Err: context.Canceled}
	outer := &url.Error{Op: "Get", URL: "http://h.example/p?api_key=Q", Err: fmt.Errorf("pace: 1 attempt: %w", inner)}
	got = Error(outer, false)
	assert.NotContains(t, got.Error(), "api_key")
	require.ErrorAs(t, got, &gu)
	assert.Equal(t, "http://h.example/p", gu.URL)
	assert.ErrorIs(t, got, context.Canceled)
	plain := errors.New("x")
	assert.Same(t, plain, Error(plain, false))
	assert.NoError(t, Error(nil, false))
}

// TestHidePath: with hidePath the path is shown as "/[redacted]" (a
// Telegram Bot API token, a Slack webhook's secret), in URL, ErrorText and
// Error alike; an empty or root path has nothing to hide.
func TestHidePath(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.telegram.org/bot123456:SECRET/getMe?x=1":          "https://api.telegram.org/[redacted]",
		"https://hooks.slack.com/services/T000/B000/SECRET":            "https://hooks.slack.com/[redacted]",
		"https://api.example":                                          "https://api.example",
		"https://api.example/":                                         "https://api.example/",
		"/bot123456:SECRET/getMe":                                      "/[redacted]",
		"https://user:PASS@api.example:8443/SECRET%20x?api_key=Q#frag": "https://api.example:8443/[redacted]",
	} {
		assert.Equal(t, want, URL(mustParse(t, in), true), in)
	}
	ue := &url.Error{Op: "Post", URL: "https://hooks.slack.com/services/T000/B000/SECRET", Err: context.Canceled}
	text := ErrorText(fmt.Errorf("item 1: %w", ue), true)
	assert.Equal(t, `item 1: Post "https://hooks.slack.com/[redacted]": context canceled`, text)
	assert.Contains(t, ErrorText(ue, false), "SECRET", "the path is kept by default")
	var gu *url.Error
	require.ErrorAs(t, Error(ue, true), &gu)
	assert.Equal(t, "https://hooks.slack.com/[redacted]", gu.URL)
	assert.ErrorIs(t, Error(ue, true), context.Canceled)
}

// TestKeyText: a host is shown as it is; a key the caller chose, and a
// host too long to be one, as "key~" and 12 hex digits of its SHA-256.
func TestKeyText(t *testing.T) {
	text, shown := KeyText("api.example:443", true)
	assert.Equal(t, "api.example:443", text)
	assert.True(t, shown)
	text, shown = KeyText("sk_live_SECRET", false)
	assert.Equal(t, "key~95697d8551e8", text)
	assert.False(t, shown)
	long := strings.Repeat("a", MaxHostKeyText+1)
	text, _ = KeyText(long, true)
	assert.Regexp(t, `^key~[0-9a-f]{12}$`, text)
}

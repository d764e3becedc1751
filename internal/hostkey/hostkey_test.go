package hostkey

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOf: the forms a URL treats as one host (RFC 3986 §6.2.2, §6.2.3)
// meet, and the ones it does not stay apart.
func TestOf(t *testing.T) {
	tests := []struct{ in, scheme, want string }{
		{"api.example", "https", "api.example"},
		{"API.Example", "https", "api.example"},
		{"api.example.", "https", "api.example"},
		{"api.example:443", "https", "api.example"},
		{"api.example:80", "http", "api.example"},
		{"api.example.:443", "https", "api.example"},
		{"api.example:", "https", "api.example"},
		{"api.example:80", "https", "api.example:80"}, // not https's default
		{"api.example:443", "http", "api.example:443"},
		{"api.example:8443", "https", "api.example:8443"},
		{"api.example.:8443", "https", "api.example:8443"},
		{"api.example:443", "", "api.example"}, // a listed key: either default
		{"api.example:80", "", "api.example"},
		{"api.example:8080", "", "api.example:8080"},
		{"[::1]:443", "https", "[::1]"},
		{"[::1]:8443", "https", "[::1]:8443"},
		{"[::1]", "https", "[::1]"},
		{"::1", "", "::1"},
		{"127.0.0.1:80", "http", "127.0.0.1"},
		{"ÄPI.example", "https", "äpi.example"},
		{".", "https", "."},
		{"", "https", ""},
		{"*", "", "*"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Of(tt.in, tt.scheme), "Of(%q, %q)", tt.in, tt.scheme)
	}
}

// TestRequest: the URLs of the report all meet the listed key
// "api.example", as a URL compares them.
func TestRequest(t *testing.T) {
	for _, raw := range []string{
		"http://api.example:80/", "https://api.example:443/", "https://api.example./v1",
		"https://API.EXAMPLE/", "http://api.example/x",
	} {
		u, err := url.Parse(raw)
		assert.NoError(t, err)
		assert.Equal(t, Of("api.example", ""), Request(&http.Request{URL: u}), raw)
	}
	assert.Equal(t, "api.example", Request(&http.Request{Host: "API.example:80", URL: &url.URL{Path: "/"}}), "server side: req.Host")
}

// TestOfAllocs: a host already in normal form costs no allocation, so the
// Transport's success path stays allocation-free.
func TestOfAllocs(t *testing.T) {
	for _, h := range []string{"api.example", "api.example:443", "api.example:8443", "api.example."} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Of(h, "https") }), h)
	}
}

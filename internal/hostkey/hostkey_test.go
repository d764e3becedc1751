package hostkey

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOf: the forms a URL treats as one host (RFC 3986 §6.2.2, §6.2.3)
// meet, and the ones it does not stay apart.
func TestOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"api.example", "api.example"},
		{"API.Example", "api.example"},
		{"api.example.", "api.example"},
		{"api.example:443", "api.example"},
		{"api.example:80", "api.example"},
		{"api.example.:443", "api.example"},
		{"api.example:", "api.example"},
		{"api.example:8443", "api.example:8443"},
		{"api.example.:8443", "api.example:8443"},
		{"API.example:8080", "api.example:8080"},
		{"[::1]:443", "[::1]"},
		{"[::1]:8443", "[::1]:8443"},
		{"[::1]", "[::1]"},
		{"[0:0::1]", "[::1]"}, // RFC 5952 text
		{"[0:0::1]:8443", "[::1]:8443"},
		{"[FE80::1]", "[fe80::1]"},
		{"[fe80::1%eth0]", "[fe80::1%eth0]"},
		{"[FE80::1%ETH0]:80", "[fe80::1%eth0]"},
		{"[::1", "[::1"}, // not a literal: left as it is
		{"::1", "::1"},
		{"127.0.0.1:80", "127.0.0.1"},
		// Leading zeros: net/http dials ":044989" as port 44989.
		{"127.0.0.1:044989", "127.0.0.1:44989"},
		{"api.example:080", "api.example"},
		{"api.example:0443", "api.example"},
		{"[::1]:08443", "[::1]:8443"},
		{"api.example:00", "api.example:0"},
		{"api.example:0", "api.example:0"},
		{"127.0.0.1.", "127.0.0.1"},
		{"äpi.example", "xn--pi-uia.example"}, // as net/http sends it
		{"ÄPI.example", "xn--pi-uia.example"},
		{"ÄPI.example.:8443", "xn--pi-uia.example:8443"},
		{"xn--pi-uia.example", "xn--pi-uia.example"},
		{".", "."},
		{"", ""},
		{"*", "*"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Of(tt.in), "Of(%q)", tt.in)
	}
}

// TestKey: a listed host meets the requests' form, and a key no URL.Host
// can equal is refused with the reason. The repro of the report: "[::1"
// and "api.example:abc" (both refused by url.Parse) and "[fe80::1%25eth0]"
// were accepted.
func TestKey(t *testing.T) {
	ok := []struct{ in, want string }{
		{"api.example", "api.example"},
		{"API.example.", "api.example"},
		{"api.example:443", "api.example"},
		{"api.example:80", "api.example"},
		{"api.example:", "api.example"},
		{"api.example:8443", "api.example:8443"},
		{"api.example:65535", "api.example:65535"},
		{"[::1]", "[::1]"},
		{"[0:0::1]:80", "[::1]"},
		{"[fe80::1%eth0]", "[fe80::1%eth0]"},
		{"äpi.example", "xn--pi-uia.example"},
		{"xn--pi-uia.example", "xn--pi-uia.example"},
		{"127.0.0.1", "127.0.0.1"},
		{"api..example", "api..example"}, // a URL.Host can be that
	}
	for _, tt := range ok {
		got, err := Key(tt.in)
		if assert.NoError(t, err, tt.in) {
			assert.Equal(t, tt.want, got, "Key(%q)", tt.in)
		}
	}
	bad := []struct{ in, reason string }{
		{"[::1", "closing ']'"},
		{"[::1]x", "no port"},
		{"[::1]:abc", "not a decimal number"},
		{"api.example:abc", "not a decimal number"},
		{"api.example:-1", "not a decimal number"},
		{"api.example:99999", "above 65535"},
		{"api.example:99999999999999999999999", "above 65535"},
		{"[fe80::1%25eth0]", "unescaped"},
		{"[127.0.0.1]", "not an IPv6 address"},
		{"[api.example]", "not an IPv6 address"},
		{"::1", "in brackets"},
		{"fe80::1", "in brackets"},
		{"api]example", "brackets"},
		{":443", "no host"},
		{"a%41b.example", "no URL has this host"},
		{"%C3%A4pi.example", "percent-escapes"}, // decoded: URL.Host is "äpi.example"
		{"a%zz.example", "no URL has this host"},
		{"a{b}.example", "no URL has this host"},
		{"a\u200fb.example", "internationalized"}, // a right-to-left mark
	}
	for _, tt := range bad {
		_, err := Key(tt.in)
		if assert.Error(t, err, tt.in) {
			assert.Contains(t, err.Error(), tt.reason, tt.in)
		}
	}
	for _, tt := range ok { // what Key accepts, url.Parse does too
		_, err := url.Parse("http://" + tt.in + "/")
		if tt.in != "[fe80::1%eth0]" { // a URL writes the zone escaped
			assert.NoError(t, err, tt.in)
		}
	}
}

// TestRequest: the URLs of the report all meet the listed key
// "api.example", as a URL compares them; the report's IPv6, IDNA and port
// forms meet their keys too.
func TestRequest(t *testing.T) {
	for key, raws := range map[string][]string{
		"api.example": {
			"http://api.example:80/", "https://api.example:443/", "https://api.example./v1",
			"https://API.EXAMPLE/", "http://api.example/x", "http://api.example:/",
			"http://api.example:443/", // the key cannot know the scheme: 443 and 80 never count
		},
		"api.example:443":  {"http://api.example:443/", "https://api.example/"},
		"api.example:8443": {"https://api.example:8443/", "http://API.example.:8443/"},
		"[::1]":            {"http://[::1]/", "http://[0:0::1]/", "https://[0:0:0:0:0:0:0:1]:443/"},
		"[fe80::1]":        {"http://[FE80::1]/"},
		"[fe80::1%eth0]":   {"http://[fe80::1%25eth0]/"},
		"äpi.example":      {"http://ÄPI.example/", "http://xn--pi-uia.example/", "https://äpi.example:443/"},
	} {
		want, err := Key(key)
		require.NoError(t, err, key)
		for _, raw := range raws {
			u, err := url.Parse(raw)
			require.NoError(t, err, raw)
			assert.Equal(t, want, Request(&http.Request{URL: u}), "key %q, %s", key, raw)
		}
	}
	// xn--pi-yja is "ñpi", not "äpi" (the report took one for the other).
	for _, raw := range []string{"https://api.example:8443/", "http://[::2]/", "http://pi.example/", "http://xn--pi-yja.example/"} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		assert.NotContains(t, []string{"api.example", "[::1]", "xn--pi-uia.example"}, Request(&http.Request{URL: u}), raw)
	}
	assert.Equal(t, "api.example", Request(&http.Request{Host: "API.example:80", URL: &url.URL{Path: "/"}}), "server side: req.Host")
}

// TestOfAllocs: a host already in normal form costs no allocation, so the
// Transport's success path stays allocation-free; nor does a port 80 or
// 443 to drop, or an IPv6 literal in canonical text.
func TestOfAllocs(t *testing.T) {
	for _, h := range []string{"api.example", "api.example:443", "api.example:8443", "api.example.", "[::1]", "[::1]:8443", "[2001:db8::1]:443", "127.0.0.1:8080"} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Of(h) }), h)
	}
}

func BenchmarkOf(b *testing.B) {
	for _, h := range []string{"api.example", "[2001:db8::1]:443", "API.example", "äpi.example"} {
		b.Run(h, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Of(h)
			}
		})
	}
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"api.example": "api.example", "api.example:8443": "api.example", "api.example:": "api.example",
		"[::1]": "[::1]", "[::1]:8080": "[::1]", "::1": "::1", "127.0.0.1:80": "127.0.0.1",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}

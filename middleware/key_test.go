package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/pacehttp/pace"
)

var proxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}

// TestAddrKey checks which client address a request is keyed by.
func TestAddrKey(t *testing.T) {
	tests := []struct {
		name    string
		trusted []netip.Prefix
		ipv6    int
		remote  string
		xff     []string // X-Forwarded-For lines
		want    string
	}{
		{"peer", nil, 0, "203.0.113.7:1234", nil, "a203.0.113.7"},
		{"forwarded-for ignored when nobody is trusted", nil, 0, "203.0.113.7:1234", []string{"198.51.100.1"}, "a203.0.113.7"},
		{"forwarded-for ignored from an untrusted peer", proxies, 0, "203.0.113.7:1234", []string{"198.51.100.1"}, "a203.0.113.7"},
		{"right-most entry behind a trusted proxy", proxies, 0, "10.0.0.1:80", []string{"198.51.100.9"}, "a198.51.100.9"},
		{"left-most entry is spoofable", proxies, 0, "10.0.0.1:80", []string{"1.1.1.1, 198.51.100.9"}, "a198.51.100.9"},
		{"through two trusted proxies", proxies, 0, "10.0.0.1:80", []string{"1.1.1.1, 198.51.100.9, 10.0.0.2"}, "a198.51.100.9"},
		{"over several lines", proxies, 0, "10.0.0.1:80", []string{"1.1.1.1, 198.51.100.9", "10.0.0.2"}, "a198.51.100.9"},
		{"spaces and tabs", proxies, 0, "10.0.0.1:80", []string{"1.1.1.1 ,\t198.51.100.9\t,10.0.0.2 "}, "a198.51.100.9"},
		{"with ports", proxies, 0, "10.0.0.1:80", []string{"198.51.100.9:5555, 10.0.0.2:443"}, "a198.51.100.9"},
		{"every hop trusted", proxies, 0, "10.0.0.1:80", []string{"10.0.0.3, 10.0.0.2"}, "a10.0.0.3"},
		{"a trusted peer with no header", proxies, 0, "10.0.0.1:80", nil, "a10.0.0.1"},
		{"a malformed entry keys by its proxy", proxies, 0, "10.0.0.1:80", []string{"198.51.100.9, unknown, 10.0.0.2"}, "a10.0.0.2"},
		{"an empty entry keys by its proxy", proxies, 0, "10.0.0.1:80", []string{"198.51.100.9,"}, "a10.0.0.1"},
		{"IPv6 /64 by default", nil, 0, "[2001:db8:1:2:3:4:5:6]:443", nil, "a2001:db8:1:2::"},
		{"IPv6 /128", nil, 128, "[2001:db8:1:2:3:4:5:6]:443", nil, "a2001:db8:1:2:3:4:5:6"},
		{"IPv6 /48", nil, 48, "[2001:db8:1:2:3:4:5:6]:443", nil, "a2001:db8:1::"},
		{"IPv6 zone dropped", nil, 0, "[fe80::1%eth0]:443", nil, "afe80::"},
		{"IPv4-mapped IPv6 is IPv4", nil, 0, "[::ffff:192.0.2.1]:443", nil, "a192.0.2.1"},
		{"IPv6 behind IPv6 proxies", proxies, 0, "[2001:db8:ffff::1]:443", []string{"[2001:db8:5:6::7]:99, 2001:db8:ffff::2"}, "a2001:db8:5:6::"},
		{"IPv4-mapped trusted prefix", []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}, 0, "[::ffff:10.0.0.1]:80", []string{"198.51.100.9"}, "a198.51.100.9"},
		{"bracketed IPv6 without a port", proxies, 0, "10.0.0.1:80", []string{"[2001:db8:5:6::7]"}, "a2001:db8:5:6::"},
		{"RemoteAddr without a port", nil, 0, "192.0.2.5", nil, "a192.0.2.5"},
		{"RemoteAddr that is no IP (Unix socket)", proxies, 0, "@", []string{"198.51.100.9"}, "a@"},
		{"empty RemoteAddr", nil, 0, "", nil, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTest(t, Options{Limit: pace.FixedWindow(pace.PerSecond(1)), TrustedProxies: tt.trusted, IPv6Prefix: tt.ipv6})
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			if got, err := m.keyOf(req); got != tt.want || err != nil {
				t.Errorf("keyOf(RemoteAddr %q, X-Forwarded-For %q) = %q, %v, want %q", tt.remote, tt.xff, got, err, tt.want)
			}
		})
	}
}

// TestSpoofedForwardedFor checks that a client rotating X-Forwarded-For
// values stays under one limit unless its peer is a trusted proxy.
func TestSpoofedForwardedFor(t *testing.T) {
	for _, trusted := range [][]netip.Prefix{nil, proxies} {
		t.Run(fmt.Sprintf("trusted %v", trusted), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				next := &okHandler{}
				h := newTest(t, Options{Limit: pace.TokenBucket(pace.PerMinute(1), 3), TrustedProxies: trusted}).Handler(next)
				for i := range 50 {
					req := httptest.NewRequest(http.MethodGet, "/", nil)
					req.RemoteAddr = "203.0.113.7:4000"
					req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i))
					serve(h, req)
				}
				if next.n != 3 {
					t.Errorf("%d of 50 requests with made-up X-Forwarded-For admitted, want the burst of 3", next.n)
				}
			})
		})
	}
}

// TestKeyHeader checks keying by an API-key header: one limit per key,
// keyless requests by client address, and no way for an API key to reach
// an address's limit.
func TestKeyHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newTest(t, Options{Limit: pace.FixedWindow(pace.PerMinute(1)), KeyHeader: "x-api-key"}).Handler(&okHandler{})
		send := func(key, addr string) int {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = addr
			if key != "" {
				req.Header.Set("X-Api-Key", key)
			}
			return serve(h, req).Code
		}
		steps := []struct {
			key, addr string
			want      int
		}{
			{"alpha", "192.0.2.1:1", 200},
			{"alpha", "192.0.2.2:1", 429}, // the same key from elsewhere
			{"beta", "192.0.2.1:1", 200},
			{"192.0.2.1", "192.0.2.9:1", 200}, // a key spelled like an address
			{"", "192.0.2.1:1", 200},          // no key: by address
			{"", "192.0.2.1:2", 429},
			{"", "192.0.2.3:1", 200},
		}
		for i, s := range steps {
			if got := send(s.key, s.addr); got != s.want {
				t.Errorf("step %d: key %q from %s: status %d, want %d", i, s.key, s.addr, got, s.want)
			}
		}
	})
}

// TestRequireKey checks that a request without the key header is refused
// with 400 and never reaches next, and that the key's value is never
// written to a response.
func TestRequireKey(t *testing.T) {
	const secret = "sk_live_0123456789"
	next := &okHandler{}
	h := newTest(t, Options{Limit: pace.FixedWindow(pace.PerHour(1)), KeyHeader: "X-API-Key", RequireKey: true}).Handler(next)
	rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "missing X-Api-Key header") {
		t.Errorf("no key: %d %q, want 400 naming the header", rec.Code, rec.Body.String())
	}
	if next.n != 0 {
		t.Errorf("next received %d requests without a key, want 0", next.n)
	}
	for i, want := range []int{200, 429} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-API-Key", secret)
		rec := serve(h, req)
		if rec.Code != want {
			t.Errorf("request %d with a key: status %d, want %d", i, rec.Code, want)
		}
		if dump := fmt.Sprint(rec.Header(), rec.Body.String()); strings.Contains(dump, secret) {
			t.Errorf("response %d shows the API key: %s", i, dump)
		}
	}
}

// TestKeyFunc checks a custom key function, and that its errors go to
// OnKeyError or, by default, to a 400 that does not show the error's text.
func TestKeyFunc(t *testing.T) {
	errNoUser := errors.New("no user in token abc.def.ghi")
	key := func(r *http.Request) (string, error) {
		if u := r.URL.Query().Get("user"); u != "" {
			return u, nil
		}
		return "", errNoUser
	}
	synctest.Test(t, func(t *testing.T) {
		next := &okHandler{}
		h := newTest(t, Options{Limit: pace.FixedWindow(pace.PerMinute(1)), Key: key}).Handler(next)
		for i, s := range []struct {
			target string
			want   int
		}{{"/?user=ann", 200}, {"/?user=ann", 429}, {"/?user=bob", 200}, {"/", 400}} {
			rec := serve(h, httptest.NewRequest(http.MethodGet, s.target, nil))
			if rec.Code != s.want {
				t.Errorf("step %d: GET %s: status %d, want %d", i, s.target, rec.Code, s.want)
			}
			if strings.Contains(rec.Body.String(), "abc.def") {
				t.Errorf("step %d: body %q shows the key function's error", i, rec.Body.String())
			}
		}
		if next.n != 2 {
			t.Errorf("next received %d requests, want 2", next.n)
		}

		var gotErr error
		h = newTest(t, Options{Limit: pace.FixedWindow(pace.PerMinute(1)), Key: key,
			OnKeyError: func(w http.ResponseWriter, _ *http.Request, err error) {
				gotErr = err
				w.WriteHeader(http.StatusUnauthorized)
			}}).Handler(next)
		if rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)); rec.Code != http.StatusUnauthorized || gotErr != errNoUser {
			t.Errorf("OnKeyError: status %d, err %v, want 401 and %v", rec.Code, gotErr, errNoUser)
		}
	})
}

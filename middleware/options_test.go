package middleware

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"

	"github.com/pacehttp/pace"
)

// TestNewErrors checks that every invalid setting is reported by New as a
// *pace.ConfigError naming it, and matches pace.ErrInvalidConfig.
func TestNewErrors(t *testing.T) {
	ok := pace.FixedWindow(pace.PerSecond(1))
	key := func(*http.Request) (string, error) { return "", nil }
	tests := []struct {
		name  string
		o     Options
		field string
	}{
		{"zero options", Options{}, "Limit"},
		{"invalid limit", Options{Limit: pace.TokenBucket(pace.PerSecond(1), 0)}, "Burst"},
		{"invalid part of All", Options{Limit: pace.All(ok, pace.FixedWindow(pace.Rate{N: 1}))}, "Rate.Per"},
		{"Key with KeyHeader", Options{Limit: ok, Key: key, KeyHeader: "X-API-Key"}, "KeyHeader"},
		{"Key with TrustedProxies", Options{Limit: ok, Key: key, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, "TrustedProxies"},
		{"Key with IPv6Prefix", Options{Limit: ok, Key: key, IPv6Prefix: 48}, "IPv6Prefix"},
		{"KeyHeader not a field name", Options{Limit: ok, KeyHeader: "X API Key"}, "KeyHeader"},
		{"KeyHeader with a colon", Options{Limit: ok, KeyHeader: "X-API-Key:"}, "KeyHeader"},
		{"KeyHeader Host, never in Request.Header", Options{Limit: ok, KeyHeader: "host", RequireKey: true}, "KeyHeader"},
		{"KeyHeader Transfer-Encoding", Options{Limit: ok, KeyHeader: "Transfer-Encoding"}, "KeyHeader"},
		{"RequireKey without KeyHeader", Options{Limit: ok, RequireKey: true}, "RequireKey"},
		{"IPv6Prefix negative", Options{Limit: ok, IPv6Prefix: -1}, "IPv6Prefix"},
		{"IPv6Prefix over 128", Options{Limit: ok, IPv6Prefix: 129}, "IPv6Prefix"},
		{"PolicyName not printable", Options{Limit: ok, PolicyName: "per\nminute"}, "PolicyName"},
		{"PolicyName not ASCII", Options{Limit: ok, PolicyName: "über"}, "PolicyName"},
		{"MaxKeys negative", Options{Limit: ok, MaxKeys: -1}, "MaxKeys"},
		{"invalid trusted prefix", Options{Limit: ok, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), {}}}, "TrustedProxies[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.o)
			var ce *pace.ConfigError
			if m != nil || !errors.As(err, &ce) || ce.Field != tt.field || !errors.Is(err, pace.ErrInvalidConfig) {
				t.Errorf("New = %v, %v; want nil and a *pace.ConfigError for %q", m, err, tt.field)
			}
		})
	}
}

// TestNewValid checks settings at the edges of what is valid.
func TestNewValid(t *testing.T) {
	for i, o := range []Options{
		{Limit: pace.FixedWindow(pace.PerSecond(1)), IPv6Prefix: 1},
		{Limit: pace.FixedWindow(pace.PerSecond(1)), IPv6Prefix: 128, PolicyName: ` !"\~`},
		{Limit: pace.FixedWindow(pace.PerSecond(1)), KeyHeader: "x-api-key", RequireKey: true, MaxKeys: 1},
		{Limit: pace.All(pace.FixedWindow(pace.PerSecond(1))), TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.1.2.3/8")}},
	} {
		if _, err := New(o); err != nil {
			t.Errorf("options %d: New: %v, want no error", i, err)
		}
	}
}

// TestMaxKeys sends one request from each of 100,000 addresses through a
// limit that keeps every key busy for an hour, with MaxKeys 1,000: the
// store never tracks more than about MaxKeys keys; past the cap a new
// address makes the store forget another one, so each gets its own unit.
func TestMaxKeys(t *testing.T) {
	const maxKeys, clients = 1000, 100_000
	m := newTest(t, Options{Limit: pace.TokenBucket(pace.PerHour(1), 1), MaxKeys: maxKeys})
	next := &okHandler{}
	h := m.Handler(next)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	w := discard{header: http.Header{}}
	for i := range clients {
		req.RemoteAddr = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String() + ":1"
		clear(w.header)
		h.ServeHTTP(w, req)
	}
	n := m.keyed.Len()
	// Each of the store's shards holds up to ⌈MaxKeys/shards⌉ keys.
	if n > maxKeys+64 || n < maxKeys/2 {
		t.Errorf("%d keys tracked after %d clients, want about MaxKeys = %d", n, clients, maxKeys)
	}
	if next.n != clients {
		t.Errorf("%d of %d requests admitted, want all: each new address has its own limit", next.n, clients)
	}
	t.Logf("%d keys tracked, %d requests admitted", n, next.n)
}

// TestMaxKeysFloodOfMadeUpAPIKeys: 10 × MaxKeys made-up X-API-Key values,
// each sent once, then a legitimate key: its first request is answered 200,
// not 429 (with one overflow limit shared past the cap it was refused).
func TestMaxKeysFloodOfMadeUpAPIKeys(t *testing.T) {
	const maxKeys = 10_000
	m := newTest(t, Options{Limit: pace.TokenBucket(pace.PerMinute(60), 5), KeyHeader: "X-API-Key", MaxKeys: maxKeys})
	h := m.Handler(&okHandler{})
	for i := range 10 * maxKeys {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-API-Key", "made-up-"+strconv.Itoa(i))
		h.ServeHTTP(discard{header: http.Header{}}, req)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("X-API-Key", "sk_live_legitimate")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("the legitimate key's first request: %d, want 200", rec.Code)
	}
	if n := m.keyed.Len(); n > maxKeys+64 {
		t.Errorf("%d keys tracked, above MaxKeys %d", n, maxKeys)
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

// TestPolicyNames checks the policy names of a limit with several parts.
func TestPolicyNames(t *testing.T) {
	parts := []pace.Limit{pace.FixedWindow(pace.PerSecond(1)), pace.FixedWindow(pace.PerMinute(2)), pace.FixedWindow(pace.PerHour(3))}
	m := newTest(t, Options{Limit: pace.All(parts...), PolicyName: "api"})
	want := `"api-1";q=1;w=1, "api-2";q=2;w=60, "api-3";q=3;w=3600`
	if m.policy != want {
		t.Errorf("RateLimit-Policy = %q, want %q", m.policy, want)
	}
	m = newTest(t, Options{Limit: pace.All(parts[0])})
	if want := `"default";q=1;w=1`; m.policy != want {
		t.Errorf("RateLimit-Policy of All with one part = %q, want %q", m.policy, want)
	}
}

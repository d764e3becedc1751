package middleware

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/pacehttp/pace"
)

// BenchmarkHandler measures the middleware's own cost per request, with a
// next that does nothing: admitted requests from many clients, and refused
// requests from one.
func BenchmarkHandler(b *testing.B) {
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	b.Run("admitted", func(b *testing.B) {
		h := newTest(b, Options{Limit: pace.TokenBucket(pace.PerSecond(1_000_000_000), 1_000_000)}).Handler(next)
		var client atomic.Uint32
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = netip.AddrFrom4([4]byte{10, 0, 0, byte(client.Add(1))}).String() + ":1"
			w := discard{header: http.Header{}}
			for pb.Next() {
				h.ServeHTTP(w, req)
			}
		})
	})
	b.Run("refused", func(b *testing.B) {
		h := newTest(b, Options{Limit: pace.FixedWindow(pace.PerHour(1))}).Handler(next)
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		w := discard{header: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, req)
		}
	})
}

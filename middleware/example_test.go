package middleware_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/middleware"
)

// Each client address may send 2 requests in any minute; the third is
// refused with 429 and the wait until the first leaves the window.
func ExampleMiddleware_Handler() {
	m, err := middleware.New(middleware.Options{Limit: pace.SlidingLog(pace.PerMinute(2))})
	if err != nil {
		log.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		fmt.Printf("%d RateLimit: %s Retry-After: %q\n", rec.Code, rec.Header().Get("RateLimit"), rec.Header().Get("Retry-After"))
		if rec.Code == http.StatusTooManyRequests {
			fmt.Println("RateLimit-Policy:", rec.Header().Get("RateLimit-Policy"))
		}
	}
	// Output:
	// 200 RateLimit: "default";r=1;t=60 Retry-After: ""
	// 200 RateLimit: "default";r=0;t=60 Retry-After: ""
	// 429 RateLimit: "default";r=0;t=60 Retry-After: "60"
	// RateLimit-Policy: "default";q=2;w=60
}

// Each API key gets a token bucket of 60 a minute with bursts of 2, over a
// real loopback server. Requests without the header would be keyed by
// client address.
func ExampleOptions_keyHeader() {
	m, err := middleware.New(middleware.Options{
		Limit:      pace.TokenBucket(pace.PerMinute(60), 2),
		KeyHeader:  "X-API-Key",
		PolicyName: "per-key",
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	defer srv.Close()

	for _, key := range []string{"alice", "alice", "alice", "bob"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set("X-API-Key", key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(key, resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	// Output:
	// alice 200 "per-key";r=1;t=1
	// alice 200 "per-key";r=0;t=1
	// alice 429 "per-key";r=0;t=1
	// bob 200 "per-key";r=1;t=1
}

// Behind a reverse proxy, the client is the right-most X-Forwarded-For
// address that is not a trusted proxy. An entry the client forges on the
// left changes nothing.
func ExampleOptions_trustedProxies() {
	m, err := middleware.New(middleware.Options{
		Limit:          pace.SlidingLog(pace.PerMinute(1)),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
	})
	if err != nil {
		log.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, xff := range []string{"203.0.113.7", "192.0.2.99, 203.0.113.7", "198.51.100.1"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "10.0.0.1:41000" // the proxy
		req.Header.Set("X-Forwarded-For", xff)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("X-Forwarded-For: %-24s → %d\n", xff, rec.Code)
	}
	// Output:
	// X-Forwarded-For: 203.0.113.7              → 200
	// X-Forwarded-For: 192.0.2.99, 203.0.113.7  → 429
	// X-Forwarded-For: 198.51.100.1             → 200
}

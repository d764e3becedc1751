package middleware

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
)

// TestAdmittedUntouched checks that an admitted request reaches next as it
// came (the same *http.Request, method, URL, headers and unread body), and
// that next's response goes out as next wrote it, next having the last word
// on the RateLimit fields.
func TestAdmittedUntouched(t *testing.T) {
	m := newTest(t, Options{Limit: pace.TokenBucket(pace.PerSecond(10), 5), TrustedProxies: proxies, KeyHeader: "X-API-Key"})
	req := httptest.NewRequest(http.MethodPatch, "/v1/items/7?x=1", strings.NewReader("the body"))
	req.RemoteAddr = "10.0.0.1:80"
	req.Header.Set("X-Forwarded-For", "198.51.100.9")
	req.Header.Set("X-API-Key", "k1")
	req.Header.Set("Content-Type", "text/plain")
	wantHeader := req.Header.Clone()

	var seen *http.Request
	var body string
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		w.Header().Set("X-Next", "yes")
		w.Header().Set("RateLimit-Policy", `"custom";q=1`)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "made")
	}))
	rec := serve(h, req)

	if seen != req {
		t.Errorf("next received %p, want the request itself %p", seen, req)
	}
	if req.Method != http.MethodPatch || req.URL.String() != "/v1/items/7?x=1" || body != "the body" {
		t.Errorf("next saw %s %s with body %q, want PATCH /v1/items/7?x=1 with %q", req.Method, req.URL, body, "the body")
	}
	if !reflect.DeepEqual(req.Header, wantHeader) {
		t.Errorf("request headers = %v, want them unchanged: %v", req.Header, wantHeader)
	}
	if rec.Code != http.StatusCreated || rec.Body.String() != "made" || rec.Header().Get("X-Next") != "yes" {
		t.Errorf("response = %d %q (X-Next %q), want next's 201 \"made\" (yes)", rec.Code, rec.Body.String(), rec.Header().Get("X-Next"))
	}
	if got := rec.Header().Get("RateLimit-Policy"); got != `"custom";q=1` {
		t.Errorf("RateLimit-Policy = %q, want next's own value", got)
	}
	if got := rec.Header().Get("RateLimit"); got != `"default";r=4;t=1` {
		t.Errorf("RateLimit = %q, want %q", got, `"default";r=4;t=1`)
	}
	if rec.Header().Get("Retry-After") != "" {
		t.Errorf("an admitted response has Retry-After %q, want none", rec.Header().Get("Retry-After"))
	}
}

// TestRefusedNeverReachNext checks that refused requests never reach next
// and cost nothing: a client that keeps sending while refused gets through
// as soon as its limit frees a unit.
func TestRefusedNeverReachNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &okHandler{}
		h := newTest(t, Options{Limit: pace.SlidingLog(pace.PerSecond(2))}).Handler(next)
		codes := map[int]int{}
		for range 100 { // 100 requests 10ms apart: one second
			codes[serve(h, httptest.NewRequest(http.MethodGet, "/", nil)).Code]++
			time.Sleep(10 * time.Millisecond)
		}
		if codes[200] != 2 || codes[429] != 98 || next.n != 2 {
			t.Errorf("in 1s: %v and next saw %d, want 2 admitted and 98 refused", codes, next.n)
		}
		time.Sleep(time.Millisecond) // past the first request's window, not the second's
		if rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)); rec.Code != 200 {
			t.Errorf("after refusals, once the window moved on: status %d, want 200 (refusals cost nothing)", rec.Code)
		}
	})
}

// TestRefusalResponse checks the default refusal and OnLimited.
func TestRefusalResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &okHandler{}
		h := newTest(t, Options{Limit: pace.FixedWindow(pace.PerMinute(1))}).Handler(next)
		serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
		time.Sleep(20*time.Second + time.Millisecond)
		rec := serve(h, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x")))
		if rec.Code != 429 || rec.Header().Get("Retry-After") != "40" || rec.Body.String() != "Too Many Requests\n" ||
			!strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
			t.Errorf("refusal: %d, Retry-After %q, Content-Type %q, body %q; want 429, 40, text/plain, \"Too Many Requests\\n\"",
				rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Content-Type"), rec.Body.String())
		}

		var got Refusal
		var fields []string
		h = newTest(t, Options{Limit: pace.FixedWindow(pace.PerMinute(1)), PolicyName: `per "minute"`,
			OnLimited: func(w http.ResponseWriter, _ *http.Request, info Refusal) {
				got = info
				fields = []string{w.Header().Get("Retry-After"), w.Header().Get("RateLimit"), w.Header().Get("RateLimit-Policy")}
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusTooManyRequests)
			}}).Handler(next)
		serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
		time.Sleep(500 * time.Millisecond)
		rec = serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
		wantFields := []string{"40", `"per \"minute\"";r=0;t=40`, `"per \"minute\"";q=1;w=60`}
		if rec.Code != 429 || !reflect.DeepEqual(fields, wantFields) {
			t.Errorf("OnLimited: status %d, fields %q, want 429 and %q", rec.Code, fields, wantFields)
		}
		if got.RetryAfter != 40*time.Second || got.Quota.Wait != 39500*time.Millisecond-time.Millisecond || got.Quota.Limit != 1 {
			t.Errorf("Refusal = %+v, want RetryAfter 40s, Quota.Wait 39.499s, Limit 1", got)
		}
		if next.n != 2 {
			t.Errorf("next received %d requests, want 2", next.n)
		}
	})
}

// TestOmitHeaders checks that OmitHeaders leaves out the RateLimit fields
// but never Retry-After.
func TestOmitHeaders(t *testing.T) {
	h := newTest(t, Options{Limit: pace.FixedWindow(pace.PerHour(1)), OmitHeaders: true}).Handler(&okHandler{})
	for i, want := range []string{"", "3600"} {
		rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Header().Get("RateLimit") != "" || rec.Header().Get("RateLimit-Policy") != "" {
			t.Errorf("request %d: RateLimit fields %v with OmitHeaders", i, rec.Header())
		}
		if got := rec.Header().Get("Retry-After"); (got == "") != (want == "") {
			t.Errorf("request %d: Retry-After %q, want one only on the refusal", i, got)
		}
	}
}

// TestConcurrentRequests checks on the real clock, with the race detector,
// that concurrent requests of one client never get past the limit: a burst
// of 50 that refills one an hour admits exactly 50 of 800.
func TestConcurrentRequests(t *testing.T) {
	next := &countingHandler{}
	h := newTest(t, Options{Limit: pace.TokenBucket(pace.PerHour(1), 50)}).Handler(next)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)).Code
				mu.Lock()
				codes[c]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if codes[200] != 50 || codes[429] != 750 || next.count() != 50 {
		t.Errorf("statuses %v, next saw %d; want 50 admitted, 750 refused", codes, next.count())
	}
}

// countingHandler counts requests, safely for concurrent use.
type countingHandler struct {
	mu sync.Mutex
	n  int
}

func (h *countingHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	h.n++
	h.mu.Unlock()
}

func (h *countingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// TestNilNext checks that a nil next means http.DefaultServeMux.
func TestNilNext(t *testing.T) {
	h := newTest(t, Options{Limit: pace.FixedWindow(pace.PerHour(1))}).Handler(nil)
	// The default mux has no routes in this test binary: 404.
	if rec := serve(h, httptest.NewRequest(http.MethodGet, "/nil-next", nil)); rec.Code != http.StatusNotFound {
		t.Errorf("status %d through a nil next, want 404 from http.DefaultServeMux", rec.Code)
	}
}

// TestZeroMiddleware: a Middleware not built by New (the zero value, or
// nil) never panics; its handler answers every request 500 with a one-line
// body that says why, and never calls next.
func TestZeroMiddleware(t *testing.T) {
	for name, m := range map[string]*Middleware{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			called := false
			h := m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
			const want = "middleware: Middleware not created by middleware.New\n"
			for range 2 {
				rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
				if rec.Code != http.StatusInternalServerError || rec.Body.String() != want {
					t.Errorf("response = %d %q, want 500 %q", rec.Code, rec.Body.String(), want)
				}
			}
			if called {
				t.Error("next was called")
			}
		})
	}
}

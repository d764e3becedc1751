// Package demoapi is the strict rate-limited API the examples call: GET
// /items/{id} answers 200 with a small JSON body, and POST /items/{id}
// charges the item (once per Idempotency-Key, as a payment API does),
// behind package middleware
// allowing at most a fixed number of requests in any 1-second window (an
// exact sliding-window log, pace.SlidingLog). Excess requests get 429 with
// Retry-After (whole seconds, rounded up) and the IETF RateLimit fields, as
// the middleware writes them. It counts what it admitted and refused, and
// how often it served each item, so that an example can report from the
// server's side. Started with [Faults], it is also flaky: it answers some
// admitted requests 503 and resets some connections, before or after
// applying the request.
package demoapi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/middleware"
)

// API is a running demo API. Its methods are safe for concurrent use.
type API struct {
	URL      string // base URL, http://127.0.0.1:port
	srv      *http.Server
	served   chan error   // Serve's result
	admitted atomic.Int64 // requests the limit let through
	refused  atomic.Int64 // requests answered 429

	faults      Faults
	unavailable atomic.Int64 // requests answered 503
	resets      atomic.Int64 // connections reset
	resetsAfter atomic.Int64 // of them, after the request was applied

	mu          sync.Mutex
	items       map[string]int       // times each item was served
	charges     map[string]int       // times each item was charged
	keys        map[string]string    // Idempotency-Key → the item it charged
	charged     map[string]time.Time // when each item was first charged
	first, last time.Time            // the first and the latest request admitted
}

// Faults makes the API flaky: shares, in [0, 1], of the admitted requests.
type Faults struct {
	Unavailable float64 // answered 503 Service Unavailable, without Retry-After or RateLimit fields: an outage, not a throttle
	Reset       float64 // connection reset (TCP RST): half before the request is applied, half after
}

// Start starts the API on a free loopback port, limited to limit requests
// in any second. With omitHeaders the RateLimit fields are left out (a
// server that does not disclose its limit), so that a client that is too
// fast meets 429s instead of pacing itself from them.
func Start(limit int, omitHeaders bool) (*API, error) {
	return StartFaulty(limit, omitHeaders, Faults{})
}

// StartFaulty is Start with faults injected in the admitted requests.
func StartFaulty(limit int, omitHeaders bool, f Faults) (*API, error) {
	a := &API{served: make(chan error, 1), items: map[string]int{}, charges: map[string]int{}, keys: map[string]string{}, charged: map[string]time.Time{}, faults: f}
	m, err := middleware.New(middleware.Options{
		Limit:       pace.SlidingLog(pace.PerSecond(limit)),
		OmitHeaders: omitHeaders,
		OnLimited: func(w http.ResponseWriter, _ *http.Request, _ middleware.Refusal) {
			a.refused.Add(1)
			http.Error(w, "too many requests", http.StatusTooManyRequests)
		},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		a.admitted.Add(1)
		after, ok := a.fault(w)
		if !ok {
			return
		}
		a.admit(r.PathValue("id"), "")
		if after() {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"id\":%q,\"status\":\"ok\"}\n", r.PathValue("id"))
	})
	mux.HandleFunc("POST /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		a.admitted.Add(1)
		after, ok := a.fault(w)
		if !ok {
			return
		}
		a.admit(r.PathValue("id"), r.Header.Get("Idempotency-Key"))
		if after() {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"id\":%q,\"status\":\"charged\"}\n", r.PathValue("id"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the local API: %w", err)
	}
	a.URL = "http://" + ln.Addr().String()
	a.srv = &http.Server{Handler: m.Handler(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { a.served <- a.srv.Serve(ln) }()
	return a, nil
}

// admit records a request for item id that was applied: a GET is served, a
// POST charges the item unless its key (when not empty) charged already.
func (a *API) admit(id, key string) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.items[id]++
	if key == "" || a.keys[key] == "" {
		if key != "" {
			a.keys[key] = id
		}
		a.charges[id]++
		if _, ok := a.charged[id]; !ok {
			a.charged[id] = now
		}
	}
	if a.first.IsZero() {
		a.first = now
	}
	a.last = now
}

// fault draws the request's fault. ok is false when the request was
// answered 503 or its connection reset before it was applied; otherwise
// after, called once the request is applied, resets the connection
// instead of the answer when that was drawn, and reports whether it did.
func (a *API) fault(w http.ResponseWriter) (after func() bool, ok bool) {
	no := func() bool { return false }
	f := a.faults
	if f == (Faults{}) {
		return no, true
	}
	switch x := rand.Float64(); {
	case x < f.Unavailable:
		a.unavailable.Add(1)
		// An outage behind the limiter, not a throttle: no RateLimit
		// fields, which would name a delay (see pace.Transport).
		w.Header().Del("RateLimit")
		w.Header().Del("RateLimit-Policy")
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return nil, false
	case x < f.Unavailable+f.Reset/2:
		return nil, !resetConn(w, &a.resets)
	case x < f.Unavailable+f.Reset:
		return func() bool {
			a.resetsAfter.Add(1)
			return resetConn(w, &a.resets)
		}, true
	}
	return no, true
}

// resetConn closes w's connection with a TCP RST (SO_LINGER 0), counting it
// in n, and reports whether it could.
func resetConn(w http.ResponseWriter, n *atomic.Int64) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
	n.Add(1)
	return true
}

// Faults returns the requests answered 503, the connections reset, and of
// those the resets after the request was applied.
func (a *API) Faults() (unavailable, resets, resetsAfter int64) {
	return a.unavailable.Load(), a.resets.Load(), a.resetsAfter.Load()
}

// Charges returns how many times each item was charged (POST), by its id.
func (a *API) Charges() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[string]int, len(a.charges))
	for k, v := range a.charges {
		m[k] = v
	}
	return m
}

// Charged returns when each item was first charged (POST), by its id.
func (a *API) Charged() map[string]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[string]time.Time, len(a.charged))
	for k, v := range a.charged {
		m[k] = v
	}
	return m
}

// Admitted returns the requests the limit let through.
func (a *API) Admitted() int64 { return a.admitted.Load() }

// Refused returns the requests answered 429.
func (a *API) Refused() int64 { return a.refused.Load() }

// Served returns how many times each item was served, by its id.
func (a *API) Served() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[string]int, len(a.items))
	for k, v := range a.items {
		m[k] = v
	}
	return m
}

// Span returns the time from the first request admitted to the latest.
func (a *API) Span() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last.Sub(a.first)
}

// Close stops the API, waiting a few seconds at most for requests in
// flight, and returns once its goroutines are done.
func (a *API) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.srv.Shutdown(ctx)
	if serr := <-a.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

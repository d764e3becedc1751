// Package demoapi is the strict rate-limited API the examples call: GET
// /items/{id} answers 200 with a small JSON body, behind package middleware
// allowing at most a fixed number of requests in any 1-second window (an
// exact sliding-window log, pace.SlidingLog). Excess requests get 429 with
// Retry-After (whole seconds, rounded up) and the IETF RateLimit fields, as
// the middleware writes them. It counts what it admitted and refused, and
// how often it served each item, so that an example can report from the
// server's side.
package demoapi

import (
	"context"
	"errors"
	"fmt"
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

	mu          sync.Mutex
	items       map[string]int // times each item was served
	first, last time.Time      // the first and the latest request admitted
}

// Start starts the API on a free loopback port, limited to limit requests
// in any second. With omitHeaders the RateLimit fields are left out (a
// server that does not disclose its limit), so that a client that is too
// fast meets 429s instead of pacing itself from them.
func Start(limit int, omitHeaders bool) (*API, error) {
	a := &API{served: make(chan error, 1), items: map[string]int{}}
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
		now := time.Now()
		a.mu.Lock()
		a.items[r.PathValue("id")]++
		if a.first.IsZero() {
			a.first = now
		}
		a.last = now
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"id\":%q,\"status\":\"ok\"}\n", r.PathValue("id"))
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

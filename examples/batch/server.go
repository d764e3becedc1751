package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/middleware"
)

// api is the local API the demo calls: GET /items/{id} answers 200 with a
// small JSON body, behind package middleware allowing at most a fixed number
// of requests in any 1-second window (an exact sliding-window log). Excess
// requests get 429 with Retry-After (whole seconds, rounded up) and the
// IETF RateLimit fields, as the middleware writes them; with omitHeaders
// the RateLimit fields are left out (a server that does not disclose its
// limit), so that a client that is too fast meets 429s instead of pacing
// itself from them.
type api struct {
	url      string // base URL, http://127.0.0.1:port
	srv      *http.Server
	served   chan error   // Serve's result
	admitted atomic.Int64 // requests the limit let through
	refused  atomic.Int64 // requests answered 429
}

// startAPI starts the API on a free loopback port, limited to limit
// requests in any second, its RateLimit fields left out if omitHeaders.
func startAPI(limit int, omitHeaders bool) (*api, error) {
	a := &api{served: make(chan error, 1)}
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
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"id\":%q,\"status\":\"ok\"}\n", r.PathValue("id"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the local API: %w", err)
	}
	a.url = "http://" + ln.Addr().String()
	a.srv = &http.Server{Handler: m.Handler(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { a.served <- a.srv.Serve(ln) }()
	return a, nil
}

// close stops the API, waiting a few seconds at most for requests in
// flight, and returns once its goroutines are done.
func (a *api) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.srv.Shutdown(ctx)
	if serr := <-a.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

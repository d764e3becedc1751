package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
)

// The fake API's fault schedule (see the package documentation).
const (
	throttleEvery    = 9  // every 9th request: 429
	unavailableEvery = 13 // every 13th request not throttled: 503 before processing
	troubleCycle     = 6  // of every 6 charges made, the 1st is dropped, the 4th answered 503
	retryAfterMs     = 20 // the 429's retry-after-ms
)

// chargeRequest is the body of POST /v1/charges.
type chargeRequest struct {
	Order    string `json:"order"`
	Customer string `json:"customer"`
	Amount   int64  `json:"amount"` // in cents
	Currency string `json:"currency"`
}

// charge is a charge the API made, as it answers it.
type charge struct {
	ID       string `json:"id"`
	Order    string `json:"order"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// stored is what the idempotency store keeps per key.
type stored struct {
	req    chargeRequest
	charge charge
}

// fakeAPI is a payment API on loopback that deduplicates charges by their
// Idempotency-Key and misbehaves on a fixed schedule. It is safe for
// concurrent use; one mutex serializes requests, so a key is never
// processed twice at once.
type fakeAPI struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests int                // requests received
	made     int                // charges made
	byKey    map[string]*stored // the idempotency store
	perOrder map[string]int     // charges made per order: must never exceed 1
	history  map[string][]string
	counts   faultCounts
}

// faultCounts is how often the API misbehaved, and how often it replayed.
type faultCounts struct {
	throttled   int // 429 before processing
	unavailable int // 503 before processing
	dropped     int // charge made, connection dropped
	failedAfter int // charge made, 503 answered
	replayed    int // retries answered from the idempotency store
}

func newFakeAPI() *fakeAPI {
	a := &fakeAPI{byKey: map[string]*stored{}, perOrder: map[string]int{}, history: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", a.charge)
	a.srv = httptest.NewServer(mux)
	return a
}

func (a *fakeAPI) close() { a.srv.Close() }

// charge handles POST /v1/charges.
func (a *fakeAPI) charge(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var req chargeRequest
	if key == "" {
		http.Error(w, "Idempotency-Key header required", http.StatusBadRequest)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Order == "" || req.Amount <= 0 {
		http.Error(w, "malformed charge", http.StatusBadRequest)
		return
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests++
	note := func(what string) { a.history[key] = append(a.history[key], what) }
	switch {
	case a.requests%throttleEvery == 0:
		a.counts.throttled++
		note("429")
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Retry-After-Ms", fmt.Sprint(retryAfterMs))
		http.Error(w, "rate limited", http.StatusTooManyRequests)
		return
	case a.requests%unavailableEvery == 0:
		a.counts.unavailable++
		note("503")
		http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
		return
	}

	if s, ok := a.byKey[key]; ok { // a retry: answer what the first attempt got
		if s.req != req {
			note("422")
			http.Error(w, "Idempotency-Key reused with a different request", http.StatusUnprocessableEntity)
			return
		}
		a.counts.replayed++
		note("replayed")
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, s.charge)
		return
	}

	a.made++
	a.perOrder[req.Order]++
	c := charge{ID: fmt.Sprintf("ch_%04d", a.made), Order: req.Order, Amount: req.Amount, Currency: req.Currency}
	a.byKey[key] = &stored{req: req, charge: c}
	switch a.made % troubleCycle {
	case 1:
		a.counts.dropped++
		note("charged, connection dropped")
		drop(w)
	case 4:
		a.counts.failedAfter++
		note("charged, 503")
		http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
	default:
		note("charged")
		writeJSON(w, c)
	}
}

// drop closes the request's connection with no answer, resetting it. If
// the connection cannot be taken over (never the case for the HTTP/1.1
// connections of httptest.Server), it answers 503 instead.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // RST: the client reads "connection reset"
	}
	_ = conn.Close()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// ledger is a copy of the API's books.
type ledger struct {
	requests int
	made     int
	perOrder map[string]int
	history  map[string][]string
	faultCounts
}

func (a *fakeAPI) ledger() ledger {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := ledger{requests: a.requests, made: a.made, perOrder: maps.Clone(a.perOrder), history: map[string][]string{}, faultCounts: a.counts}
	for k, v := range a.history {
		l.history[k] = append([]string(nil), v...)
	}
	return l
}

package main

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// serverSpec describes one scenario's server. Every library gets a fresh
// server built from the same spec (and the same seed), so that what one
// library did never reaches another's counts.
//
// Each request is decided once, at arrival (the moment the handler starts,
// after the request's header has been read), in this order:
//
//  1. fault injection, when pDrop or p503 is set: one draw per arrival
//     from a PCG seeded with seed, so the n-th arrival meets the same fault
//     in every run and for every library. A dropped request (the connection
//     is hijacked and closed, nothing answered) and a 503 (no Retry-After)
//     stand in front of the limit: they are not entered in its log.
//  2. always: 429 with Retry-After.
//  3. throttleFor: 429 with Retry-After to everything that arrives within
//     throttleFor of the server's first arrival.
//  4. limit/window: an exact sliding log of admitted arrival times; a
//     request is admitted when fewer than limit admitted arrivals lie in
//     (now−window, now], and is then entered in the log; otherwise 429
//     with Retry-After. Refused requests are not entered (as nginx does).
//  5. 200 with a short body.
type serverSpec struct {
	limit       int
	window      time.Duration
	throttleFor time.Duration
	always      bool
	retryAfter  int // seconds, in every 429

	p503, pDrop float64
	seed        uint64
}

// serverStats is what the server counted.
type serverStats struct {
	arrivals int // every request that reached the handler
	ok       int
	s429     int
	s503     int
	drops    int
	// inPause counts arrivals during a pause the server had already
	// announced: a 429 with Retry-After: s whose answer was flushed to the
	// connection at t announces a pause [t, t+s); overlapping pauses merge.
	// The server cannot tell whether the client had read the answer yet,
	// so requests already on their way (a burst sent before any answer)
	// count too.
	inPause     int
	first, last time.Time
}

// perSecond is the server's arrival rate between its first and last
// arrival.
func (s serverStats) perSecond() float64 {
	d := s.last.Sub(s.first).Seconds()
	if s.arrivals < 2 || d <= 0 {
		return 0
	}
	return float64(s.arrivals-1) / d
}

type server struct {
	*httptest.Server
	spec serverSpec

	mu         sync.Mutex
	st         serverStats
	log        []time.Time // admitted arrivals, oldest first
	pauseFrom  time.Time   // the announced pause, [pauseFrom, pauseUntil)
	pauseUntil time.Time
	rng        *rand.Rand
}

type verdict int

const (
	answerOK verdict = iota
	answer429
	answer503
	answerDrop
)

func newServer(spec serverSpec) *server {
	s := &server{spec: spec, rng: rand.New(rand.NewPCG(spec.seed, spec.seed^0x9e3779b97f4a7c15))}
	s.Server = httptest.NewServer(s)
	return s
}

// stop closes every connection, the client's kept-alive ones included, and
// returns the counts.
func (s *server) stop() serverStats {
	s.CloseClientConnections()
	s.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

func (s *server) decide(now time.Time) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st
	st.arrivals++
	if st.first.IsZero() {
		st.first = now
	}
	st.last = now
	if !now.Before(s.pauseFrom) && now.Before(s.pauseUntil) {
		st.inPause++
	}
	if s.spec.pDrop > 0 || s.spec.p503 > 0 {
		u := s.rng.Float64()
		switch {
		case u < s.spec.pDrop:
			st.drops++
			return answerDrop
		case u < s.spec.pDrop+s.spec.p503:
			st.s503++
			return answer503
		}
	}
	throttle := s.spec.always ||
		(s.spec.throttleFor > 0 && now.Sub(st.first) < s.spec.throttleFor)
	if !throttle && s.spec.limit > 0 {
		from := now.Add(-s.spec.window)
		i := 0
		for i < len(s.log) && !s.log[i].After(from) {
			i++
		}
		s.log = s.log[i:]
		if len(s.log) < s.spec.limit {
			s.log = append(s.log, now)
		} else {
			throttle = true
		}
	}
	if throttle {
		st.s429++
		return answer429
	}
	st.ok++
	return answerOK
}

func (s *server) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	switch s.decide(time.Now()) {
	case answerDrop:
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
			return
		}
		w.WriteHeader(http.StatusInternalServerError) // not reached over HTTP/1.1
	case answer503:
		w.WriteHeader(http.StatusServiceUnavailable)
	case answer429:
		w.Header().Set("Retry-After", strconv.Itoa(s.spec.retryAfter))
		w.WriteHeader(http.StatusTooManyRequests)
		w.(http.Flusher).Flush()
		s.announce(time.Now())
	default:
		w.Write([]byte("ok\n"))
	}
}

// announce records the pause a 429 flushed at t asked for.
func (s *server) announce(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	until := t.Add(time.Duration(s.spec.retryAfter) * time.Second)
	if t.After(s.pauseUntil) {
		s.pauseFrom = t
	}
	if until.After(s.pauseUntil) {
		s.pauseUntil = until
	}
}

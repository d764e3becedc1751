package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/retry"
)

// adaptiveScenario is the scenario of pace's adaptive rate: a server
// limited by a token bucket of 20 a second, burst 5, that answers 429
// without Retry-After or any quota header; a client configured at twice
// that (pace: LeakyBucket(PerSecond(40))), 2,000 calls from 16 goroutines.
// The figures are counted after the first 10 s (the time the rate takes to
// find the server's): the share of calls answered 429 and the throughput
// of successful calls against the server's 20 a second. Only pace runs it:
// the peers have no adaptive rate.
const (
	adaptiveName    = "adaptive-2x"
	adaptiveRate    = 20
	adaptiveBurst   = 5
	adaptiveCalls   = 2000
	adaptiveWorkers = 16
	adaptiveWarmup  = 10 * time.Second
)

const adaptiveAbout = "server: token bucket 20/s burst 5, 429 without Retry-After or quota headers; " +
	"client configured at 2× (pace: LeakyBucket(PerSecond(40), LeakyOptions{Queue: 1000}), MaxAttempts 10); " +
	"2,000 calls from 16 goroutines; after the first 10 s: 429s per call (target ≤ 5%) and throughput (target ≥ 90% of 20/s)"

// bucketServer is the scenario's server: a token bucket on arrival times.
type bucketServer struct {
	*httptest.Server
	mu       sync.Mutex
	tokens   float64
	last     time.Time
	start    time.Time
	arrivals []arrival
}

type arrival struct {
	at time.Time
	ok bool
}

func newBucketServer() *bucketServer {
	s := &bucketServer{tokens: adaptiveBurst}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(time.Now()) {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "ok\n")
	}))
	return s
}

func (s *bucketServer) admit(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.IsZero() {
		s.start, s.last = now, now
	}
	s.tokens = min(adaptiveBurst, s.tokens+now.Sub(s.last).Seconds()*adaptiveRate)
	s.last = now
	ok := s.tokens >= 1
	if ok {
		s.tokens--
	}
	s.arrivals = append(s.arrivals, arrival{now, ok})
	return ok
}

// runAdaptive runs the scenario runs times and prints its table.
func runAdaptive(runs int) {
	fmt.Printf("### %s\n\n%s\n\n", adaptiveName, adaptiveAbout)
	fmt.Println("| run | elapsed | calls failed | 429s, first 10 s | 429s after 10 s | calls after 10 s | 429s per call after 10 s | throughput after 10 s | of 20/s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for run := 1; run <= runs; run++ {
		srv := newBucketServer()
		base := newBase()
		tr := &pace.Transport{Base: base, Retry: retry.Policy{MaxAttempts: 10}, Limits: pace.Hosts{pace.DefaultHost: {Limit: pace.LeakyBucket(pace.PerSecond(2*adaptiveRate), pace.LeakyOptions{Queue: 1000})}}}
		client := &http.Client{Transport: tr}
		next := make(chan int, adaptiveCalls)
		for i := range adaptiveCalls {
			next <- i
		}
		close(next)
		var mu sync.Mutex
		var done []time.Time
		failed := 0
		start := time.Now()
		var wg sync.WaitGroup
		for range adaptiveWorkers {
			wg.Go(func() {
				for i := range next {
					reason := call(client, fmt.Sprintf("%s/items/%d", srv.URL, i), callTimeout)
					mu.Lock()
					if reason != "" {
						failed++
					} else {
						done = append(done, time.Now())
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		srv.CloseClientConnections()
		srv.Close()
		base.CloseIdleConnections()
		warm := start.Add(adaptiveWarmup)
		early429, late429, lateCalls := 0, 0, 0
		for _, a := range srv.arrivals {
			switch {
			case a.ok:
			case a.at.Before(warm):
				early429++
			default:
				late429++
			}
		}
		for _, d := range done {
			if !d.Before(warm) {
				lateCalls++
			}
		}
		tput := float64(lateCalls) / (elapsed - adaptiveWarmup).Seconds()
		fmt.Printf("| %d | %.1f s | %d | %d | %d | %d | %.1f%% | %.1f/s | %.0f%% |\n", run, elapsed.Seconds(), failed,
			early429, late429, lateCalls, 100*float64(late429)/float64(max(lateCalls, 1)), tput, 100*tput/adaptiveRate)
	}
	fmt.Println()
}

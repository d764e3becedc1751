package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/pacehttp/pace"
)

// scenario is one workload against one kind of server.
type scenario struct {
	name  string
	about string
	// ideal is the shortest elapsed time the server's limit allows for the
	// workload; 0 when there is none (the calls are meant to fail).
	ideal   time.Duration
	server  serverSpec
	pacing  *pacing // nil: the client does not pace
	calls   int
	workers int // goroutines sharing the calls; calls == workers: all at once
	// attempts per call, the first included; 0: each library's default
	// (pace 3, go-retryablehttp 5, failsafe-go 3).
	attempts int
	timeout  time.Duration // context timeout of each call
	extra    []column      // columns beyond the common ones
}

// callTimeout bounds every call of the scenarios that set no timeout of
// their own, so that a stuck library cannot hang the command.
const callTimeout = 60 * time.Second

func scenarios(seed uint64) []*scenario {
	return []*scenario{
		{
			name: "exact-limit-sliding",
			about: "server: at most 5 requests in any 1 s (sliding log), else 429 Retry-After: 1; " +
				"200 calls from 8 goroutines; client paced at exactly 5/s (pace: LeakyBucket(PerSecond(5), LeakyOptions{Queue: 1000})); ideal (n−1)/rate",
			ideal:   199 * time.Second / 5,
			server:  serverSpec{limit: 5, window: time.Second, retryAfter: 1},
			pacing:  &pacing{perSecond: 5, pace: pace.LeakyBucket(pace.PerSecond(5), pace.LeakyOptions{Queue: 1000})},
			calls:   200,
			workers: 8,
		},
		{
			name: "herd",
			about: "server: 429 Retry-After: 2 to everything arriving in the 2 s after its first request, then 200; " +
				"50 concurrent GETs; client paced at 10/s (pace: LeakyBucket(PerSecond(10), LeakyOptions{Queue: 100})); " +
				"ideal 2 s + 49/10 s (target for pace ≤ 7.1 s)",
			ideal:   2*time.Second + 49*time.Second/10,
			server:  serverSpec{throttleFor: 2 * time.Second, retryAfter: 2},
			pacing:  &pacing{perSecond: 10, pace: pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Queue: 100})},
			calls:   50,
			workers: 50,
		},
		{
			name: "bucket-vs-window",
			about: "server: at most 10 requests in any 1 s (sliding log), else 429 Retry-After: 1; " +
				"200 calls from 8 goroutines; client a token bucket of 10 at 10/s (pace: TokenBucket(PerSecond(10), 10)); ideal (n−1)/rate",
			ideal:   199 * time.Second / 10,
			server:  serverSpec{limit: 10, window: time.Second, retryAfter: 1},
			pacing:  &pacing{perSecond: 10, burst: 10, pace: pace.TokenBucket(pace.PerSecond(10), 10)},
			calls:   200,
			workers: 8,
		},
		{
			name: "always-throttle",
			about: "server: 429 Retry-After: 1 to everything; 50 concurrent callers, no client pacing, " +
				"3 attempts (pace MaxAttempts 3, go-retryablehttp RetryMax 2, failsafe-go WithMaxAttempts(3)), " +
				"12 s context timeout per call; every call fails, what matters is how fast and how hard",
			server:   serverSpec{always: true, retryAfter: 1},
			calls:    50,
			workers:  50,
			attempts: 3,
			timeout:  12 * time.Second,
			extra:    []column{colPerSecond},
		},
		{
			name: "flaky-5rps",
			about: fmt.Sprintf("server: at most 5 requests in any 1 s (sliding log, 429 Retry-After: 1), "+
				"and in front of it 5%% of arrivals answered 503 (no Retry-After) and 5%% dropped (connection closed, no answer), "+
				"seed %d; 200 GETs from 8 goroutines; client paced at exactly 5/s (pace: LeakyBucket(PerSecond(5), LeakyOptions{Queue: 1000})); ideal (n−1)/rate", seed),
			ideal:   199 * time.Second / 5,
			server:  serverSpec{limit: 5, window: time.Second, retryAfter: 1, p503: 0.05, pDrop: 0.05, seed: seed},
			pacing:  &pacing{perSecond: 5, pace: pace.LeakyBucket(pace.PerSecond(5), pace.LeakyOptions{Queue: 1000})},
			calls:   200,
			workers: 8,
			extra:   []column{col503, colDrops},
		},
	}
}

// result is one library's run of one scenario.
type result struct {
	peer    string
	run     int
	elapsed time.Duration
	server  serverStats
	failed  int
	latency []time.Duration // of every call, in completion order
	reasons map[string]int  // why calls failed
	gaveUp  map[string]int  // why the library stopped retrying, where it says
}

// runOne runs sc once for p against a fresh server.
func runOne(sc *scenario, p peer, run int) result {
	srv := newServer(sc.server)
	base := newBase()
	res := result{peer: p.name, run: run, reasons: map[string]int{}, gaveUp: map[string]int{}}
	var mu sync.Mutex
	gaveUp := func(why string) {
		mu.Lock()
		res.gaveUp[why]++
		mu.Unlock()
	}
	client := &http.Client{Transport: p.build(sc, base, gaveUp)}

	timeout := sc.timeout
	if timeout == 0 {
		timeout = callTimeout
	}
	next := make(chan int, sc.calls)
	for i := range sc.calls {
		next <- i
	}
	close(next)

	var wg sync.WaitGroup
	start := time.Now()
	for range sc.workers {
		wg.Go(func() {
			for i := range next {
				t0 := time.Now()
				reason := call(client, fmt.Sprintf("%s/items/%d", srv.URL, i), timeout)
				d := time.Since(t0)
				mu.Lock()
				res.latency = append(res.latency, d)
				if reason != "" {
					res.failed++
					res.reasons[reason]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.server = srv.stop()
	base.CloseIdleConnections()
	return res
}

// call sends one GET and reads the whole answer; it returns "" for a 200,
// else why the call failed.
func call(client *http.Client, u string, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return errReason(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Sprintf("status %d", resp.StatusCode)
	case err != nil:
		return "body: " + errReason(err)
	}
	return ""
}

// errReason is err with what names one call taken out (its URL, the
// server's port, measured durations), so that failures of the same kind
// are counted together.
func errReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	if m := lastResult.FindStringSubmatch(s); m != nil {
		s = s[:strings.Index(s, m[0])] + "last result: status " + m[1]
	}
	s = callURL.ReplaceAllString(s, "URL")
	s = hostPort.ReplaceAllString(s, "HOST")
	s = duration.ReplaceAllString(s, "D")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

var (
	callURL    = regexp.MustCompile(`(GET )?https?://127\.0\.0\.1:\d+/items/\d+`)
	hostPort   = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	duration   = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m)\b`)
	lastResult = regexp.MustCompile(`last result: &\{(\d+) .*`) // failsafe-go prints the *http.Response
)

// runScenario runs sc runs times for every peer. The peers of one run go
// at the same time, each against its own server and its own http.Transport
// (the workloads are a few requests a second, so they do not compete for
// the CPU), unless serial is set.
func runScenario(sc *scenario, runs int, serial bool) []result {
	var out []result
	for run := 1; run <= runs; run++ {
		rs := make([]result, len(peers))
		var wg sync.WaitGroup
		for i, p := range peers {
			if serial {
				rs[i] = runOne(sc, p, run)
				continue
			}
			wg.Go(func() { rs[i] = runOne(sc, p, run) })
		}
		wg.Wait()
		out = append(out, rs...)
	}
	return out
}

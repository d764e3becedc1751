package pace

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestTransportQuotaWholeSeconds: a server with a quota of 20 requests per
// fixed window of 4 s states the time to its reset in whole seconds (IETF
// t, draft-ietf-httpapi-ratelimit-headers-11 §4.1.2; or a delta
// X-RateLimit-Reset), rounded up or down. A client with no limit
// configured makes 120 calls from 8 goroutines, starting at several
// instants into a window. Rounded up, no call meets a 429 and all are
// done within 24 s: six windows, each used whole, the last spread over
// nearly all of it (23.8 s at most). Taking the latest answer's reset
// left each window's last requests to the next: up to 27.5 s. Rounded
// down, the reset is up to a second early: the figures are logged, not
// bounded (see TestQuotaLearnWholeSeconds).
func TestTransportQuotaWholeSeconds(t *testing.T) {
	for _, family := range []string{"ietf", "x-ratelimit"} {
		for _, floor := range []bool{false, true} {
			for _, phase := range []time.Duration{0, 300 * time.Millisecond, 1700 * time.Millisecond, 3900 * time.Millisecond} {
				synctest.Test(t, func(t *testing.T) {
					time.Sleep(phase)
					srv := &quotaServer{n: 20, per: 4 * time.Second, family: family, floor: floor}
					tr := &Transport{Base: srv}
					start := time.Now()
					calls := make(chan int, 120)
					for i := range 120 {
						calls <- i
					}
					close(calls)
					var wg sync.WaitGroup
					var mu sync.Mutex
					failed := 0
					for range 8 {
						wg.Go(func() {
							for range calls {
								req, _ := http.NewRequest("GET", "http://api.test/v1", nil)
								resp, err := tr.RoundTrip(req)
								if err != nil {
									mu.Lock()
									failed++
									mu.Unlock()
									continue
								}
								resp.Body.Close()
							}
						})
					}
					wg.Wait()
					took := srv.last.Sub(start)
					t.Logf("%s floor=%v phase %v: %d × 429, %d served, %d failed, done in %v", family, floor, phase, srv.tooMany, srv.ok, failed, took)
					if !floor {
						assert.Zero(t, srv.tooMany, "429s")
						assert.Zero(t, failed)
						assert.LessOrEqual(t, took, 24*time.Second)
					}
				})
			}
		}
	}
}

// wholeSecondServer is a fixed window of n requests per per (aligned to
// 0), stating the time to its end in whole seconds, rounded up or down.
type wholeSecondServer struct {
	n     int64
	per   int64
	floor bool

	window, used int64
}

// answer admits a request at now or refuses it, and states the remaining
// count and the whole seconds to the window's end.
func (s *wholeSecondServer) answer(now int64) (ok bool, left, secs int64) {
	if w := now / s.per; w != s.window {
		s.window, s.used = w, 0
	}
	if ok = s.used < s.n; ok {
		s.used++
	}
	d := (s.window+1)*s.per - now
	secs = (d + int64(time.Second) - 1) / int64(time.Second)
	if s.floor {
		secs = d / int64(time.Second)
	}
	return ok, s.n - s.used, secs
}

// paceRun sends calls requests one after the other, each when the pace of
// th lets it (no limit: the quota's pace alone), to srv, from start, with
// no delay between departure and answer. A refusal pauses the key until
// the window's end as the server states it, a second at least (a
// Retry-After). It returns the 429s and when the last success left.
func paceRun(srv *wholeSecondServer, start int64, calls int) (refused int, last int64) {
	var th keyThrottle
	now, paused := start, int64(0)
	for served := 0; served < calls; {
		now = max(th.paceFrom(now), paused)
		th.paced(now)
		ok, left, secs := srv.answer(now)
		if !ok {
			refused++
			paused = now + max(secs, 1)*int64(time.Second)
			continue
		}
		served++
		last = now
		if secs > 0 { // t=0 names no reset (the Transport's quota)
			if d := th.learn(now, left, secs*int64(time.Second), "", 0, 0); d > 0 {
				paused = now + d
			}
		}
	}
	return refused, last
}

// TestQuotaLearnWholeSeconds drives the quota rule (keyThrottle.learn) on
// explicit time against fixed windows of 20 per 4 s that state their reset
// in whole seconds, rounded up and rounded down, from starts all through a
// window: 120 calls, one at a time. Rounded up (as express-rate-limit's
// source/headers.ts and pace's middleware do), no call meets a 429 and
// each run is done within 24 s; taking the latest answer's reset took up
// to 26.5 s. Rounded down, a spent quota's reset comes up to a second
// early, and "t=0" names none: calls meet 429s with either rule. That is
// logged, not bounded: no rule can tell the two roundings apart from one
// window's answers, and pausing a second past every stated reset would
// cost servers that round up.
func TestQuotaLearnWholeSeconds(t *testing.T) {
	for _, floor := range []bool{false, true} {
		worst, refused := int64(0), 0
		for phase := int64(0); phase < int64(4*time.Second); phase += int64(50 * time.Millisecond) {
			srv := &wholeSecondServer{n: 20, per: int64(4 * time.Second), floor: floor}
			start := int64(1000*time.Hour) + phase
			r, last := paceRun(srv, start, 120)
			refused += r
			worst = max(worst, last-start)
		}
		t.Logf("floor=%v: %d × 429 over 80 runs; the slowest took %v", floor, refused, time.Duration(worst))
		if !floor {
			assert.Zero(t, refused, "429s")
			assert.LessOrEqual(t, time.Duration(worst), 24*time.Second)
		}
	}
}

package pace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
	"github.com/pacehttp/pace/throttle"
)

// The throttle of a key as the Transport and Keyed apply it, in
// testing/synctest bubbles over in-memory servers (internal/testhttp), so
// that every instant below is exact fake time.

// ctxServer is a test Base that records the instant (since start) and
// host of each request and answers with handle, which sees the request
// itself (and so its context).
type ctxServer struct {
	start  time.Time
	handle func(n int, req *http.Request) (*http.Response, error)

	mu sync.Mutex
	at []time.Duration
}

func (s *ctxServer) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.at = append(s.at, time.Since(s.start))
	n := len(s.at)
	s.mu.Unlock()
	return s.handle(n, req)
}

func (s *ctxServer) arrivals() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.at...)
}

// get sends a GET of url with ctx through tr and returns the status (0 on
// an error) and the error, closing the body. Safe on any goroutine.
func get(t *testing.T, tr *Transport, ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Error(err)
		return 0, err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// since returns the instants of rs after start.
func since(start time.Time, rs []testhttp.Received) []time.Duration {
	at := make([]time.Duration, len(rs))
	for i, r := range rs {
		at[i] = r.At.Sub(start)
	}
	return at
}

// countIn counts the instants in [from, to).
func countIn(at []time.Duration, from, to time.Duration) int {
	n := 0
	for _, a := range at {
		if a >= from && a < to {
			n++
		}
	}
	return n
}

const ms = time.Millisecond

// TestTransportThrottlePausesTheWholeKey: a 429 with Retry-After pauses
// the whole key, not only the request that met it. 50 concurrent GETs;
// the server answers, 10 ms later, 429 with Retry-After: 2 to every
// request that reaches it in its first 2 s and 200 after. No request of
// the key reaches the server between the first wave and the end of the
// pause, all 50 succeed, and there are 100 attempts (75 when half the
// requests start during the pause and wait it out unsent). A request to
// another host, sent during the pause, leaves at once.
func TestTransportThrottlePausesTheWholeKey(t *testing.T) {
	tests := []struct {
		name         string
		late         int           // requests started after the first wave
		lateAt       time.Duration // when they start
		wantAttempts int
	}{
		{"all at once", 0, 0, 100},
		{"half during the pause", 25, 500 * ms, 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					if r.URL == "http://other.test/" {
						return testhttp.Response(http.StatusOK), nil
					}
					time.Sleep(10 * ms) // the server's time to answer
					if r.At.Sub(start) < 2*time.Second {
						return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "2"), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				tr := &Transport{Base: srv}
				var wg sync.WaitGroup
				codes := make([]int, 50)
				for i := range 50 {
					wg.Go(func() {
						if i >= 50-tt.late {
							time.Sleep(tt.lateAt)
						}
						code, err := get(t, tr, t.Context(), "http://api.test/items")
						assert.NoError(t, err, "request %d", i)
						codes[i] = code
					})
				}
				wg.Go(func() {
					time.Sleep(time.Second)
					code, err := get(t, tr, t.Context(), "http://other.test/")
					assert.NoError(t, err)
					assert.Equal(t, http.StatusOK, code)
					assert.Equal(t, time.Second, time.Since(start), "another key waited for the pause")
				})
				wg.Wait()
				for i, c := range codes {
					assert.Equal(t, http.StatusOK, c, "request %d", i)
				}
				var key []time.Duration
				for _, r := range srv.Requests() {
					if r.URL != "http://other.test/" {
						key = append(key, r.At.Sub(start))
					}
				}
				assert.Zero(t, countIn(key, 1, 2*time.Second), "requests inside the pause: %v", key)
				assert.Len(t, key, tt.wantAttempts)
			})
		})
	}
}

// TestTransportThrottleOneProbePerPause: 20 concurrent GETs, no Limits;
// the server answers, 10 ms later, 429 with Retry-After: 1 to every
// request that reaches it in its first 3 s and 200 after. All 20 meet a
// 429 at 0 s; after that exactly one request reaches the server per pause
// end (at 1.01 and 2.02 s, both 429; at 3.03 s, the 200), and only after
// its answer the other 19: 22 429s and 42 requests in all, against 80
// 429s (20 per pause end) without a probe. MaxAttempts is 4 because a
// request may be the probe of several pauses in a row.
func TestTransportThrottleOneProbePerPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			time.Sleep(10 * ms)
			if r.At.Sub(start) < 3*time.Second {
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, Retry: retry.Policy{MaxAttempts: 4}}
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				getOK(t, tr, "http://api.test/items", "request %d", i)
			})
		}
		wg.Wait()
		perInstant := map[time.Duration]int{}
		n429 := 0
		for _, at := range since(start, srv.Requests()) {
			perInstant[at]++
			if at < 3*time.Second {
				n429++
			}
		}
		want := map[time.Duration]int{0: 20, 1010 * ms: 1, 2020 * ms: 1, 3030 * ms: 1, 3040 * ms: 19}
		assert.Equal(t, want, perInstant, "requests per instant")
		assert.Equal(t, 22, n429, "429s")
	})
}

// TestTransportThrottleCancelledProbePassesOn: request A is throttled
// (Retry-After: 1) and, at 1 s, is the probe; five requests start at
// 1.2 s and hold behind it. A's context is cancelled at 1.5 s while the
// server holds its probe: A fails with context.Canceled, and at the same
// instant another request becomes the probe, gets 200, and the other four
// follow. Arrivals: 0, 1 s, then five at 1.5 s.
func TestTransportThrottleCancelledProbePassesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &ctxServer{start: time.Now(), handle: func(n int, req *http.Request) (*http.Response, error) {
			switch n {
			case 1:
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
			case 2: // A's probe: held until its context ends
				<-req.Context().Done()
				return nil, req.Context().Err()
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv}
		ctxA, cancelA := context.WithCancel(t.Context())
		defer cancelA()
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := get(t, tr, ctxA, "http://api.test/")
			assert.ErrorIs(t, err, context.Canceled, "A")
			assert.Equal(t, 1500*ms, time.Since(srv.start), "A ended")
		})
		time.Sleep(1200 * ms)
		for i := range 5 {
			wg.Go(func() {
				getOK(t, tr, "http://api.test/", "waiter %d", i)
			})
		}
		time.Sleep(300 * ms)
		cancelA()
		wg.Wait()
		want := []time.Duration{0, time.Second, 1500 * ms, 1500 * ms, 1500 * ms, 1500 * ms, 1500 * ms}
		assert.Equal(t, want, srv.arrivals())
	})
}

// TestTransportThrottleHungProbeHoldsItsRole: a probe holds its role until
// its answer, however slow, and the requests waiting behind it are bounded
// by their own MaxWait, nothing sent. A 429 with Retry-After: 0 pauses the
// key for retry.MinThrottlePause; the probe (A) leaves at 60 ms and the server
// holds it 4 s; four requests start at 80 ms with MaxWait 2 s and fail with
// ErrWaitTooLong at 2.08 s. A's 200 at 4.06 s closes the key: a request
// after it leaves at once. Arrivals: 0, 60 ms, 4.06 s.
func TestTransportThrottleHungProbeHoldsItsRole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &ctxServer{start: time.Now(), handle: func(n int, req *http.Request) (*http.Response, error) {
			switch n {
			case 1:
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "0"), nil
			case 2: // A's probe: the server hangs
				select {
				case <-time.After(4 * time.Second):
				case <-req.Context().Done():
					return nil, req.Context().Err()
				}
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, MaxWait: 2 * time.Second, Retry: retry.Policy{MaxAttempts: 1}}
		code, err := get(t, tr, t.Context(), "http://api.test/")
		require.NoError(t, err)
		require.Equal(t, http.StatusTooManyRequests, code)
		time.Sleep(60 * ms)
		var wg sync.WaitGroup
		wg.Go(func() {
			getOK(t, tr, "http://api.test/", "A, the hung probe")
			assert.Equal(t, 4060*ms, time.Since(srv.start), "A ended")
		})
		time.Sleep(20 * ms)
		for i := range 4 {
			wg.Go(func() {
				_, err := get(t, tr, t.Context(), "http://api.test/")
				assert.ErrorIs(t, err, ErrWaitTooLong, "waiter %d", i)
				assert.Equal(t, 2080*ms, time.Since(srv.start), "waiter %d ended", i)
			})
		}
		wg.Wait()
		getOK(t, tr, "http://api.test/", "after the probe's answer")
		want := []time.Duration{0, 60 * ms, 4060 * ms}
		assert.Equal(t, want, srv.arrivals())
	})
}

// TestTransportThrottleProbeWaitersObeyTheirLimits: while a probe is in
// flight (sent at 10 s, answered 200 at 19 s), requests waiting for it
// honour their own limits (MaxWait 5 s): one cancelled 1 s into its wait
// fails then with context.Canceled; one with a 1 s timeout fails at its
// deadline with ErrWaitExceedsDeadline (and context.DeadlineExceeded);
// one that would wait longer than MaxWait fails when MaxWait is reached
// with ErrWaitTooLong. All three are *WaitErrors with Delay 0 (a probe's
// end is not known in advance), and none is sent. A request that starts
// at 15 s waits 4 s and gets the 200 at 19 s.
func TestTransportThrottleProbeWaitersObeyTheirLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &ctxServer{start: time.Now(), handle: func(n int, req *http.Request) (*http.Response, error) {
			switch n {
			case 1:
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "10"), nil
			case 2:
				time.Sleep(9 * time.Second) // the probe, answered at 19 s
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, MaxWait: 5 * time.Second}
		var wg sync.WaitGroup
		wg.Go(func() {
			getOK(t, tr, "http://api.test/", "the probe's request")
		})
		time.Sleep(10500 * ms)
		tests := []struct {
			name    string
			ctx     func() (context.Context, context.CancelFunc)
			want    []error
			wantEnd time.Duration
		}{
			{"cancelled", func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(t.Context())
				time.AfterFunc(time.Second, cancel)
				return ctx, cancel
			}, []error{context.Canceled}, 11500 * ms},
			{"deadline", func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(t.Context(), time.Second)
			}, []error{ErrWaitExceedsDeadline, context.DeadlineExceeded, ErrRateLimited}, 11500 * ms},
			{"MaxWait", func() (context.Context, context.CancelFunc) {
				return context.WithCancel(t.Context())
			}, []error{ErrWaitTooLong, ErrRateLimited}, 15500 * ms},
		}
		for _, tt := range tests {
			ctx, cancel := tt.ctx()
			defer cancel()
			wg.Go(func() {
				_, err := get(t, tr, ctx, "http://api.test/")
				var we *WaitError
				if assert.ErrorAs(t, err, &we, tt.name) {
					assert.Zero(t, we.Delay, "%s: Delay", tt.name)
				}
				for _, w := range tt.want {
					assert.ErrorIs(t, err, w, tt.name)
				}
				assert.Equal(t, tt.wantEnd, time.Since(srv.start), "%s: failed at", tt.name)
			})
		}
		time.Sleep(4500 * ms) // 15 s
		wg.Go(func() {
			getOK(t, tr, "http://api.test/", "late waiter")
			assert.Equal(t, 19*time.Second, time.Since(srv.start), "late waiter")
		})
		wg.Wait()
		assert.Equal(t, []time.Duration{0, 10 * time.Second, 19 * time.Second}, srv.arrivals())
	})
}

// TestTransportThrottleHoldsWaitersOfTheLimit: requests already waiting
// for their slot of the key's limit when another request of the key is
// throttled do not leave into the pause: their bookings are given back,
// and they book again after it, behind the probe. Three GETs through a
// pacer of one per second; the first gets 429 with Retry-After: 3; the
// two waiters had slots at 1 s and 2 s, inside the pause, and leave at 4 s
// and 5 s, after the probe at 3 s.
func TestTransportThrottleHoldsWaitersOfTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			if n == 1 {
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "3"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, Limits: Hosts{"api.test": {Limit: LeakyBucket(Every(time.Second), LeakyOptions{Queue: 10})}}}
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				getOK(t, tr, "http://api.test/", "request %d", i)
			})
		}
		wg.Wait()
		want := []time.Duration{0, 3 * time.Second, 4 * time.Second, 5 * time.Second}
		assert.Equal(t, want, since(start, srv.Requests()))
	})
}

// TestKeyedWaitOnPause: Keyed.Wait on a paused key waits for the pause and
// follows its extensions (a pause until 2 s, extended at 1 s to 4 s, is
// over at 4 s, and the Permit says it was held 4 s); it refuses at once,
// booking nothing, a pause beyond maxWait or the context's deadline, and
// returns when the context is cancelled, each with a *WaitError whose
// Delay is the pause's remaining length.
func TestKeyedWaitOnPause(t *testing.T) {
	t.Run("waits and follows extensions", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			k := newTestKeyed(t, Limit{}, KeyedOptions{})
			start := time.Now()
			k.PauseUntil("k", start.Add(2*time.Second))
			time.AfterFunc(time.Second, func() { k.PauseUntil("k", time.Now().Add(3*time.Second)) })
			p, err := k.Wait(t.Context(), "k", time.Minute)
			require.NoError(t, err)
			assert.Equal(t, 4*time.Second, time.Since(start), "Wait returned after")
			assert.Equal(t, 4*time.Second, p.Held, "throttle.Permit.Held")
			k.Settle(p, throttle.Outcome{Sent: true, Response: true})
		})
	})
	tests := []struct {
		name    string
		maxWait time.Duration
		timeout time.Duration
		cancel  time.Duration
		want    error
		wantAt  time.Duration
	}{
		{"beyond maxWait", time.Second, 0, 0, ErrWaitTooLong, 0},
		{"beyond the deadline", time.Minute, time.Second, 0, ErrWaitExceedsDeadline, 0},
		{"cancelled", time.Minute, 0, 500 * ms, context.Canceled, 500 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := newTestKeyed(t, Limit{}, KeyedOptions{})
				start := time.Now()
				k.PauseUntil("k", start.Add(2*time.Second))
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tt.timeout > 0 {
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				if tt.cancel > 0 {
					time.AfterFunc(tt.cancel, cancel)
				}
				_, err := k.Wait(ctx, "k", tt.maxWait)
				assert.ErrorIs(t, err, tt.want)
				var we *WaitError
				if assert.ErrorAs(t, err, &we) {
					assert.Equal(t, 2*time.Second, we.Delay, "WaitError.Delay")
				}
				assert.Equal(t, tt.wantAt, time.Since(start), "returned after")
			})
		})
	}
}

// TestKeyedForgetsEndedThrottles: throttles that have ended do not
// accumulate, even for keys never asked for again: 100,000 keys each
// throttled for 1 s, one every 10 ms, over 1000 s. A throttled key is
// remembered for its pause and staleAfter (5 min) after it, so that a late
// answer to a request sent before the pause stays old news: about 30,100
// keys at any instant, plus those throttled in the second or so a shard
// may wait for its next sweep; not 100,000.
func TestKeyedForgetsEndedThrottles(t *testing.T) {
	k := newTestKeyed(t, Limit{}, KeyedOptions{})
	start := time.Now()
	const every = 10 * ms
	for i := range 100_000 {
		k.Settle(throttle.Permit{Key: fmt.Sprint("host-", i)}, throttle.Outcome{
			At: start.Add(time.Duration(i) * every), Sent: true, Response: true, Pause: time.Second,
		})
	}
	kept := int((time.Second + time.Duration(staleAfter)) / every)
	assert.LessOrEqual(t, k.Len(), kept+int(2*time.Second/every), "keys tracked after 100,000 short throttles")
	assert.GreaterOrEqual(t, k.Len(), kept, "keys within staleAfter of their pause are kept")
}

// --- New behaviours of the throttle engine ---

// TestTransportHerdWaitsOutThePause: 50 concurrent GETs through a pacer
// of 10/s (LeakyBucket(PerSecond(10), LeakyOptions{Queue: 100})), whose slots run from 0 to 4.9 s.
// The server answers 429 Retry-After: 2 to every request arriving in its
// first 2 s (from the first one), then 200. The first request's 429 pauses
// the key and gives back the 49 bookings behind it: no request arrives
// during the pause (none in (t0, t0+2s)), the probe leaves at 2 s, and
// the others at the pacer's rate after it, all 50 done by 2 s + 4.9 s +
// 0.2 s. Without giving the bookings back, a waiter whose slot fell inside
// the pause leaves into it (at 0.1 s).
func TestTransportHerdWaitsOutThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu sync.Mutex
			t0 time.Time
		)
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			mu.Lock()
			if t0.IsZero() {
				t0 = r.At
			}
			first := t0
			mu.Unlock()
			if r.At.Sub(first) < 2*time.Second {
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "2"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, Limits: Hosts{"api.test": {Limit: LeakyBucket(PerSecond(10), LeakyOptions{Queue: 100})}}}
		start := time.Now()
		var wg sync.WaitGroup
		var done sync.Map
		for i := range 50 {
			wg.Go(func() {
				getOK(t, tr, "http://api.test/items", "request %d", i)
				done.Store(i, time.Since(start))
			})
		}
		wg.Wait()
		at := since(t0, srv.Requests())
		assert.Zero(t, countIn(at, 1, 2*time.Second), "arrivals in (t0, t0+2s): %v", at)
		assert.Len(t, at, 51, "attempts: 50 and the first one's retry")
		last := time.Duration(0)
		done.Range(func(_, v any) bool { last = max(last, v.(time.Duration)); return true })
		assert.LessOrEqual(t, last, 2*time.Second+4900*ms+200*ms, "all done by")
	})
}

// TestTransportBucketMeetsSlidingWindowServer: TokenBucket(PerSecond(10), 10)
// against a server that allows at most 10 requests in any 1 s, by an exact
// sliding log of the arrival times it accepted (an arrival at t counts the
// accepted ones in (t−1s, t]; the excess gets 429 Retry-After: 1 and is
// not logged). 200 calls from 8 goroutines. The bucket's burst of 10 at
// 0 s fills the server's window, so its 11th request, at 0.1 s, is
// throttled; the key pauses 1 s and resumes at the bucket's steady rate,
// not with the burst it saved meanwhile (which would meet the same full
// window again). So at most 2 429s, none failed, and an elapsed time
// within 10 % of the ideal 19 s: (200−10)/10 s, a burst of 10 then 10/s,
// the bucket's own schedule and also the fastest this server allows (10
// per window, 20 windows).
func TestTransportBucketMeetsSlidingWindowServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu       sync.Mutex
			accepted []time.Time
			n429     int
		)
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			i := 0
			for i < len(accepted) && !accepted[i].After(r.At.Add(-time.Second)) {
				i++
			}
			accepted = accepted[i:]
			if len(accepted) >= 10 {
				n429++
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
			}
			accepted = append(accepted, r.At)
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, Limits: Hosts{"api.test": {Limit: TokenBucket(PerSecond(10), 10)}}}
		start := time.Now()
		var wg sync.WaitGroup
		var mf sync.Mutex
		failed := 0
		for g := range 8 {
			wg.Go(func() {
				for i := range 25 {
					code, err := get(t, tr, t.Context(), "http://api.test/items")
					if err != nil || code != http.StatusOK {
						mf.Lock()
						failed++
						mf.Unlock()
						t.Errorf("goroutine %d call %d: %d, %v", g, i, code, err)
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		ideal := (200 - 10) * time.Second / 10
		t.Logf("elapsed %v (ideal %v), %d 429s, %d requests", elapsed, ideal, n429, srv.Count())
		assert.LessOrEqual(t, n429, 2, "429s")
		assert.Zero(t, failed, "failed calls")
		assert.LessOrEqual(t, elapsed, ideal*110/100, "elapsed")
	})
}

// TestTransportProbeAnswersCountForWaiters: 50 callers against a host that
// always answers, 10 ms later, 429 with Retry-After: 1; MaxAttempts 3, no
// Limits. Requests waiting behind a probe count its throttled answer as
// their own attempt (they would have met the same 429), so every caller
// returns within 3 × 1 s + 0.5 s: with the probe's 429 as its last
// response, or, having sent nothing more, with an *AttemptsError of
// Reason retry.ReasonAttempts matching ErrThrottled. After the first burst the
// server sees at most one request per second, not 50. Without that, each
// probe's 429 releases only itself, and the last caller returns after
// about 25 s.
func TestTransportProbeAnswersCountForWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			time.Sleep(10 * ms)
			return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
		}}
		tr := &Transport{Base: srv, Retry: retry.Policy{MaxAttempts: 3}}
		var wg sync.WaitGroup
		var mu sync.Mutex
		responses := 0
		for i := range 50 {
			wg.Go(func() {
				code, err := get(t, tr, t.Context(), "http://api.test/items")
				assert.LessOrEqual(t, time.Since(start), 3*time.Second+500*ms, "caller %d returned after", i)
				if err == nil {
					assert.Equal(t, http.StatusTooManyRequests, code, "caller %d", i)
					mu.Lock()
					responses++
					mu.Unlock()
					return
				}
				assert.ErrorIs(t, err, ErrThrottled, "caller %d", i)
				var ae *AttemptsError
				if assert.ErrorAs(t, err, &ae, "caller %d", i) {
					assert.Equal(t, retry.ReasonAttempts, ae.Reason, "caller %d", i)
					assert.Equal(t, 3, ae.Attempts, "caller %d", i)
				}
			})
		}
		wg.Wait()
		at := since(start, srv.Requests())
		require.GreaterOrEqual(t, len(at), 50)
		assert.Equal(t, 50, countIn(at, 0, 1), "the first burst")
		after := at[50:]
		t.Logf("after the first burst: %v; %d callers got a response", after, responses)
		for i := 1; i < len(after); i++ {
			assert.GreaterOrEqual(t, after[i]-after[i-1], time.Second, "arrivals after the burst: %v", after)
		}
		assert.LessOrEqual(t, len(after), 3, "requests after the first burst: %v", after)
		assert.GreaterOrEqual(t, responses, 1)
	})
}

// TestKeyedCancelledWaitersCloseUpTheQueue: nine waiters queued on a pacer
// of 2/s (LeakyBucket(PerSecond(2), LeakyOptions{Queue: 20})) behind a request admitted at 0 s, with
// slots at 0.5, 1, …, 4.5 s, give up at 0.2 s in a random order (seeded):
// the queue closes up as if they had never queued, whichever gives up
// first, so the next two requests, at 0.3 s, get the slots right after the
// last admitted one, 0.5 s and 1 s, exactly. Withdrawing a waiter from the
// middle must rebook those behind it, not leave a hole, nor give back
// units that later bookings were scheduled behind.
func TestKeyedCancelledWaitersCloseUpTheQueue(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("Keyed, seed %d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := newTestKeyed(t, LeakyBucket(PerSecond(2), LeakyOptions{Queue: 20}), KeyedOptions{})
				start := time.Now()
				p, err := k.Wait(t.Context(), "k", 0)
				require.NoError(t, err)
				k.Settle(p, throttle.Outcome{Sent: true, Response: true})
				var wg sync.WaitGroup
				cancels := make([]context.CancelFunc, 9)
				for i := range 9 {
					ctx, cancel := context.WithCancel(t.Context())
					cancels[i] = cancel
					wg.Go(func() {
						_, err := k.Wait(ctx, "k", 0)
						assert.ErrorIs(t, err, context.Canceled, "waiter %d", i)
					})
					synctest.Wait() // booked in order: slot (i+1)·0.5 s
				}
				time.Sleep(200 * ms)
				rng := rand.New(rand.NewPCG(seed, 1))
				order := rng.Perm(9)
				for _, i := range order {
					cancels[i]()
					synctest.Wait()
				}
				wg.Wait()
				time.Sleep(100 * ms)
				for _, want := range []time.Duration{500 * ms, time.Second} {
					p, err := k.Wait(t.Context(), "k", 0)
					require.NoError(t, err)
					assert.Equal(t, want, time.Since(start), "cancelled in order %v: next slot", order)
					k.Settle(p, throttle.Outcome{Sent: true, Response: true})
				}
			})
		})
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("Transport, seed %d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				srv := &testhttp.Server{}
				tr := &Transport{Base: srv, Limits: Hosts{"api.test": {Limit: LeakyBucket(PerSecond(2), LeakyOptions{Queue: 20})}}}
				code, err := get(t, tr, t.Context(), "http://api.test/")
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, code)
				var wg sync.WaitGroup
				cancels := make([]context.CancelFunc, 9)
				for i := range 9 {
					ctx, cancel := context.WithCancel(t.Context())
					cancels[i] = cancel
					wg.Go(func() {
						_, err := get(t, tr, ctx, "http://api.test/")
						assert.ErrorIs(t, err, context.Canceled, "waiter %d", i)
					})
					synctest.Wait()
				}
				time.Sleep(200 * ms)
				rng := rand.New(rand.NewPCG(seed, 2))
				order := rng.Perm(9)
				for _, i := range order {
					cancels[i]()
					synctest.Wait()
				}
				wg.Wait()
				time.Sleep(100 * ms)
				for range 2 {
					wg.Go(func() {
						code, err := get(t, tr, t.Context(), "http://api.test/")
						assert.NoError(t, err)
						assert.Equal(t, http.StatusOK, code)
					})
					synctest.Wait()
				}
				wg.Wait()
				assert.Equal(t, []time.Duration{0, 500 * ms, time.Second}, since(start, srv.Requests()),
					"cancelled in order %v: arrivals", order)
			})
		})
	}
}

// TestTransportZeroDelayStillPauses: a 429 whose Retry-After is 0, or an
// HTTP-date already past, still pauses its key for retry.MinThrottlePause and
// then sends one probe. 50 callers are throttled at 0 s (Retry-After: 1,
// answered after 10 ms) and wait; at 1.01 s the probe leaves and gets,
// 10 ms later, a 429 with the zero delay; then 200s. In the 50 ms after
// that 429, the 50 waiting callers (the probe's own retry included) send
// at most 2 requests beyond the ones in flight (there are none: the
// probe's own was answered), not 50; the next probe leaves at the end of
// the pause, retry.MinThrottlePause doubled (no jitter): the zero-delay 429 is
// the key's second consecutive throttle (RFC 9110 §10.2.3 allows the 0;
// the server is still throttling after the second it asked for).
func TestTransportZeroDelayStillPauses(t *testing.T) {
	tests := []struct {
		name  string
		retry func(now time.Time) []string // the zero-delay 429's headers
	}{
		{"Retry-After: 0", func(time.Time) []string { return []string{"Retry-After", "0"} }},
		{"a past HTTP-date", func(now time.Time) []string {
			return []string{"Retry-After", now.Add(-10 * time.Second).UTC().Format(http.TimeFormat),
				"Date", now.UTC().Format(http.TimeFormat)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var answered time.Duration // when the zero-delay 429 was answered
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					time.Sleep(10 * ms)
					switch {
					case n <= 50:
						return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
					case n == 51:
						answered = time.Since(start)
						return testhttp.Response(http.StatusTooManyRequests, tt.retry(time.Now())...), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				// The budget is off: after 50 failures it would refuse the probe's
				// retry after its zero-delay 429 (no positive server delay), a
				// rule of retry.Budget, not of the pause.
				tr := &Transport{Base: srv, Retry: retry.Policy{MaxAttempts: 5, Budget: retry.Budget{Disabled: true}, Jitter: retry.NoJitter}}
				var wg sync.WaitGroup
				for i := range 50 {
					wg.Go(func() {
						getOK(t, tr, "http://api.test/", "caller %d", i)
					})
				}
				wg.Wait()
				at := since(start, srv.Requests())
				require.Greater(t, len(at), 51)
				require.Equal(t, 1020*ms, answered, "the zero-delay 429 answered at")
				inFlight := 0 // sent before the 429 was answered and not yet answered
				sent := countIn(at, answered, answered+retry.MinThrottlePause)
				t.Logf("arrivals after the first burst: %v", at[50:])
				assert.LessOrEqual(t, sent, 2+inFlight, "requests in the %v after the zero-delay 429", retry.MinThrottlePause)
				assert.Equal(t, answered+2*retry.MinThrottlePause, at[51], "the next probe")
			})
		})
	}
}

// TestTransportStrikesAreConsecutiveThrottles: 10 parallel GETs get a 429
// without a delay at once (retry.NoJitter). The throttles of requests sent
// before the key's pause was set are the same news, no new strike, so
// the key pauses retry.DefaultThrottlePause, 5 s, not 5 s doubled for each of
// them (env0/terraform-provider-env0#1127); the probe's 429, a fresh
// throttle, is the second strike: 10 s. The probe at 5.01 s, the next at
// 15.02 s, then the other nine.
func TestTransportStrikesAreConsecutiveThrottles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			time.Sleep(10 * ms) // all 10 are in flight before the first answer
			if n <= 11 {
				return testhttp.Response(http.StatusTooManyRequests), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		var mu sync.Mutex
		var pauses []string
		// The budget is off: it would end most of the ten requests after
		// their first 429, which is its rule, not the pause's.
		tr := &Transport{Base: srv, Retry: retry.Policy{
			MaxAttempts: 5,
			Jitter:      retry.NoJitter,
			Budget:      retry.Budget{Disabled: true},
		}, OnEvent: func(e Event) {
			if e.Kind == EventThrottle {
				mu.Lock()
				pauses = append(pauses, fmt.Sprintf("%v:%v", time.Since(start), e.Delay))
				mu.Unlock()
			}
		}}
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				getOK(t, tr, "http://api.test/", "request %d", i)
			})
		}
		wg.Wait()
		at := since(start, srv.Requests())
		require.Len(t, at, 21)
		assert.Equal(t, 10, countIn(at, 0, 1), "the parallel burst")
		assert.Equal(t, 5010*ms, at[10], "the first probe: a 5 s pause")
		assert.Equal(t, 15020*ms, at[11], "the second probe: a 10 s pause")
		assert.Equal(t, 9, countIn(at, 15030*ms, 15030*ms+1), "the others, after the probe's 200")
		want := []string{}
		for range 10 {
			want = append(want, "10ms:5s")
		}
		want = append(want, "5.02s:10s")
		assert.Equal(t, want, pauses, "throttle events (instant:pause)")
	})
}

// getOK sends a GET of url through tr and asserts that it answered 200 with
// no error; what and args name the request in failure messages.
func getOK(t *testing.T, tr *Transport, url, what string, args ...any) {
	t.Helper()
	code, err := get(t, tr, t.Context(), url)
	assert.NoError(t, err, append([]any{what}, args...)...)
	assert.Equal(t, http.StatusOK, code, append([]any{what}, args...)...)
}

// TestTransportThrottleRepeatedRetryAfterZeroBacksOff: a server that
// answers every request 429 with Retry-After: 0 is overloaded, not keeping
// a schedule (RFC 9110 §10.2.3 allows the 0): the key's pause doubles from
// retry.MinThrottlePause per consecutive throttle instead of bringing the
// request back every 50 ms. One GET, MaxAttempts 5, no jitter: attempts at
// 0, 50, 150, 350 and 750 ms (pauses 50, 100, 200, 400 ms, then 800 ms set
// by the last); a second GET right after waits that pause out and keeps the
// strikes: 1.55, 3.15, 6.35, 12.75 and 25.55 s (pauses 1.6 s doubling,
// capped at retry.DefaultBackoffMax). A past HTTP-date is the same delay of 0.
func TestTransportThrottleRepeatedRetryAfterZeroBacksOff(t *testing.T) {
	for _, ra := range []string{"0", "Fri, 31 Dec 1999 23:00:00 GMT"} {
		t.Run("Retry-After: "+ra, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
					return testhttp.Response(http.StatusTooManyRequests, "Retry-After", ra), nil
				}}
				tr := &Transport{Base: srv, Retry: retry.Policy{MaxAttempts: 5, Jitter: retry.NoJitter}}
				for range 2 {
					status, err := get(t, tr, t.Context(), "http://api.test/items")
					require.NoError(t, err)
					assert.Equal(t, http.StatusTooManyRequests, status)
				}
				want := []time.Duration{0, 50 * ms, 150 * ms, 350 * ms, 750 * ms,
					1550 * ms, 3150 * ms, 6350 * ms, 12750 * ms, 25550 * ms}
				assert.Equal(t, want, since(start, srv.Requests()), "arrivals")
			})
		})
	}
}

// TestThrottleWaitsAsDocumented pins the waits that retry.DefaultThrottlePause,
// retry.MinThrottlePause, retry.DefaultThrottleBackoffInitial, Throttled and the
// Transport's "Adaptive rate" describe, without jitter: a 429 without a
// delay pauses an unpaced key 5 s, a key a configured limit paces 50 ms
// (its rate is lowered instead; its probe throttled again, 10 s, the
// second consecutive throttle), and with a NewBackOff schedule at least
// 1 s; a 503 without a delay is no throttle but is retried after 1 s,
// then 2 s; a 500 after 100 ms, then 200 ms, and so is a 503 that follows
// a 500 (the request's first failure chose the schedule).
func TestThrottleWaitsAsDocumented(t *testing.T) {
	ms := time.Millisecond
	constant := func() backoff.BackOff { return backoff.NewConstantBackOff(10 * ms) }
	tests := []struct {
		name       string
		first      int // the first attempt's status, if not status
		status     int
		limits     Hosts
		newBackOff func() backoff.BackOff
		want       []time.Duration // gaps between the three attempts
	}{
		{"429, no limit", 0, 429, nil, nil, []time.Duration{retry.DefaultThrottlePause, 2 * retry.DefaultThrottlePause}},
		{"429, configured limit", 0, 429, Hosts{"*": {Limit: TokenBucket(PerSecond(1000), 1000)}}, nil,
			[]time.Duration{retry.MinThrottlePause, 2 * retry.DefaultThrottlePause}}, // the brief pause was the first strike
		{"429, NewBackOff", 0, 429, nil, constant, []time.Duration{retry.DefaultThrottleBackoffInitial, retry.DefaultThrottleBackoffInitial}},
		{"503", 0, 503, nil, nil, []time.Duration{retry.DefaultThrottleBackoffInitial, 2 * retry.DefaultThrottleBackoffInitial}},
		{"500", 0, 500, nil, nil, []time.Duration{retry.DefaultBackoffInitial, 2 * retry.DefaultBackoffInitial}},
		// The first failure chooses the schedule: a 503 after a 500 goes on on the 500's.
		{"500 then 503", 500, 503, nil, nil, []time.Duration{retry.DefaultBackoffInitial, 2 * retry.DefaultBackoffInitial}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				first := tt.status
				if tt.first != 0 {
					first = tt.first
				}
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(first), testhttp.Status(tt.status), testhttp.Status(200)}}
				tr := &Transport{Base: srv, Limits: tt.limits,
					Retry: retry.Policy{Jitter: retry.NoJitter, NewBackOff: tt.newBackOff}}
				assert.Equal(t, 200, roundTrip(t, tr, http.MethodGet, "http://api.test/"))
				assert.Equal(t, tt.want, gaps(srv.Requests()))
				d, ok := Throttled(&http.Response{StatusCode: tt.status, Header: http.Header{}}, time.Now())
				assert.Equal(t, tt.status == 429, ok, "Throttled")
				assert.Zero(t, d)
			})
		})
	}
}

package pace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/internal/testhttp"
)

// TestCooldownProbeStates walks one key through the half-open states with
// explicit times: after the pause the first caller is the probe and the
// others wait on its channel; no outcome passes the role on, a throttle
// keeps the key held (even one that set no new pause), an answer closes it unless it was paused again while
// the probe was in flight.
func TestCooldownProbeStates(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	var c cooldown
	c.pauseUntil("k", at(time.Second), t0, 0)
	if d, ch, probe := c.next("k", at(500*time.Millisecond)); d != 500*time.Millisecond || ch != nil || probe {
		t.Fatalf("during the pause: next = %v, %v, %v; want 500ms, nil, false", d, ch, probe)
	}
	take := func(now time.Time) {
		t.Helper()
		if _, _, probe := c.next("k", now); !probe {
			t.Fatal("no probe taken")
		}
		if _, ch, probe := c.next("k", now); ch == nil || probe {
			t.Fatal("a second caller is not held on the probe")
		}
		if !c.held("k", now, false) || c.held("k", now, true) {
			t.Fatal("held: others must be held, the probe not")
		}
	}
	take(at(time.Second))
	_, ch, _ := c.next("k", at(time.Second))
	c.endProbe("k", probeNone, at(time.Second))
	select {
	case <-ch:
	default:
		t.Fatal("no outcome: waiters not woken")
	}
	take(at(time.Second)) // the role passed on

	c.pauseUntil("k", at(3*time.Second), at(2*time.Second), 1) // the probe's throttle
	c.endProbe("k", probeThrottled, at(2*time.Second))
	if d, _, _ := c.next("k", at(2*time.Second)); d != time.Second {
		t.Fatalf("after a throttled probe: wait %v, want 1s", d)
	}
	take(at(3 * time.Second))
	c.endProbe("k", probeThrottled, at(3*time.Second)) // a 429 with Retry-After: 0, no new pause
	if !c.held("k", at(3*time.Second), false) {
		t.Fatal("a throttled probe closed the key")
	}
	take(at(3 * time.Second))
	c.pauseUntil("k", at(4*time.Second), at(3*time.Second), 0) // a late throttle of another request
	c.endProbe("k", probeAnswered, at(3*time.Second))
	if !c.held("k", at(4*time.Second), false) {
		t.Fatal("an answer closed a key paused again while its probe was in flight")
	}
	take(at(4 * time.Second))
	c.endProbe("k", probeAnswered, at(4*time.Second))
	if c.held("k", at(4*time.Second), false) {
		t.Fatal("an answer did not close the key")
	}
	if d, ch, probe := c.next("k", at(4*time.Second)); d != 0 || ch != nil || probe {
		t.Fatalf("closed key: next = %v, %v, %v; want free passage", d, ch, probe)
	}
}

// TestCooldownOneProbePerPause: 20 concurrent GETs, no Limits; the server
// answers, 10 ms later, 429 with Retry-After: 1 to every request that
// reaches it in its first 3 s and 200 after. All 20 meet a 429 at 0 s;
// after that exactly one request reaches the server per pause end (at 1.01
// and 2.02 s, both 429; at 3.03 s, the 200), and only after its answer the
// other 19: 22 429s and 42 requests in all, against 80 429s (20 per pause
// end) without a probe. MaxAttempts is 4 because a
// request may be the probe of several pauses in a row (attempts at 0, 1, 2
// and 3 s); with the default 3 it could give up with the 429.
func TestCooldownOneProbePerPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			time.Sleep(10 * time.Millisecond) // the server's time to answer: all 20 are in flight at 0
			if r.At.Sub(start) < 3*time.Second {
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, MaxAttempts: 4}
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/items", ""))
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				if resp.StatusCode != http.StatusOK {
					t.Errorf("request %d ended with %d, want 200", i, resp.StatusCode)
				}
				resp.Body.Close()
			})
		}
		wg.Wait()
		perInstant := map[time.Duration]int{}
		n429 := 0
		for _, r := range srv.Requests() {
			perInstant[r.At.Sub(start)]++
			time.Sleep(10 * time.Millisecond) // the server's time to answer: all 20 are in flight at 0
			if r.At.Sub(start) < 3*time.Second {
				n429++
			}
		}
		// Each answer comes 10 ms after its request, and each pause
		// starts then: the probes leave at 1.01, 2.02 and 3.03 s, and the
		// others with the 200, at 3.04 s.
		ms := time.Millisecond
		want := map[time.Duration]int{0: 20, 1010 * ms: 1, 2020 * ms: 1, 3030 * ms: 1, 3040 * ms: 19}
		if fmt.Sprint(perInstant) != fmt.Sprint(want) {
			t.Errorf("requests per instant %v, want %v", perInstant, want)
		}
		if n429 != 22 {
			t.Errorf("%d 429s, want 22", n429)
		}
	})
}

// recorder is a test Base that records arrival times and answers with
// handle.
type recorder struct {
	mu     sync.Mutex
	at     []time.Duration // since start
	start  time.Time
	handle func(n int, req *http.Request) (*http.Response, error)
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.at = append(r.at, time.Since(r.start))
	n := len(r.at)
	r.mu.Unlock()
	return r.handle(n, req)
}

func (r *recorder) arrivals() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.at...)
}

// TestCooldownProbeCancelledPassesOn: request A is throttled (Retry-After:
// 1) and, at 1 s, is the probe; five requests start at 1.2 s and hold. A's
// context is cancelled at 1.5 s while the server holds its probe: A fails
// with context.Canceled, and at the same instant another request becomes
// the probe, gets 200, and the other four follow. Arrivals: 0, 1s, then
// five at 1.5s.
func TestCooldownProbeCancelledPassesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &recorder{start: time.Now(), handle: func(n int, req *http.Request) (*http.Response, error) {
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
			_, err := tr.RoundTrip(newRequest(t, ctxA, "GET", "http://api.test/", ""))
			if !errors.Is(err, context.Canceled) || time.Since(srv.start) != 1500*time.Millisecond {
				t.Errorf("A: %v after %v, want context.Canceled after 1.5s", err, time.Since(srv.start))
			}
		})
		time.Sleep(1200 * time.Millisecond)
		for i := range 5 {
			wg.Go(func() {
				if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK {
					t.Errorf("waiter %d: status %d, want 200", i, code)
				}
			})
		}
		time.Sleep(300 * time.Millisecond)
		cancelA()
		wg.Wait()
		ms := time.Millisecond
		want := []time.Duration{0, time.Second, 1500 * ms, 1500 * ms, 1500 * ms, 1500 * ms, 1500 * ms}
		if got := srv.arrivals(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("arrivals %v, want %v", got, want)
		}
	})
}

// TestCooldownProbeWaiterLimits: while a probe is in flight (sent at 1 s,
// answered 200 at 10 s), requests that wait for it honour their own limits
// (MaxWait 5 s): one cancelled 1 s into its wait fails then with
// context.Canceled; one with a 1 s timeout fails at its deadline with
// ErrWaitExceedsDeadline (and context.DeadlineExceeded); one that would
// wait longer than MaxWait fails when MaxWait is reached with
// ErrWaitTooLong. All three are *WaitErrors (Delay 0: a probe's end is not
// known) matching ErrRateLimited where the brief says so, and none is
// sent. A request that starts at 6 s waits 4 s and gets the 200 at 10 s.
func TestCooldownProbeWaiterLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &recorder{start: time.Now(), handle: func(n int, req *http.Request) (*http.Response, error) {
			switch n {
			case 1:
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
			case 2:
				time.Sleep(9 * time.Second) // the probe, answered at 10 s
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, MaxWait: 5 * time.Second}
		var wg sync.WaitGroup
		wg.Go(func() {
			if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK {
				t.Errorf("the probe's request: status %d, want 200", code)
			}
		})
		time.Sleep(1500 * time.Millisecond)
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
			}, []error{context.Canceled}, 2500 * time.Millisecond},
			{"deadline", func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(t.Context(), time.Second)
			}, []error{ErrWaitExceedsDeadline, context.DeadlineExceeded, ErrRateLimited}, 2500 * time.Millisecond},
			{"MaxWait", func() (context.Context, context.CancelFunc) {
				return context.WithCancel(t.Context())
			}, []error{ErrWaitTooLong, ErrRateLimited}, 6500 * time.Millisecond},
		}
		for _, tt := range tests {
			ctx, cancel := tt.ctx()
			defer cancel()
			wg.Go(func() {
				resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "http://api.test/", ""))
				if resp != nil {
					resp.Body.Close()
				}
				var we *WaitError
				if !errors.As(err, &we) || we.Delay != 0 {
					t.Errorf("%s: err %v, want a *WaitError with Delay 0", tt.name, err)
				}
				for _, w := range tt.want {
					if !errors.Is(err, w) {
						t.Errorf("%s: err %v does not match %v", tt.name, err, w)
					}
				}
				if end := time.Since(srv.start); end != tt.wantEnd {
					t.Errorf("%s: failed at %v, want %v", tt.name, end, tt.wantEnd)
				}
			})
		}
		time.Sleep(4500 * time.Millisecond) // 6 s
		wg.Go(func() {
			if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK || time.Since(srv.start) != 10*time.Second {
				t.Errorf("late waiter: status %d at %v, want 200 at 10s", code, time.Since(srv.start))
			}
		})
		wg.Wait()
		want := []time.Duration{0, time.Second, 10 * time.Second}
		if got := srv.arrivals(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("arrivals %v, want %v", got, want)
		}
	})
}

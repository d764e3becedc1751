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

func TestCooldownPauseOnlyExtends(t *testing.T) {
	var c cooldown
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		until   time.Duration // after t0
		wantSet bool
		wantRem time.Duration // remaining at t0 afterwards
	}{
		{0, false, 0}, // not in the future: ignored
		{2 * time.Second, true, 2 * time.Second},
		{time.Second, false, 2 * time.Second}, // shorter: ignored
		{5 * time.Second, true, 5 * time.Second},
	}
	for i, st := range steps {
		if got := c.pauseUntil("k", t0.Add(st.until), t0, 0); got != st.wantSet {
			t.Errorf("step %d: pauseUntil = %v, want %v", i, got, st.wantSet)
		}
		if got := c.remaining("k", t0); got != st.wantRem {
			t.Errorf("step %d: remaining = %v, want %v", i, got, st.wantRem)
		}
	}
	if got := c.remaining("other", t0); got != 0 {
		t.Errorf("remaining(other) = %v, want 0", got)
	}
	if got := c.remaining("k", t0.Add(5*time.Second)); got != 0 || c.n.Load() != 1 {
		t.Errorf("as the pause ends: remaining %v, %d entries; want 0, 1", got, c.n.Load())
	}
	// Half-open: the entry stays, however late, until a probe closes it.
	if got := c.remaining("k", t0.Add(10*time.Second)); got != 0 || c.n.Load() != 1 {
		t.Errorf("a pause length later, half-open: remaining %v, %d entries; want 0, 1", got, c.n.Load())
	}
	if _, _, probe := c.next("k", t0.Add(10*time.Second)); !probe {
		t.Fatal("the first request after the pause is not the probe")
	}
	c.endProbe("k", probeAnswered, t0.Add(10*time.Second))
	if got := c.remaining("k", t0.Add(10*time.Second)); got != 0 || c.n.Load() != 0 {
		t.Errorf("a pause length later, closed: remaining %v, %d entries; want 0, 0", got, c.n.Load())
	}
}

func TestCooldownStrikes(t *testing.T) {
	var c cooldown
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	if s := c.strikes("k", t0); s != 0 {
		t.Fatalf("strikes of a fresh key = %d, want 0", s)
	}
	c.pauseUntil("k", at(time.Second), t0, 1) // 1s pause
	steps := []struct {
		at   time.Duration
		want int
	}{
		{500 * time.Millisecond, 1},  // during the pause
		{1500 * time.Millisecond, 1}, // within one pause length after it
		{2 * time.Second, 0},         // a full pause length after: forgotten
	}
	for _, st := range steps {
		if s := c.strikes("k", at(st.at)); s != st.want {
			t.Errorf("strikes at %v = %d, want %d", st.at, s, st.want)
		}
	}
	c.pauseUntil("k", at(3*time.Second), at(time.Second), 2)
	c.pauseUntil("k", at(2*time.Second), at(time.Second), 3) // shorter pause, more strikes: kept
	if s := c.strikes("k", at(2*time.Second)); s != 3 {
		t.Errorf("strikes = %d, want 3", s)
	}
}

// TestCooldownSweepBoundsMemory: expired entries do not accumulate, even
// for keys never looked at again.
func TestCooldownSweepBoundsMemory(t *testing.T) {
	var c cooldown
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100_000 {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		c.pauseUntil(fmt.Sprint("host-", i), now.Add(time.Second), now, 1)
	}
	// Pauses last 1s and one starts every 1ms: about 2000 entries are
	// within a pause or the pause length after it.
	if n := c.n.Load(); n > 2*2000+minSweep {
		t.Errorf("%d entries after 100,000 short pauses, want about 2000", n)
	}
}

func TestCooldownWait(t *testing.T) {
	t.Run("waits and follows extensions", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var c cooldown
			now := time.Now()
			c.pauseUntil("k", now.Add(2*time.Second), now, 0)
			time.AfterFunc(time.Second, func() { c.pauseUntil("k", time.Now().Add(3*time.Second), time.Now(), 0) })
			d, _, err := c.wait(t.Context(), "k", time.Minute)
			if err != nil || d != 4*time.Second || time.Since(now) != 4*time.Second {
				t.Errorf("wait = %v, %v after %v; want 4s, nil after 4s", d, err, time.Since(now))
			}
		})
	})
	t.Run("refusals", func(t *testing.T) {
		tests := []struct {
			name    string
			maxWait time.Duration
			timeout time.Duration
			cancel  time.Duration
			want    error
			wantAt  time.Duration
		}{
			{"beyond maxWait", time.Second, 0, 0, ErrWaitTooLong, 0},
			{"beyond deadline", time.Minute, time.Second, 0, ErrWaitExceedsDeadline, 0},
			{"cancelled", time.Minute, 0, 500 * time.Millisecond, context.Canceled, 500 * time.Millisecond},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var c cooldown
					now := time.Now()
					c.pauseUntil("k", now.Add(2*time.Second), now, 0)
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					if tt.timeout > 0 {
						ctx, cancel = context.WithTimeout(ctx, tt.timeout)
						defer cancel()
					}
					if tt.cancel > 0 {
						time.AfterFunc(tt.cancel, cancel)
					}
					_, _, err := c.wait(ctx, "k", tt.maxWait)
					var we *WaitError
					if !errors.Is(err, tt.want) || !errors.As(err, &we) || we.Delay != 2*time.Second {
						t.Errorf("wait err = %v, want %v with Delay 2s", err, tt.want)
					}
					if el := time.Since(now); el != tt.wantAt {
						t.Errorf("returned after %v, want %v", el, tt.wantAt)
					}
				})
			})
		}
	})
}

// TestCooldownHostWide is issue item 6: a 429 with Retry-After pauses the
// whole key. 50 concurrent GETs; the server answers 429 with Retry-After: 2
// to every request in its first 2 s and 200 after. The server sees no
// request between the first wave and the end of the 2 s, all 50 succeed,
// and there are at most 100 attempts. In the staggered run half the
// requests start during the pause and wait it out without being sent.
func TestCooldownHostWide(t *testing.T) {
	tests := []struct {
		name         string
		late         int           // requests started after the first wave
		lateAt       time.Duration // when they start
		wantAttempts int
	}{
		{"all at once", 0, 0, 100},
		{"half during the pause", 25, 500 * time.Millisecond, 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					time.Sleep(10 * time.Millisecond) // the server's time to answer
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
						req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://api.test/items", nil)
						resp, err := tr.RoundTrip(req)
						if err != nil {
							t.Errorf("request %d: %v", i, err)
							return
						}
						codes[i] = resp.StatusCode
						resp.Body.Close()
					})
				}
				wg.Wait()
				for i, c := range codes {
					if c != http.StatusOK {
						t.Errorf("request %d ended with %d, want 200", i, c)
					}
				}
				rs := srv.Requests()
				for _, r := range rs {
					if at := r.At.Sub(start); at != 0 && at < 2*time.Second {
						t.Errorf("a request reached the server at %v, inside the pause", at)
					}
				}
				if len(rs) != tt.wantAttempts || len(rs) > 100 {
					t.Errorf("%d attempts, want %d (at most 100)", len(rs), tt.wantAttempts)
				}
			})
		})
	}
}

// TestCooldownHoldsWaitersOfTheLimiter: a request already waiting for its
// limiter when another request of its key is throttled does not leave into
// the pause; it waits it out and books again.
func TestCooldownHoldsWaitersOfTheLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			if n == 1 {
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "3"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, Limiter: &spacer{every: time.Second}}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://api.test/", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			})
		}
		wg.Wait()
		var at []time.Duration
		for _, r := range srv.Requests() {
			at = append(at, r.At.Sub(start))
		}
		// 0: the 429. The two waiters had slots at 1s and 2s, inside the
		// pause; they book again after it and leave a second apart.
		want := []time.Duration{0, 3 * time.Second, 4 * time.Second, 5 * time.Second}
		if fmt.Sprint(at) != fmt.Sprint(want) {
			t.Errorf("arrivals at %v, want %v", at, want)
		}
	})
}

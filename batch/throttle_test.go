package batch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closedServer throttles every request that arrives within closedFor after
// the first request for item trigger, answering with retryAfter (0: no
// delay given). It records arrivals per item.
type closedServer struct {
	trigger    int
	closedFor  time.Duration
	retryAfter time.Duration

	mu       sync.Mutex
	closedAt time.Time
	sends    []time.Time
	items    []int
	ok       map[int]int
}

func (s *closedServer) call(_ context.Context, item int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.sends = append(s.sends, now)
	s.items = append(s.items, item)
	if item == s.trigger && s.closedAt.IsZero() {
		s.closedAt = now
	}
	if !s.closedAt.IsZero() && now.Sub(s.closedAt) < s.closedFor {
		return &ThrottledError{Status: 429, RetryAfter: s.retryAfter}
	}
	s.ok[item]++
	return nil
}

// TestRunThrottleBackoff runs one item at a time against a server that
// closes for a while at item 2: the run pauses, probes with item 2 alone,
// growing the pause (1s, 2s, 4s, … up to MaxBackoff) or waiting what the
// server said, and resumes on the first good answer.
func TestRunThrottleBackoff(t *testing.T) {
	tests := []struct {
		name       string
		closedFor  time.Duration
		retryAfter time.Duration
		opts       Options
		wantProbes []time.Duration // probe starts, after the first 429
	}{
		{"doubling", 20 * time.Second, 0, Options{}, []time.Duration{1, 3, 7, 15, 31}},
		{"capped", 20 * time.Second, 0, Options{MaxBackoff: 5 * time.Second}, []time.Duration{1, 3, 7, 12, 17, 22}},
		{"custom start", 10 * time.Second, 0, Options{Backoff: 3 * time.Second}, []time.Duration{3, 9, 21}},
		{"retry-after", 10 * time.Second, 4 * time.Second, Options{}, []time.Duration{4, 8, 12}},
		{"open at once", time.Nanosecond, 0, Options{}, []time.Duration{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &closedServer{trigger: 2, closedFor: tt.closedFor, retryAfter: tt.retryAfter, ok: map[int]int{}}
				opts := tt.opts
				opts.Concurrency = 1
				rep, err := Run(t.Context(), ints(5), srv.call, opts)
				if err != nil {
					t.Fatal(err)
				}
				var probes []time.Duration
				for k, at := range srv.sends {
					if at.After(srv.closedAt) {
						probes = append(probes, at.Sub(srv.closedAt)/time.Second)
						if srv.items[k] != 2 {
							break // resumed
						}
					}
				}
				probes = probes[:len(probes)-1] // the first send after resuming
				if !slices.Equal(probes, tt.wantProbes) {
					t.Errorf("probes at %v s after the 429, want %v", probes, tt.wantProbes)
				}
				want := len(tt.wantProbes)
				if res := rep.Results[2]; res.Attempts != want+1 || res.Outcome != Succeeded {
					t.Errorf("item 2: %d attempts, %v; want %d, succeeded", res.Attempts, res.Outcome, want+1)
				}
				if s := rep.Summary; s.Throttled != want || s.Retries != want || s.Pauses != 1 {
					t.Errorf("Summary = %v, want %d throttled and retries, 1 pause", s, want)
				}
				for i := range 5 {
					if srv.ok[i] != 1 {
						t.Errorf("item %d succeeded %d times, want 1", i, srv.ok[i])
					}
				}
			})
		})
	}
}

// TestRunStaleThrottle: a 429 for an attempt sent before the last resume
// says nothing new. The item is retried at once, with no second pause.
func TestRunStaleThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[int]int{}
		var retriedAt time.Time
		fn := func(_ context.Context, i int) error {
			mu.Lock()
			calls[i]++
			n := calls[i]
			mu.Unlock()
			switch {
			case i == 0 && n == 1: // slow, and throttled when it ends
				time.Sleep(10 * time.Second)
				return ErrThrottled
			case i == 0:
				retriedAt = time.Now()
			case i == 1 && n == 1:
				time.Sleep(time.Millisecond) // let item 0 pass the gate first: it left before the pause
				return fmt.Errorf("wrapped: %w", ErrThrottled)
			}
			return nil
		}
		t0 := time.Now()
		rep, err := Run(t.Context(), ints(5), fn, Options{Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		if s := rep.Summary; s.Pauses != 1 || s.Throttled != 2 || s.Succeeded != 5 {
			t.Errorf("Summary = %v, want 1 pause, 2 throttled, 5 succeeded", s)
		}
		if d := retriedAt.Sub(t0); d != 10*time.Second {
			t.Errorf("item 0 retried at %v, want at once (10s)", d)
		}
	})
}

// TestRunThrottleMeanwhile: throttles that arrive during a pause requeue
// their items behind the probe, extend the pause only with a longer server
// delay, and never add probes.
func TestRunThrottleMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[int]int{}
		var sends []time.Time
		fn := func(_ context.Context, i int) error {
			mu.Lock()
			calls[i]++
			n := calls[i]
			sends = append(sends, time.Now())
			mu.Unlock()
			if n > 1 {
				return nil
			}
			switch i {
			case 0:
				time.Sleep(time.Millisecond) // let items 1 and 2 pass the gate first: they left before the pause
				return &ThrottledError{RetryAfter: 2 * time.Second}
			case 1:
				time.Sleep(time.Second)
				return &ThrottledError{RetryAfter: 5 * time.Second} // until t=6s
			case 2:
				time.Sleep(time.Second)
				return &ThrottledError{RetryAfter: time.Second} // shorter: no change
			}
			return nil
		}
		t0 := time.Now()
		rep, err := Run(t.Context(), ints(6), fn, Options{Concurrency: 3})
		if err != nil {
			t.Fatal(err)
		}
		// 0, 1, 2 at 0; the probe (item 0) at 6s; then 1, 2, 3, 4, 5.
		var at []time.Duration
		for _, s := range sends[3:] {
			at = append(at, s.Sub(t0))
		}
		if at[0] != 6*time.Second || at[1] != 6*time.Second {
			t.Errorf("sends after the first three at %v, want the probe then the rest at 6s", at)
		}
		if s := rep.Summary; s.Throttled != 3 || s.Pauses != 1 || s.Retries != 3 {
			t.Errorf("Summary = %v", s)
		}
	})
}

// TestRunPausePastDeadline: a pause that would end after the context's
// deadline ends the run at once instead of sleeping in vain.
func TestRunPausePastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		fn := func(_ context.Context, i int) error {
			if i == 1 {
				return &ThrottledError{Status: 429, RetryAfter: time.Minute}
			}
			return nil
		}
		t0 := time.Now()
		rep, err := Run(ctx, ints(5), fn, Options{Concurrency: 1})
		if d := time.Since(t0); d != 0 {
			t.Errorf("Run took %v, want 0", d)
		}
		if !errors.Is(err, ErrThrottled) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want ErrThrottled and DeadlineExceeded", err)
		}
		want := []Outcome{Succeeded, Interrupted, NotStarted, NotStarted, NotStarted}
		for i, res := range rep.Results {
			if res.Outcome != want[i] {
				t.Errorf("Results[%d] = %v, want %v", i, res.Outcome, want[i])
			}
		}
		if res := rep.Results[1]; res.Status != 429 || !errors.Is(res.Err, ErrThrottled) {
			t.Errorf("Results[1] = %+v, want status 429 and the throttle error", res)
		}
	})
}

// TestRunThrottledNeverLost runs random throttling schedules: whatever the
// server does, every item succeeds exactly once, and the counts add up.
func TestRunThrottledNeverLost(t *testing.T) {
	for seed := range uint64(20) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 25))
			var mu sync.Mutex
			ok := map[int]int{}
			calls, throttles := 0, 0
			fn := func(_ context.Context, i int) error {
				mu.Lock()
				calls++
				throttle := rng.IntN(5) == 0
				ra := time.Duration(rng.IntN(3)) * time.Second
				lat := time.Duration(rng.IntN(200)) * time.Millisecond
				if throttle {
					throttles++
				} else {
					ok[i]++
				}
				mu.Unlock()
				time.Sleep(lat)
				if throttle {
					return &ThrottledError{RetryAfter: ra}
				}
				return nil
			}
			rep, err := Run(t.Context(), ints(200), fn, Options{Concurrency: 1 + int(seed%8)})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for i := range 200 {
				if ok[i] != 1 {
					t.Errorf("seed %d: item %d succeeded %d times", seed, i, ok[i])
				}
			}
			s := rep.Summary
			if s.Throttled != throttles || s.Retries != throttles || calls != 200+throttles {
				t.Errorf("seed %d: Summary = %v; server saw %d calls, %d throttles", seed, s, calls, throttles)
			}
		})
	}
}

func TestThrottledError(t *testing.T) {
	inner := errors.New("quota")
	tests := []struct {
		err  *ThrottledError
		want string
	}{
		{&ThrottledError{}, "batch: throttled"},
		{&ThrottledError{Status: 429, RetryAfter: 3 * time.Second}, "batch: throttled: HTTP 429 Too Many Requests, retry after 3s"},
		{&ThrottledError{Err: inner}, "batch: throttled: quota"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(tt.err, ErrThrottled) {
			t.Errorf("%v does not match ErrThrottled", tt.err)
		}
	}
	if !errors.Is(&ThrottledError{Err: inner}, inner) {
		t.Error("ThrottledError does not unwrap to Err")
	}
}

func TestThrottleDelay(t *testing.T) {
	tests := []struct {
		err       error
		delay     time.Duration
		throttled bool
	}{
		{nil, 0, false},
		{errBad, 0, false},
		{ErrThrottled, 0, true},
		{fmt.Errorf("x: %w", &ThrottledError{RetryAfter: 2 * time.Second}), 2 * time.Second, true},
		{&ThrottledError{RetryAfter: -time.Second}, 0, true},
		{&StatusError{Code: 500}, 0, false},
	}
	for _, tt := range tests {
		d, kind := throttleOf(tt.err, time.Now())
		if ok := kind == serverThrottle; d != tt.delay || ok != tt.throttled {
			t.Errorf("throttleOf(%v) = %v, %v; want %v, server throttle %v", tt.err, d, kind, tt.delay, tt.throttled)
		}
	}
}

// TestRunHugeRetryAfter: a Retry-After of 9999999999 seconds pauses its
// host for Options.MaxBackoff (five minutes by default), never longer.
// Within a 3 s deadline that pause cannot end, so the host's items end at
// once, not journaled, so a resumed run does them: the throttled one
// Interrupted, those never sent NotStarted. The
// run's error says why; the items of another host go on. Without a
// deadline and with MaxBackoff 1 s, the item is done after a pause of 1 s.
func TestRunHugeRetryAfter(t *testing.T) {
	huge := func(throttled *atomic.Bool) func(*http.Request) (*http.Response, error) {
		return func(req *http.Request) (*http.Response, error) {
			if req.URL.Host == "slow.test" && throttled.CompareAndSwap(false, true) {
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "9999999999"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}
	}
	build := func(ctx context.Context, i int) (*http.Request, error) {
		host := [...]string{"slow.test", "fast.test"}[i%2]
		return http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/items/%d", host, i), nil)
	}
	t.Run("3s deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var throttled atomic.Bool
			client := &http.Client{Transport: testhttp.RoundTripperFunc(huge(&throttled))}
			path := filepath.Join(t.TempDir(), "run.jsonl")
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			t0 := time.Now()
			rep, err := Run(ctx, ints(6), HTTP(client, build, nil), Options{Concurrency: 1, Journal: path})
			elapsed := time.Since(t0)
			t.Logf("%v in %v; err = %v", rep.Summary, elapsed, err)
			assert.Zero(t, elapsed, "no pause is slept in vain")
			for i, res := range rep.Results {
				want := Succeeded
				switch {
				case i == 0:
					want = Interrupted // slow.test's first, throttled
				case i%2 == 0:
					want = NotStarted // slow.test's others, held back by its pause, never sent
				}
				assert.Equal(t, want, res.Outcome, "Results[%d]: %v", i, res.Err)
			}
			assert.Equal(t, http.StatusTooManyRequests, rep.Results[0].Status)
			assert.ErrorIs(t, err, ErrThrottled)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			finished := 0
			for _, rec := range readJournal(t, path) {
				if rec.finished() {
					finished++
					assert.Equal(t, Succeeded.String(), rec.Outcome, "only fast.test's items finish: %+v", rec)
				}
			}
			assert.Equal(t, 3, finished, "fast.test's 3 items are journaled as done")
		})
	})
	t.Run("MaxBackoff 1s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var throttled atomic.Bool
			client := &http.Client{Transport: testhttp.RoundTripperFunc(huge(&throttled))}
			t0 := time.Now()
			rep, err := Run(t.Context(), ints(3), HTTP(client, build, nil), Options{Concurrency: 1, MaxBackoff: time.Second})
			elapsed := time.Since(t0)
			t.Logf("%v in %v", rep.Summary, elapsed)
			require.NoError(t, err)
			assert.Equal(t, 3, rep.Summary.Succeeded)
			assert.Equal(t, 1, rep.Summary.Pauses)
			assert.Equal(t, time.Second, elapsed, "the pause is MaxBackoff")
		})
	})
}

// TestOneErrThrottled: batch's ErrThrottled is pace's, so a throttle met by
// the Transport (a request behind its key's throttled probe) and one an
// item function reports match the same error, and Run takes both as the
// server's throttle.
func TestOneErrThrottled(t *testing.T) {
	require.Same(t, pace.ErrThrottled, ErrThrottled)
	now := time.Now()
	for _, err := range []error{
		ErrThrottled,
		&ThrottledError{Status: http.StatusTooManyRequests},
		&pace.WaitError{Key: "h", Err: pace.ErrThrottled},
	} {
		assert.ErrorIs(t, err, pace.ErrThrottled)
		_, kind := throttleOf(err, now)
		assert.Equal(t, serverThrottle, kind, "%v", err)
	}
}

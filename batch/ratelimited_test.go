package batch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
	"github.com/stretchr/testify/assert"
)

// TestRunTransportDeadline is the new-user trial's run: a server that always
// answers 429 with Retry-After: 1, reached through a pace.Transport, and a
// run with a 3.5 s deadline. The Transport refuses the retry that would
// outlast the deadline (an error matching pace.ErrWaitExceedsDeadline); the
// items ran out of time, they did not fail: each is interrupted, or not
// started when its key's pause held back each of its attempts before it
// was sent (NotStarted's doc; which, depends on the order the three reach
// the host: about 3 runs in 10 hold one back), nothing is journaled, and a
// run resumed once the server recovers does all three.
func TestRunTransportDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.jsonl")
		var open atomic.Bool
		var sent atomic.Int32
		client := &http.Client{Transport: &pace.Transport{Base: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
			sent.Add(1)
			if open.Load() {
				return testhttp.Response(http.StatusOK), nil
			}
			return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
		})}}
		build := func(ctx context.Context, i int) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://api.test/items/%d", i), nil)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3500*time.Millisecond)
		defer cancel()
		rep, err := Run(ctx, ints(3), HTTP(client, build, nil), Options{Journal: path})
		if s := rep.Summary; s.Interrupted+s.NotStarted != 3 || s.Interrupted == 0 || s.Failed != 0 {
			t.Errorf("Summary = %v, want 3 interrupted or never sent, one at least interrupted, 0 failed", s)
		}
		for i, res := range rep.Results {
			// The item that ended the run met pace.ErrWaitExceedsDeadline;
			// which item that is, and whether the others had used up the
			// Transport's attempts on a 429, depends on the order the three
			// reached the host.
			// pace.ErrThrottled: the item waited behind its host's probe,
			// whose throttled answers counted as its attempts.
			if res.Outcome == NotStarted && res.Attempts == 0 && errors.Is(res.Err, pace.ErrRateLimited) {
				continue // held back in line each time: never sent
			}
			if res.Outcome != Interrupted || !(errors.Is(res.Err, pace.ErrWaitExceedsDeadline) || errors.Is(res.Err, ErrThrottled) || errors.Is(res.Err, pace.ErrThrottled)) {
				t.Errorf("Results[%d] = %v, %v; want interrupted by a throttle, or never sent", i, res.Outcome, res.Err)
			}
		}
		var e *Error
		if !errors.As(err, &e) || e.Interrupted+e.NotStarted != 3 || e.First != nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Run error = %v, want *Error with 3 interrupted or never sent, no failure, matching context.DeadlineExceeded", err)
		}
		assertNothingJournaled(t, path)

		open.Store(true)
		before := sent.Load()
		rep, err = Run(t.Context(), ints(3), HTTP(client, build, nil), Options{Journal: path})
		if err != nil || rep.Summary.Succeeded != 3 || rep.Summary.Resumed != 0 || sent.Load()-before != 3 {
			t.Errorf("resumed run: %v, %v, %d requests; want all 3 done again, 3 requests", rep.Summary, err, sent.Load()-before)
		}
	})
}

// TestThrottleOf checks which errors count as throttles, and of which
// kind: the server's (ErrThrottled, pace.ErrThrottled, and a final 429 that
// a pace.Transport with ErrorOnGiveUp returns inside a *pace.AttemptsError)
// and a client-side limit's refusal (pace.ErrRateLimited and the errors that
// wrap it, nothing sent), with the delay they carry; not a refusal that can
// never succeed, nor a context error, nor a failed answer whose retry the
// Transport could not wait for.
func TestThrottleOf(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	resp := func(code int, kv ...string) *http.Response {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return &http.Response{StatusCode: code, Header: h}
	}
	tests := []struct {
		name  string
		err   error
		kind  throttleKind
		delay time.Duration
	}{
		{"queue full", &pace.WaitError{Key: "h", Err: pace.ErrQueueFull}, clientRefusal, 0},
		{"wait too long", &pace.WaitError{Key: "h", Delay: time.Hour, Err: pace.ErrWaitTooLong}, clientRefusal, time.Hour},
		{"wait exceeds deadline", fmt.Errorf("get: %w", &pace.WaitError{Key: "h", Delay: 2 * time.Second,
			Err: fmt.Errorf("%w: %w", pace.ErrWaitExceedsDeadline, context.DeadlineExceeded)}), clientRefusal, 2 * time.Second},
		{"plain rate limited", pace.ErrRateLimited, clientRefusal, 0},
		{"negative delay", &pace.WaitError{Delay: -time.Second, Err: pace.ErrQueueFull}, clientRefusal, 0},
		{"server throttle", &ThrottledError{RetryAfter: 3 * time.Second}, serverThrottle, 3 * time.Second},
		// The wait behind the key's probe, whose answer was another 429.
		{"behind a throttled probe", &pace.WaitError{Key: "h", Err: pace.ErrThrottled}, serverThrottle, 0},
		{"burst exceeded", &pace.WaitError{Err: pace.ErrBurstExceeded}, notThrottled, 0},
		{"cancelled wait", &pace.WaitError{Err: context.Canceled}, notThrottled, 0},
		{"deadline", context.DeadlineExceeded, notThrottled, 0},
		{"other", errBad, notThrottled, 0},
		// The Transport's backoff after a 503 would outlast the call's
		// deadline: a failed answer, not a pause the host asked for.
		{"backoff past the deadline after a 503", &pace.AttemptsError{Attempts: 2, StatusCode: 503, Reason: retry.ReasonDeadline,
			Err: &pace.WaitError{Key: "h", Delay: time.Second, Err: pace.ErrWaitExceedsDeadline}}, notThrottled, 0},
		// Its limiter refused the wait for the retry of a 503: a failure too.
		{"retry refused after a 503", &pace.AttemptsError{Attempts: 1, StatusCode: 503,
			Err: &pace.WaitError{Key: "h", Delay: time.Second, Err: pace.ErrWaitTooLong}}, notThrottled, 0},
		{"pause past the deadline after a 429", &pace.AttemptsError{Attempts: 1, StatusCode: 429, Reason: retry.ReasonDeadline,
			Err: &pace.WaitError{Key: "h", Delay: time.Second, Err: pace.ErrWaitExceedsDeadline}}, serverThrottle, time.Second},
		// A 403 is retried only when it named a delay (GitHub's rate limits).
		{"pause past the deadline after a 403", &pace.AttemptsError{Attempts: 1, StatusCode: 403, Reason: retry.ReasonDeadline,
			Err: &pace.WaitError{Key: "h", Delay: time.Minute, Err: pace.ErrWaitExceedsDeadline}}, serverThrottle, time.Minute},
		{"attempts spent behind a throttled probe", &pace.AttemptsError{Attempts: 2, StatusCode: 429, Reason: retry.ReasonAttempts,
			Err: &pace.WaitError{Key: "h", Err: pace.ErrThrottled}}, serverThrottle, 0},
		// Transport.ErrorOnGiveUp: the final response rides in the error,
		// and pace.Throttled judges it, as CheckResponse would.
		{"ErrorOnGiveUp 429", &url.Error{Op: "Get", URL: "http://h/", Err: &pace.AttemptsError{Attempts: 2, StatusCode: 429,
			Reason: retry.ReasonAttempts, Response: resp(429, "Retry-After", "0")}}, serverThrottle, 0},
		{"ErrorOnGiveUp 429 with a delay", &pace.AttemptsError{Attempts: 2, StatusCode: 429,
			Reason: retry.ReasonAttempts, Response: resp(429, "Retry-After", "7")}, serverThrottle, 7 * time.Second},
		{"ErrorOnGiveUp 503 with a delay", &pace.AttemptsError{Attempts: 2, StatusCode: 503,
			Reason: retry.ReasonDelayTooLong, Response: resp(503, "Retry-After", "3600")}, serverThrottle, time.Hour},
		{"ErrorOnGiveUp 503", &pace.AttemptsError{Attempts: 2, StatusCode: 503,
			Reason: retry.ReasonAttempts, Response: resp(503)}, notThrottled, 0},
		{"ErrorOnGiveUp 429 past the deadline", &pace.AttemptsError{Attempts: 1, StatusCode: 429, Reason: retry.ReasonDeadline,
			Err:      &pace.WaitError{Key: "h", Delay: 2 * time.Second, Err: pace.ErrWaitExceedsDeadline},
			Response: resp(429, "Retry-After", "2")}, serverThrottle, 2 * time.Second},
	}
	for _, tt := range tests {
		d, kind := throttleOf(tt.err, now)
		assert.Equal(t, tt.kind, kind, "%s: kind of %v", tt.name, tt.err)
		assert.Equal(t, tt.delay, d, "%s: delay of %v", tt.name, tt.err)
		d, ok := Throttled(tt.err, now)
		assert.Equal(t, tt.kind != notThrottled, ok, "%s: Throttled(%v)", tt.name, tt.err)
		assert.Equal(t, tt.delay, d, "%s: Throttled's delay of %v", tt.name, tt.err)
	}
}

// TestRunClientSideRefusal: a call a client-side limit refused (nothing was
// sent) is not a failure: the item goes again after the wait the limiter
// named, or the run's backoff without one, and no key is paused.
func TestRunClientSideRefusal(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want time.Duration // from the refusal to the item's next attempt
	}{
		{"queue full", &pace.WaitError{Key: "h", Err: pace.ErrQueueFull}, DefaultBackoff},
		{"wait too long", &pace.WaitError{Key: "h", Delay: 7 * time.Second, Err: pace.ErrWaitTooLong}, 7 * time.Second},
		// A per-call deadline shorter than the run's (here the run has none).
		{"call deadline", &pace.WaitError{Key: "h", Delay: 3 * time.Second,
			Err: fmt.Errorf("%w: %w", pace.ErrWaitExceedsDeadline, context.DeadlineExceeded)}, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "run.jsonl")
				var at []time.Time
				fn := func(_ context.Context, i int) error {
					if i != 1 {
						return nil
					}
					at = append(at, time.Now())
					if len(at) == 1 {
						return fmt.Errorf("item %d: %w", i, tt.err)
					}
					return nil
				}
				rep, err := Run(t.Context(), ints(3), fn, Options{Concurrency: 1, Journal: path})
				if err != nil || rep.Summary.Succeeded != 3 || rep.Summary.Throttled != 1 || rep.Summary.Pauses != 0 || rep.Results[1].Attempts != 2 {
					t.Fatalf("Run = %v, %v; want 3 succeeded, 1 throttled, item 1 in 2 attempts", rep.Summary, err)
				}
				if len(at) != 2 || at[1].Sub(at[0]) != tt.want {
					t.Errorf("item 1 tried again after %v, want %v", at[len(at)-1].Sub(at[0]), tt.want)
				}
				for _, rec := range readJournal(t, path) {
					if rec.Outcome != Succeeded.String() {
						t.Errorf("journal record %+v, want only successes", rec)
					}
				}
			})
		})
	}
}

// TestRunWaitExceedsDeadline: an attempt refused because its wait would
// outlast the run's deadline (pace.ErrWaitExceedsDeadline, before the
// deadline itself) ends the run; the item is interrupted and not journaled,
// and the items never reached are not started.
func TestRunWaitExceedsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.jsonl")
		refused := &pace.WaitError{Key: "h", Delay: time.Second,
			Err: fmt.Errorf("%w: %w", pace.ErrWaitExceedsDeadline, context.DeadlineExceeded)}
		fn := func(_ context.Context, i int) error {
			time.Sleep(time.Second)
			if i == 3 {
				return refused
			}
			return nil
		}
		ctx, cancel := context.WithTimeout(t.Context(), 4500*time.Millisecond)
		defer cancel()
		t0 := time.Now()
		rep, err := Run(ctx, ints(6), fn, Options{Concurrency: 1, Journal: path})
		want := []Outcome{Succeeded, Succeeded, Succeeded, Interrupted, NotStarted, NotStarted}
		for i, res := range rep.Results {
			if res.Outcome != want[i] {
				t.Errorf("Results[%d].Outcome = %v, want %v", i, res.Outcome, want[i])
			}
		}
		if d := time.Since(t0); d != 4*time.Second {
			t.Errorf("Run returned after %v, want 4s (at the refusal)", d)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrThrottled) {
			t.Errorf("Run error = %v, want a throttle stopped by the deadline", err)
		}
		if recs := readJournal(t, path); len(recs) != 3 {
			t.Errorf("journal holds %d records, want the 3 successes", len(recs))
		}
	})
}

package batch

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestRequeue: an item whose attempts end 503, 503, 200 at the batch level
// (the Transport's own retries spent) succeeds on its third attempt, each
// requeue waiting Backoff doubled, jittered into the wait's second half
// (0.5-1 s, then 1-2 s, with the defaults).
func TestRequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sends []time.Time
		client := &http.Client{Transport: testhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			sends = append(sends, time.Now())
			if len(sends) < 3 {
				return testhttp.Response(http.StatusServiceUnavailable), nil
			}
			return testhttp.Response(http.StatusOK), nil
		})}
		build := func(ctx context.Context, _ int) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		}
		rep, err := Run(t.Context(), ints(1), HTTP(client, build, nil), Options{})
		require.NoError(t, err)
		assert.Equal(t, 3, rep.Results[0].Attempts)
		assert.Equal(t, 1, rep.Summary.Requeued)
		assert.Equal(t, 2, rep.Summary.Retries)
		require.Len(t, sends, 3)
		for i, want := range []time.Duration{DefaultBackoff, 2 * DefaultBackoff} {
			d := sends[i+1].Sub(sends[i])
			assert.True(t, d >= want/2 && d <= want, "requeue %d after %v, want within [%v, %v]", i+1, d, want/2, want)
		}
		assert.Contains(t, rep.Summary.String(), "1 requeued")
	})
}

// TestRequeueOnlyWhatIsSafe: what goes back in line and what fails at once.
func TestRequeueOnlyWhatIsSafe(t *testing.T) {
	reset := &pace.AttemptsError{Attempts: 3, Reason: retry.ReasonAttempts, Err: io.ErrUnexpectedEOF}
	tests := []struct {
		name         string
		method       string
		key          string // "" derives one; "-" opts out
		err          error  // what the client returns, or nil for a 503 answer
		opts         Options
		wantAttempts int
	}{
		{"GET 503", http.MethodGet, "", nil, Options{}, 1 + DefaultMaxRequeues},
		{"POST 503 with the derived key", http.MethodPost, "", nil, Options{}, 1 + DefaultMaxRequeues},
		{"POST 503 without a key", http.MethodPost, "-", nil, Options{}, 1},
		{"GET, the Transport's attempts spent", http.MethodGet, "", reset, Options{}, 1 + DefaultMaxRequeues},
		{"GET, the Transport's budget spent", http.MethodGet, "", &pace.AttemptsError{Attempts: 1, Reason: retry.ReasonBudget, Err: io.EOF}, Options{}, 1 + DefaultMaxRequeues},
		{"POST not retried by the Transport", http.MethodPost, "-", &pace.AttemptsError{Attempts: 1, Reason: retry.ReasonNotIdempotent, Err: io.EOF}, Options{}, 1},
		{"a plain transport error", http.MethodGet, "", io.ErrUnexpectedEOF, Options{}, 1},
		{"GET, the call's timeout", http.MethodGet, "", context.DeadlineExceeded, Options{}, 1 + DefaultMaxRequeues},
		{"POST without a key, the call's timeout", http.MethodPost, "-", context.DeadlineExceeded, Options{}, 1},
		{"GET, the next wait past the call's deadline", http.MethodGet, "", &pace.AttemptsError{Attempts: 2, Reason: retry.ReasonDeadline, Err: io.EOF}, Options{}, 1 + DefaultMaxRequeues},
		{"GET, the server's delay too long", http.MethodGet, "", &pace.AttemptsError{Attempts: 1, Reason: retry.ReasonDelayTooLong, Err: io.EOF}, Options{}, 1},
		{"requeues off", http.MethodGet, "", nil, Options{MaxRequeues: -1}, 1},
		{"one requeue", http.MethodGet, "", nil, Options{MaxRequeues: 1}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := &http.Client{Transport: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
					if tt.err != nil {
						return nil, tt.err
					}
					return testhttp.Response(http.StatusServiceUnavailable), nil
				})}
				build := func(ctx context.Context, _ int) (*http.Request, error) {
					req, err := http.NewRequestWithContext(ctx, tt.method, "http://api.test/", nil)
					if tt.key == "-" {
						req.Header.Set("Idempotency-Key", "")
					}
					return req, err
				}
				rep, err := Run(t.Context(), ints(1), HTTP(client, build, nil), tt.opts)
				require.Error(t, err)
				assert.Equal(t, Failed, rep.Results[0].Outcome)
				assert.Equal(t, tt.wantAttempts, rep.Results[0].Attempts)
			})
		})
	}
}

// TestRequeuePlainFunc: a plain function's retryable failure is requeued
// only when Options.Idempotent declares the item safe to repeat.
func TestRequeuePlainFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls [2]atomic.Int32
		fn := func(_ context.Context, i int) error {
			if calls[i].Add(1) == 1 {
				return &StatusError{Code: http.StatusBadGateway}
			}
			return nil
		}
		rep, _ := Run(t.Context(), ints(2), fn, Options{Idempotent: func(i int) bool { return i == 1 }})
		assert.Equal(t, Failed, rep.Results[0].Outcome)
		assert.Equal(t, Succeeded, rep.Results[1].Outcome)
		assert.Equal(t, int32(2), calls[1].Load())
	})
}

// TestRequeueDeadline: a requeue whose wait would outlast the context's
// deadline is not made: the item fails at once with its error.
func TestRequeueDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		fn := func(context.Context, int) error { return &StatusError{Code: http.StatusServiceUnavailable} }
		start := time.Now()
		rep, err := Run(ctx, ints(1), fn, Options{Idempotent: func(int) bool { return true }})
		var se *StatusError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 1, rep.Results[0].Attempts)
		assert.Zero(t, time.Since(start), "no wait")
	})
}

// TestRequeueLowerPace: requeued attempts take at most half of Concurrency
// at once, while new items go on.
func TestRequeueLowerPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[int]int{}
		inflight, most := 0, 0 // requeued attempts in flight
		fn := func(_ context.Context, i int) error {
			mu.Lock()
			seen[i]++
			requeued := seen[i] > 1
			if requeued {
				inflight++
				most = max(most, inflight)
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if requeued {
				inflight--
				return nil
			}
			if i < 40 {
				return &StatusError{Code: http.StatusServiceUnavailable}
			}
			return nil
		}
		rep, err := Run(t.Context(), ints(200), fn, Options{Concurrency: 8, Idempotent: func(int) bool { return true }})
		require.NoError(t, err)
		assert.Equal(t, 40, rep.Summary.Requeued)
		assert.LessOrEqual(t, most, 4)
		assert.Positive(t, most)
	})
}

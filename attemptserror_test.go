package pace

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestAttemptsErrorText: one attempt is singular, the give-up reason is
// said in words, and a wrapped pace error is not prefixed twice.
func TestAttemptsErrorText(t *testing.T) {
	tests := []struct {
		err  *AttemptsError
		want string
	}{
		{&AttemptsError{Attempts: 1, Err: io.EOF}, "pace: 1 attempt: EOF"},
		{&AttemptsError{Attempts: 2, StatusCode: 503, Err: context.Canceled}, "pace: 2 attempts, last status 503: context canceled"},
		{&AttemptsError{Attempts: 1, Reason: retry.ReasonNotIdempotent, Err: io.EOF}, "pace: 1 attempt (gave up: method not safe to replay): EOF"},
		{&AttemptsError{Attempts: 3, Reason: retry.ReasonAttempts, Err: io.EOF}, "pace: 3 attempts (gave up: MaxAttempts reached): EOF"},
		{&AttemptsError{Attempts: 1, Reason: retry.ReasonBudget, Err: io.EOF}, "pace: 1 attempt (gave up: retry budget spent): EOF"},
		{&AttemptsError{Attempts: 1, StatusCode: 429, Reason: retry.ReasonDeadline, Err: &WaitError{Key: "api.test", Delay: 30 * time.Second, Err: errDeadline, hostKey: true}},
			`pace: 1 attempt, last status 429 (gave up: the wait would outlast the context's deadline): "api.test": wait 30s: rate limited: wait exceeds context deadline: context deadline exceeded`},
		{&AttemptsError{Attempts: 2, Reason: "custom", Err: io.EOF}, "pace: 2 attempts (gave up: custom): EOF"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestAttemptsErrorReason: the Transport records why it stopped retrying a
// transport error, the same Reason as its EventGiveUp, and errors.Is still
// sees the last error.
func TestAttemptsErrorReason(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	tests := []struct {
		name         string
		tr           *Transport
		method, body string
		err          error
		wantAttempts int
		wantReason   retry.Reason
	}{
		{"attempts", &Transport{}, "GET", "", reset, retry.DefaultMaxAttempts, retry.ReasonAttempts},
		{"not idempotent", &Transport{}, "POST", "x", reset, 1, retry.ReasonNotIdempotent},
		{"budget", &Transport{Retry: retry.Policy{Budget: retry.Budget{MinRetriesPerSec: -1, PercentCanRetry: -1}}}, "GET", "", reset, 1, retry.ReasonBudget},
		{"not replayable", &Transport{MaxBufferedBody: -1}, "PUT", "x", reset, 1, retry.ReasonNotReplayable},
		{"never retried", &Transport{}, "GET", "", context.Canceled, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Fail(tt.err)}}
				tr := tt.tr
				tr.Base, tr.Retry.NewBackOff = srv, constBackOff(time.Millisecond)
				var giveUp retry.Reason
				tr.OnEvent = func(e Event) {
					if e.Kind == EventGiveUp {
						giveUp = e.Reason
					}
				}
				req := newRequest(t, t.Context(), tt.method, "http://api.test/", "")
				if tt.body != "" {
					req.Body = testhttp.NewOneShot(tt.body) // no GetBody
				}
				_, err := tr.RoundTrip(req)
				var ae *AttemptsError
				if !errors.As(err, &ae) || !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want an *AttemptsError wrapping %v", err, tt.err)
				}
				if ae.Attempts != tt.wantAttempts || ae.Reason != tt.wantReason {
					t.Errorf("Attempts %d, Reason %q; want %d, %q", ae.Attempts, ae.Reason, tt.wantAttempts, tt.wantReason)
				}
				if ae.Reason != giveUp {
					t.Errorf("Reason %q, but the give-up event said %q", ae.Reason, giveUp)
				}
			})
		})
	}

	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusTooManyRequests, "Retry-After", "30")}}
			tr := &Transport{Base: srv}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := tr.RoundTrip(newRequest(t, ctx, "GET", "http://api.test/", ""))
			var ae *AttemptsError
			if !errors.As(err, &ae) || ae.Reason != retry.ReasonDeadline || ae.StatusCode != http.StatusTooManyRequests {
				t.Errorf("err = %v, want an *AttemptsError with Reason %q and status 429", err, retry.ReasonDeadline)
			}
		})
	})
}

// TestAttemptsErrorStatusBehindProbe: a request whose last attempt was its
// key's probe's throttled answer reports the status the probe met, not a
// 429 it never saw. 10 concurrent calls to a server that answers every
// request 503 with Retry-After: 1: every AttemptsError says 503. Before,
// those of the requests behind the probe said 429.
func TestAttemptsErrorStatusBehindProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusServiceUnavailable, "Retry-After", "1")}}
		tr := &Transport{Base: srv}
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
				mu.Lock()
				defer mu.Unlock()
				var ae *AttemptsError
				switch {
				case errors.As(err, &ae):
					statuses[ae.StatusCode]++
				case err == nil:
					statuses[resp.StatusCode]++
					resp.Body.Close()
				default:
					t.Errorf("RoundTrip: %v", err)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, map[int]int{http.StatusServiceUnavailable: 10}, statuses)
	})
}

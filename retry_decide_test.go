package pace

import (
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pacehttp/pace/internal/retrydecide"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// decideNow is the instant every decide case is decided at.
var decideNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// decideBackoff is a deterministic backoff schedule for decide: it returns
// wait (and ok) and records the throttled argument of each call.
type decideBackoff struct {
	wait  time.Duration
	stop  bool
	calls []bool // throttled, per call
}

func (b *decideBackoff) next(throttled bool) (time.Duration, bool) {
	b.calls = append(b.calls, throttled)
	if b.stop {
		return 0, false
	}
	return b.wait, true
}

// decideEnd builds the retrydecide.End the Transport builds (call.decide) for
// a method's attempt 1 that ended with resp or err: the default policy's
// verdict, a replayable body, budget left, no strikes, no deadline, the
// default caps, NoJitter, and bo's schedule. rnd returns the top of its
// range, so that a jittered pause is at its longest.
func decideEnd(t *testing.T, method string, resp *http.Response, err error, bo *decideBackoff) retrydecide.End {
	t.Helper()
	req := newRequest(t, t.Context(), method, "http://api.test/v1", "")
	again, why, _ := decideExec.Check(req, resp, err, 1)
	return retrydecide.End{
		Now: decideNow, Attempt: 1, Resp: resp, Err: err, Retry: again, Why: why,
		Failed: decideExec.Failed(req.Context(), resp, err, again), CanRetry: true,
		MaxAttempts: retry.DefaultMaxAttempts, MaxRetryAfter: DefaultMaxRetryAfter, Jitter: retry.NoJitter,
		Backoff: bo.next, Rnd: func(n int64) int64 { return n - 1 },
	}
}

// decideExec is the default policy's executor, as the Transport builds it.
var decideExec = &retrydecide.Executor{ServerDelay: RetryAfter}

// TestDecide is the retry decision as a table, on explicit time: which
// wait, which pause of the key, and, when a retryable failure is not
// retried, why. calls lists the throttled argument of each call of the
// backoff schedule (nil: not called).
func TestDecide(t *testing.T) {
	s := time.Second
	ms := time.Millisecond
	pastDate := decideNow.Add(-10 * s).Format(http.TimeFormat)
	date := decideNow.Format(http.TimeFormat)
	tests := []struct {
		name   string
		method string
		resp   *http.Response
		err    error
		bo     decideBackoff
		edit   func(*retrydecide.End)
		want   retrydecide.Verdict
		calls  []bool
	}{
		// Success and final answers.
		{name: "success: the zero verdict", resp: testhttp.Response(200),
			want: retrydecide.Verdict{}},
		{name: "success with a Retry-After: the zero verdict", resp: testhttp.Response(200, "Retry-After", "5"),
			want: retrydecide.Verdict{}},
		{name: "a final status: no retry, no reason", resp: testhttp.Response(404, "Retry-After", "5"),
			want: retrydecide.Verdict{}},

		// The server's delay is the wait.
		{name: "500 with Retry-After: the server's delay is the wait", resp: testhttp.Response(500, "Retry-After", "3"),
			want: retrydecide.Verdict{Retry: true, Wait: 3 * s, Why: retry.ReasonServerDelay}},
		{name: "500 with Retry-After-Ms", resp: testhttp.Response(500, "Retry-After-Ms", "1500"),
			want: retrydecide.Verdict{Retry: true, Wait: 1500 * ms, Why: retry.ReasonServerDelay}},
		{name: "500 without a delay: the backoff schedule", resp: testhttp.Response(500), bo: decideBackoff{wait: 300 * ms},
			want: retrydecide.Verdict{Retry: true, Wait: 300 * ms, Why: retry.ReasonBackoff}, calls: []bool{false}},
		{name: "a connection reset: the backoff schedule", err: syscall.ECONNRESET, bo: decideBackoff{wait: 200 * ms},
			want: retrydecide.Verdict{Retry: true, Wait: 200 * ms, Why: retry.ReasonBackoff}, calls: []bool{false}},

		// Decide's Wait (a delay read from the body) and Fail.
		{name: "Decide's Wait replaces the headers' delay and the backoff", resp: testhttp.Response(500, "Retry-After", "3"),
			edit: func(in *retrydecide.End) { in.HookWait = 7 * s },
			want: retrydecide.Verdict{Retry: true, Wait: 7 * s, Why: retry.ReasonServerDelay}},
		{name: "Decide's Wait on a 429 pauses the key", resp: testhttp.Response(429),
			edit: func(in *retrydecide.End) { in.HookWait = 2 * s },
			want: retrydecide.Verdict{Retry: true, Wait: 2 * s, Pause: 2 * s, Why: retry.ReasonServerDelay}},
		{name: "Decide's Wait over maxRetryAfter is refused", resp: testhttp.Response(503),
			edit: func(in *retrydecide.End) { in.HookWait = time.Hour },
			want: retrydecide.Verdict{Why: retry.ReasonDelayTooLong, Refused: time.Hour, Pause: DefaultMaxRetryAfter}},
		{name: "Decide's Wait after a transport error: ignored", err: syscall.ECONNRESET, bo: decideBackoff{wait: 200 * ms},
			edit: func(in *retrydecide.End) { in.HookWait = 7 * s },
			want: retrydecide.Verdict{Retry: true, Wait: 200 * ms, Why: retry.ReasonBackoff}, calls: []bool{false}},
		{name: "Decide's Fail on a success", resp: testhttp.Response(200),
			edit: func(in *retrydecide.End) { in.Fail = io.EOF },
			want: retrydecide.Verdict{Why: retry.ReasonDecided, Fail: io.EOF}},
		{name: "Decide's Fail on a throttle keeps the pause", resp: testhttp.Response(429, "Retry-After", "3"),
			edit: func(in *retrydecide.End) { in.Fail = io.EOF },
			want: retrydecide.Verdict{Why: retry.ReasonDecided, Fail: io.EOF, Pause: 3 * s}},

		// 429 without a delay: retry.DefaultThrottlePause doubled by the strikes.
		{name: "429 without a delay pauses retry.DefaultThrottlePause", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			want: retrydecide.Verdict{Retry: true, Wait: 5 * s, Pause: 5 * s, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, 1 strike: 10s", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *retrydecide.End) { in.Strikes = 1 },
			want: retrydecide.Verdict{Retry: true, Wait: 10 * s, Pause: 10 * s, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, 2 strikes: 20s", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *retrydecide.End) { in.Strikes = 2 },
			want: retrydecide.Verdict{Retry: true, Wait: 20 * s, Pause: 20 * s, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, 40 strikes: retry.DefaultBackoffMax", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *retrydecide.End) { in.Strikes = 40 },
			want: retrydecide.Verdict{Retry: true, Wait: retry.DefaultBackoffMax, Pause: retry.DefaultBackoffMax, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, 1 strike, capped by maxRetryAfter", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *retrydecide.End) { in.Strikes, in.MaxRetryAfter = 1, 7*s },
			want: retrydecide.Verdict{Retry: true, Wait: 7 * s, Pause: 7 * s, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, maxRetryAfter under a second wins", resp: testhttp.Response(429), bo: decideBackoff{wait: 100 * ms},
			edit: func(in *retrydecide.End) { in.MaxRetryAfter = 500 * ms },
			want: retrydecide.Verdict{Retry: true, Wait: 500 * ms, Pause: 500 * ms, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, the request's own schedule longer", resp: testhttp.Response(429), bo: decideBackoff{wait: 8 * s},
			want: retrydecide.Verdict{Retry: true, Wait: 8 * s, Pause: 8 * s, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, full jitter at its lowest: never under retry.DefaultThrottlePause", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *retrydecide.End) {
				in.Strikes, in.Jitter, in.Rnd = 1, retry.FullJitter, func(int64) int64 { return 0 }
			},
			want: retrydecide.Verdict{Retry: true, Wait: 5 * s, Pause: 5 * s, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, full jitter at its highest", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *retrydecide.End) { in.Strikes, in.Jitter = 1, retry.FullJitter },
			want: retrydecide.Verdict{Retry: true, Wait: 10 * s, Pause: 10 * s, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, NewBackOff schedule: its next wait, not the strikes", resp: testhttp.Response(429), bo: decideBackoff{wait: 3 * s},
			edit: func(in *retrydecide.End) { in.Strikes, in.CustomBackoff = 4, true },
			want: retrydecide.Verdict{Retry: true, Wait: 3 * s, Pause: 3 * s, Why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, NewBackOff schedule: never under a second", resp: testhttp.Response(429), bo: decideBackoff{wait: 10 * ms},
			edit: func(in *retrydecide.End) { in.CustomBackoff = true },
			want: retrydecide.Verdict{Retry: true, Wait: s, Pause: s, Why: retry.ReasonBackoff}, calls: []bool{true}},

		// 503 without a delay: an outage, not a throttle, on the throttle schedule.
		{name: "503 without a delay: no pause, the throttle schedule", resp: testhttp.Response(503), bo: decideBackoff{wait: 1200 * ms},
			want: retrydecide.Verdict{Retry: true, Wait: 1200 * ms, Why: retry.ReasonBackoff}, calls: []bool{true}},

		// 429 and 503 with a delay: pause = delay, floored at retry.MinThrottlePause.
		{name: "429 with Retry-After: pause = delay", resp: testhttp.Response(429, "Retry-After", "3"),
			want: retrydecide.Verdict{Retry: true, Wait: 3 * s, Pause: 3 * s, Why: retry.ReasonServerDelay}},
		{name: "503 with Retry-After: pause = delay", resp: testhttp.Response(503, "Retry-After", "3"),
			want: retrydecide.Verdict{Retry: true, Wait: 3 * s, Pause: 3 * s, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0: retry.MinThrottlePause", resp: testhttp.Response(429, "Retry-After", "0"),
			want: retrydecide.Verdict{Retry: true, Wait: retry.MinThrottlePause, Pause: retry.MinThrottlePause, Why: retry.ReasonServerDelay}},
		{name: "503 with Retry-After: 0: retry.MinThrottlePause", resp: testhttp.Response(503, "Retry-After", "0"),
			want: retrydecide.Verdict{Retry: true, Wait: retry.MinThrottlePause, Pause: retry.MinThrottlePause, Why: retry.ReasonServerDelay}},
		{name: "429 with a past HTTP-date: retry.MinThrottlePause", resp: testhttp.Response(429, "Retry-After", pastDate, "Date", date),
			want: retrydecide.Verdict{Retry: true, Wait: retry.MinThrottlePause, Pause: retry.MinThrottlePause, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After-Ms: 10: retry.MinThrottlePause", resp: testhttp.Response(429, "Retry-After-Ms", "10"),
			want: retrydecide.Verdict{Retry: true, Wait: retry.MinThrottlePause, Pause: retry.MinThrottlePause, Why: retry.ReasonServerDelay}},

		// A delay below retry.MinThrottlePause on a key with strikes: the floor
		// doubles per strike (RFC 9110 §10.2.3 allows Retry-After: 0;
		// repeated, it is the server's overload, not a schedule).
		{name: "429 with Retry-After: 0, 1 strike: 100ms", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *retrydecide.End) { in.Strikes = 1 },
			want: retrydecide.Verdict{Retry: true, Wait: 100 * ms, Pause: 100 * ms, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 3 strikes: 400ms", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *retrydecide.End) { in.Strikes = 3 },
			want: retrydecide.Verdict{Retry: true, Wait: 400 * ms, Pause: 400 * ms, Why: retry.ReasonServerDelay}},
		{name: "503 with Retry-After: 0, 1 strike: 100ms", resp: testhttp.Response(503, "Retry-After", "0"),
			edit: func(in *retrydecide.End) { in.Strikes = 1 },
			want: retrydecide.Verdict{Retry: true, Wait: 100 * ms, Pause: 100 * ms, Why: retry.ReasonServerDelay}},
		{name: "429 with a past HTTP-date, 2 strikes: 200ms", resp: testhttp.Response(429, "Retry-After", pastDate, "Date", date),
			edit: func(in *retrydecide.End) { in.Strikes = 2 },
			want: retrydecide.Verdict{Retry: true, Wait: 200 * ms, Pause: 200 * ms, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After-Ms: 10, 1 strike: 100ms", resp: testhttp.Response(429, "Retry-After-Ms", "10"),
			edit: func(in *retrydecide.End) { in.Strikes = 1 },
			want: retrydecide.Verdict{Retry: true, Wait: 100 * ms, Pause: 100 * ms, Why: retry.ReasonServerDelay}},
		{name: "Decide's Wait of 10ms on a 429, 1 strike: 100ms", resp: testhttp.Response(429),
			edit: func(in *retrydecide.End) { in.Strikes, in.HookWait = 1, 10*ms },
			want: retrydecide.Verdict{Retry: true, Wait: 100 * ms, Pause: 100 * ms, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 40 strikes: retry.DefaultBackoffMax", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *retrydecide.End) { in.Strikes = 40 },
			want: retrydecide.Verdict{Retry: true, Wait: retry.DefaultBackoffMax, Pause: retry.DefaultBackoffMax, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 40 strikes, capped by maxRetryAfter", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *retrydecide.End) { in.Strikes, in.MaxRetryAfter = 40, 7*s },
			want: retrydecide.Verdict{Retry: true, Wait: 7 * s, Pause: 7 * s, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 3 strikes, full jitter at its lowest: never under retry.MinThrottlePause", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *retrydecide.End) {
				in.Strikes, in.Jitter, in.Rnd = 3, retry.FullJitter, func(int64) int64 { return 0 }
			},
			want: retrydecide.Verdict{Retry: true, Wait: retry.MinThrottlePause, Pause: retry.MinThrottlePause, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 3 strikes, full jitter at its highest", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *retrydecide.End) { in.Strikes, in.Jitter = 3, retry.FullJitter },
			want: retrydecide.Verdict{Retry: true, Wait: 400 * ms, Pause: 400 * ms, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 1, strikes do not matter", resp: testhttp.Response(429, "Retry-After", "1"),
			edit: func(in *retrydecide.End) { in.Strikes = 9 },
			want: retrydecide.Verdict{Retry: true, Wait: s, Pause: s, Why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After, strikes do not matter", resp: testhttp.Response(429, "Retry-After", "3"),
			edit: func(in *retrydecide.End) { in.Strikes = 5 },
			want: retrydecide.Verdict{Retry: true, Wait: 3 * s, Pause: 3 * s, Why: retry.ReasonServerDelay}},

		// A delay above maxRetryAfter is refused (hashicorp/go-retryablehttp#247),
		// but the key still pauses, for the cap.
		{name: "429 delay above maxRetryAfter: refused, pause = cap", resp: testhttp.Response(429, "Retry-After", "600"),
			want: retrydecide.Verdict{Pause: DefaultMaxRetryAfter, Why: retry.ReasonDelayTooLong, Refused: 600 * s}},
		{name: "500 delay above maxRetryAfter: refused, no pause", resp: testhttp.Response(500, "Retry-After", "600"),
			want: retrydecide.Verdict{Why: retry.ReasonDelayTooLong, Refused: 600 * s}},
		{name: "delay too long comes before not replayable", resp: testhttp.Response(429, "Retry-After", "600"),
			edit: func(in *retrydecide.End) { in.CanRetry = false },
			want: retrydecide.Verdict{Pause: DefaultMaxRetryAfter, Why: retry.ReasonDelayTooLong, Refused: 600 * s}},

		// A retryable failure that is not retried; a throttle still pauses the key.
		{name: "POST 429: the policy says no, the key still pauses", method: "POST", resp: testhttp.Response(429, "Retry-After", "2"),
			want: retrydecide.Verdict{Pause: 2 * s, Why: retry.ReasonNotIdempotent}},
		{name: "Stripe-Should-Retry: false on a 429", resp: testhttp.Response(429, "Retry-After", "2", "Stripe-Should-Retry", "false"),
			want: retrydecide.Verdict{Pause: 2 * s, Why: retry.ReasonServerHint}},
		{name: "not replayable", resp: testhttp.Response(429, "Retry-After", "2"),
			edit: func(in *retrydecide.End) { in.CanRetry = false },
			want: retrydecide.Verdict{Pause: 2 * s, Why: retry.ReasonNotReplayable}},
		{name: "attempts spent", resp: testhttp.Response(500, "Retry-After", "2"),
			edit: func(in *retrydecide.End) { in.Attempt = 3 },
			want: retrydecide.Verdict{Why: retry.ReasonAttempts}},
		{name: "attempts spent on a 429 without a delay: the key still pauses", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *retrydecide.End) { in.Attempt = 3 },
			want: retrydecide.Verdict{Pause: 5 * s, Why: retry.ReasonAttempts}, calls: []bool{true}},
		{name: "the schedule says stop", resp: testhttp.Response(500), bo: decideBackoff{stop: true},
			want: retrydecide.Verdict{Why: retry.ReasonBackoffStop}, calls: []bool{false}},
		{name: "attempts spent comes before the schedule's stop", resp: testhttp.Response(500), bo: decideBackoff{stop: true},
			edit: func(in *retrydecide.End) { in.Attempt = 3 },
			want: retrydecide.Verdict{Why: retry.ReasonAttempts}, calls: []bool{false}},
		{name: "budget spent", resp: testhttp.Response(500), bo: decideBackoff{wait: 300 * ms},
			edit: func(in *retrydecide.End) { in.Withdraw = spentBudget },
			want: retrydecide.Verdict{Why: retry.ReasonBudget}, calls: []bool{false}},
		{name: "budget spent, but the server named a delay", resp: testhttp.Response(500, "Retry-After", "2"),
			edit: func(in *retrydecide.End) { in.Withdraw = spentBudget },
			want: retrydecide.Verdict{Retry: true, Wait: 2 * s, Why: retry.ReasonServerDelay}},
		{name: "budget spent and a zero server delay: no retry", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *retrydecide.End) { in.Withdraw = spentBudget },
			want: retrydecide.Verdict{Pause: retry.MinThrottlePause, Why: retry.ReasonBudget}},
		{name: "deadline shorter than the server's delay", resp: testhttp.Response(500, "Retry-After", "3"),
			edit: func(in *retrydecide.End) { in.Deadline = decideNow.Add(2 * s) },
			want: retrydecide.Verdict{Why: retry.ReasonDeadline, Refused: 3 * s, Deadline: true}},
		{name: "deadline exactly at the end of the wait: retried", resp: testhttp.Response(500, "Retry-After", "3"),
			edit: func(in *retrydecide.End) { in.Deadline = decideNow.Add(3 * s) },
			want: retrydecide.Verdict{Retry: true, Wait: 3 * s, Why: retry.ReasonServerDelay}},
		{name: "deadline shorter than the pause of a 429 without a delay", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *retrydecide.End) { in.Deadline = decideNow.Add(2 * s) },
			want: retrydecide.Verdict{Pause: 5 * s, Why: retry.ReasonDeadline, Refused: 5 * s, Deadline: true}, calls: []bool{true}},
		{name: "deadline shorter than a backoff wait", resp: testhttp.Response(502), bo: decideBackoff{wait: 800 * ms},
			edit: func(in *retrydecide.End) { in.Deadline = decideNow.Add(500 * ms) },
			want: retrydecide.Verdict{Why: retry.ReasonDeadline, Refused: 800 * ms, Deadline: true}, calls: []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			bo := tt.bo
			in := decideEnd(t, method, tt.resp, tt.err, &bo)
			if tt.edit != nil {
				tt.edit(&in)
			}
			assert.Equal(t, tt.want, decideExec.Decide(in))
			assert.Equal(t, tt.calls, bo.calls, "calls of the backoff schedule (throttled)")
		})
	}
}

// spentBudget is the withdraw of a spent retry budget.
func spentBudget(time.Time, bool) bool { return false }

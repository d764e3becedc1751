package pace

import (
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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

// decideEnd builds the attemptEnd the Transport builds (call.decide) for
// a method's attempt 1 that ended with resp or err: the default policy's
// verdict, a replayable body, budget left, no strikes, no deadline, the
// default caps, NoJitter, and bo's schedule. rnd returns the top of its
// range, so that a jittered pause is at its longest.
func decideEnd(t *testing.T, method string, resp *http.Response, err error, bo *decideBackoff) attemptEnd {
	t.Helper()
	req := newRequest(t, t.Context(), method, "http://api.test/v1", "")
	var p retryPolicy
	again, why, _ := p.check(req, resp, err, 1)
	failed := again || (resp != nil && p.retryStatus(resp.StatusCode)) ||
		(err != nil && errClassOf(req.Context(), err) != errFinal)
	return attemptEnd{
		now: decideNow, attempt: 1, resp: resp, err: err, retry: again, why: why,
		failed: failed, canRetry: true,
		maxAttempts: retry.DefaultMaxAttempts, maxRetryAfter: DefaultMaxRetryAfter, jitter: retry.NoJitter,
		backoff: bo.next, rnd: func(n int64) int64 { return n - 1 },
	}
}

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
		edit   func(*attemptEnd)
		want   verdict
		calls  []bool
	}{
		// Success and final answers.
		{name: "success: the zero verdict", resp: testhttp.Response(200),
			want: verdict{}},
		{name: "success with a Retry-After: the zero verdict", resp: testhttp.Response(200, "Retry-After", "5"),
			want: verdict{}},
		{name: "a final status: no retry, no reason", resp: testhttp.Response(404, "Retry-After", "5"),
			want: verdict{}},

		// The server's delay is the wait.
		{name: "500 with Retry-After: the server's delay is the wait", resp: testhttp.Response(500, "Retry-After", "3"),
			want: verdict{retry: true, wait: 3 * s, why: retry.ReasonServerDelay}},
		{name: "500 with Retry-After-Ms", resp: testhttp.Response(500, "Retry-After-Ms", "1500"),
			want: verdict{retry: true, wait: 1500 * ms, why: retry.ReasonServerDelay}},
		{name: "500 without a delay: the backoff schedule", resp: testhttp.Response(500), bo: decideBackoff{wait: 300 * ms},
			want: verdict{retry: true, wait: 300 * ms, why: retry.ReasonBackoff}, calls: []bool{false}},
		{name: "a connection reset: the backoff schedule", err: syscall.ECONNRESET, bo: decideBackoff{wait: 200 * ms},
			want: verdict{retry: true, wait: 200 * ms, why: retry.ReasonBackoff}, calls: []bool{false}},

		// Decide's Wait (a delay read from the body) and Fail.
		{name: "Decide's Wait replaces the headers' delay and the backoff", resp: testhttp.Response(500, "Retry-After", "3"),
			edit: func(in *attemptEnd) { in.hookWait = 7 * s },
			want: verdict{retry: true, wait: 7 * s, why: retry.ReasonServerDelay}},
		{name: "Decide's Wait on a 429 pauses the key", resp: testhttp.Response(429),
			edit: func(in *attemptEnd) { in.hookWait = 2 * s },
			want: verdict{retry: true, wait: 2 * s, pause: 2 * s, why: retry.ReasonServerDelay}},
		{name: "Decide's Wait over maxRetryAfter is refused", resp: testhttp.Response(503),
			edit: func(in *attemptEnd) { in.hookWait = time.Hour },
			want: verdict{why: retry.ReasonDelayTooLong, refused: time.Hour, pause: DefaultMaxRetryAfter}},
		{name: "Decide's Wait after a transport error: ignored", err: syscall.ECONNRESET, bo: decideBackoff{wait: 200 * ms},
			edit: func(in *attemptEnd) { in.hookWait = 7 * s },
			want: verdict{retry: true, wait: 200 * ms, why: retry.ReasonBackoff}, calls: []bool{false}},
		{name: "Decide's Fail on a success", resp: testhttp.Response(200),
			edit: func(in *attemptEnd) { in.fail = io.EOF },
			want: verdict{why: retry.ReasonDecided, fail: io.EOF}},
		{name: "Decide's Fail on a throttle keeps the pause", resp: testhttp.Response(429, "Retry-After", "3"),
			edit: func(in *attemptEnd) { in.fail = io.EOF },
			want: verdict{why: retry.ReasonDecided, fail: io.EOF, pause: 3 * s}},

		// 429 without a delay: DefaultThrottlePause doubled by the strikes.
		{name: "429 without a delay pauses DefaultThrottlePause", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			want: verdict{retry: true, wait: 5 * s, pause: 5 * s, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, 1 strike: 10s", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *attemptEnd) { in.strikes = 1 },
			want: verdict{retry: true, wait: 10 * s, pause: 10 * s, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, 2 strikes: 20s", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *attemptEnd) { in.strikes = 2 },
			want: verdict{retry: true, wait: 20 * s, pause: 20 * s, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, 40 strikes: retry.DefaultBackoffMax", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *attemptEnd) { in.strikes = 40 },
			want: verdict{retry: true, wait: retry.DefaultBackoffMax, pause: retry.DefaultBackoffMax, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, 1 strike, capped by maxRetryAfter", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *attemptEnd) { in.strikes, in.maxRetryAfter = 1, 7*s },
			want: verdict{retry: true, wait: 7 * s, pause: 7 * s, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, maxRetryAfter under a second wins", resp: testhttp.Response(429), bo: decideBackoff{wait: 100 * ms},
			edit: func(in *attemptEnd) { in.maxRetryAfter = 500 * ms },
			want: verdict{retry: true, wait: 500 * ms, pause: 500 * ms, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, the request's own schedule longer", resp: testhttp.Response(429), bo: decideBackoff{wait: 8 * s},
			want: verdict{retry: true, wait: 8 * s, pause: 8 * s, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, full jitter at its lowest: never under DefaultThrottlePause", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *attemptEnd) {
				in.strikes, in.jitter, in.rnd = 1, retry.FullJitter, func(int64) int64 { return 0 }
			},
			want: verdict{retry: true, wait: 5 * s, pause: 5 * s, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, full jitter at its highest", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *attemptEnd) { in.strikes, in.jitter = 1, retry.FullJitter },
			want: verdict{retry: true, wait: 10 * s, pause: 10 * s, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, NewBackOff schedule: its next wait, not the strikes", resp: testhttp.Response(429), bo: decideBackoff{wait: 3 * s},
			edit: func(in *attemptEnd) { in.strikes, in.customBackoff = 4, true },
			want: verdict{retry: true, wait: 3 * s, pause: 3 * s, why: retry.ReasonBackoff}, calls: []bool{true}},
		{name: "429 without a delay, NewBackOff schedule: never under a second", resp: testhttp.Response(429), bo: decideBackoff{wait: 10 * ms},
			edit: func(in *attemptEnd) { in.customBackoff = true },
			want: verdict{retry: true, wait: s, pause: s, why: retry.ReasonBackoff}, calls: []bool{true}},

		// 503 without a delay: an outage, not a throttle, on the throttle schedule.
		{name: "503 without a delay: no pause, the throttle schedule", resp: testhttp.Response(503), bo: decideBackoff{wait: 1200 * ms},
			want: verdict{retry: true, wait: 1200 * ms, why: retry.ReasonBackoff}, calls: []bool{true}},

		// 429 and 503 with a delay: pause = delay, floored at MinThrottlePause.
		{name: "429 with Retry-After: pause = delay", resp: testhttp.Response(429, "Retry-After", "3"),
			want: verdict{retry: true, wait: 3 * s, pause: 3 * s, why: retry.ReasonServerDelay}},
		{name: "503 with Retry-After: pause = delay", resp: testhttp.Response(503, "Retry-After", "3"),
			want: verdict{retry: true, wait: 3 * s, pause: 3 * s, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0: MinThrottlePause", resp: testhttp.Response(429, "Retry-After", "0"),
			want: verdict{retry: true, wait: MinThrottlePause, pause: MinThrottlePause, why: retry.ReasonServerDelay}},
		{name: "503 with Retry-After: 0: MinThrottlePause", resp: testhttp.Response(503, "Retry-After", "0"),
			want: verdict{retry: true, wait: MinThrottlePause, pause: MinThrottlePause, why: retry.ReasonServerDelay}},
		{name: "429 with a past HTTP-date: MinThrottlePause", resp: testhttp.Response(429, "Retry-After", pastDate, "Date", date),
			want: verdict{retry: true, wait: MinThrottlePause, pause: MinThrottlePause, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After-Ms: 10: MinThrottlePause", resp: testhttp.Response(429, "Retry-After-Ms", "10"),
			want: verdict{retry: true, wait: MinThrottlePause, pause: MinThrottlePause, why: retry.ReasonServerDelay}},

		// A delay below MinThrottlePause on a key with strikes: the floor
		// doubles per strike (RFC 9110 §10.2.3 allows Retry-After: 0;
		// repeated, it is the server's overload, not a schedule).
		{name: "429 with Retry-After: 0, 1 strike: 100ms", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *attemptEnd) { in.strikes = 1 },
			want: verdict{retry: true, wait: 100 * ms, pause: 100 * ms, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 3 strikes: 400ms", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *attemptEnd) { in.strikes = 3 },
			want: verdict{retry: true, wait: 400 * ms, pause: 400 * ms, why: retry.ReasonServerDelay}},
		{name: "503 with Retry-After: 0, 1 strike: 100ms", resp: testhttp.Response(503, "Retry-After", "0"),
			edit: func(in *attemptEnd) { in.strikes = 1 },
			want: verdict{retry: true, wait: 100 * ms, pause: 100 * ms, why: retry.ReasonServerDelay}},
		{name: "429 with a past HTTP-date, 2 strikes: 200ms", resp: testhttp.Response(429, "Retry-After", pastDate, "Date", date),
			edit: func(in *attemptEnd) { in.strikes = 2 },
			want: verdict{retry: true, wait: 200 * ms, pause: 200 * ms, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After-Ms: 10, 1 strike: 100ms", resp: testhttp.Response(429, "Retry-After-Ms", "10"),
			edit: func(in *attemptEnd) { in.strikes = 1 },
			want: verdict{retry: true, wait: 100 * ms, pause: 100 * ms, why: retry.ReasonServerDelay}},
		{name: "Decide's Wait of 10ms on a 429, 1 strike: 100ms", resp: testhttp.Response(429),
			edit: func(in *attemptEnd) { in.strikes, in.hookWait = 1, 10*ms },
			want: verdict{retry: true, wait: 100 * ms, pause: 100 * ms, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 40 strikes: retry.DefaultBackoffMax", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *attemptEnd) { in.strikes = 40 },
			want: verdict{retry: true, wait: retry.DefaultBackoffMax, pause: retry.DefaultBackoffMax, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 40 strikes, capped by maxRetryAfter", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *attemptEnd) { in.strikes, in.maxRetryAfter = 40, 7*s },
			want: verdict{retry: true, wait: 7 * s, pause: 7 * s, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 3 strikes, full jitter at its lowest: never under MinThrottlePause", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *attemptEnd) {
				in.strikes, in.jitter, in.rnd = 3, retry.FullJitter, func(int64) int64 { return 0 }
			},
			want: verdict{retry: true, wait: MinThrottlePause, pause: MinThrottlePause, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 0, 3 strikes, full jitter at its highest", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *attemptEnd) { in.strikes, in.jitter = 3, retry.FullJitter },
			want: verdict{retry: true, wait: 400 * ms, pause: 400 * ms, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After: 1, strikes do not matter", resp: testhttp.Response(429, "Retry-After", "1"),
			edit: func(in *attemptEnd) { in.strikes = 9 },
			want: verdict{retry: true, wait: s, pause: s, why: retry.ReasonServerDelay}},
		{name: "429 with Retry-After, strikes do not matter", resp: testhttp.Response(429, "Retry-After", "3"),
			edit: func(in *attemptEnd) { in.strikes = 5 },
			want: verdict{retry: true, wait: 3 * s, pause: 3 * s, why: retry.ReasonServerDelay}},

		// A delay above maxRetryAfter is refused (hashicorp/go-retryablehttp#247),
		// but the key still pauses, for the cap.
		{name: "429 delay above maxRetryAfter: refused, pause = cap", resp: testhttp.Response(429, "Retry-After", "600"),
			want: verdict{pause: DefaultMaxRetryAfter, why: retry.ReasonDelayTooLong, refused: 600 * s}},
		{name: "500 delay above maxRetryAfter: refused, no pause", resp: testhttp.Response(500, "Retry-After", "600"),
			want: verdict{why: retry.ReasonDelayTooLong, refused: 600 * s}},
		{name: "delay too long comes before not replayable", resp: testhttp.Response(429, "Retry-After", "600"),
			edit: func(in *attemptEnd) { in.canRetry = false },
			want: verdict{pause: DefaultMaxRetryAfter, why: retry.ReasonDelayTooLong, refused: 600 * s}},

		// A retryable failure that is not retried; a throttle still pauses the key.
		{name: "POST 429: the policy says no, the key still pauses", method: "POST", resp: testhttp.Response(429, "Retry-After", "2"),
			want: verdict{pause: 2 * s, why: retry.ReasonNotIdempotent}},
		{name: "Stripe-Should-Retry: false on a 429", resp: testhttp.Response(429, "Retry-After", "2", "Stripe-Should-Retry", "false"),
			want: verdict{pause: 2 * s, why: retry.ReasonServerHint}},
		{name: "not replayable", resp: testhttp.Response(429, "Retry-After", "2"),
			edit: func(in *attemptEnd) { in.canRetry = false },
			want: verdict{pause: 2 * s, why: retry.ReasonNotReplayable}},
		{name: "attempts spent", resp: testhttp.Response(500, "Retry-After", "2"),
			edit: func(in *attemptEnd) { in.attempt = 3 },
			want: verdict{why: retry.ReasonAttempts}},
		{name: "attempts spent on a 429 without a delay: the key still pauses", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *attemptEnd) { in.attempt = 3 },
			want: verdict{pause: 5 * s, why: retry.ReasonAttempts}, calls: []bool{true}},
		{name: "the schedule says stop", resp: testhttp.Response(500), bo: decideBackoff{stop: true},
			want: verdict{why: retry.ReasonBackoffStop}, calls: []bool{false}},
		{name: "attempts spent comes before the schedule's stop", resp: testhttp.Response(500), bo: decideBackoff{stop: true},
			edit: func(in *attemptEnd) { in.attempt = 3 },
			want: verdict{why: retry.ReasonAttempts}, calls: []bool{false}},
		{name: "budget spent", resp: testhttp.Response(500), bo: decideBackoff{wait: 300 * ms},
			edit: func(in *attemptEnd) { in.withdraw = spentBudget },
			want: verdict{why: retry.ReasonBudget}, calls: []bool{false}},
		{name: "budget spent, but the server named a delay", resp: testhttp.Response(500, "Retry-After", "2"),
			edit: func(in *attemptEnd) { in.withdraw = spentBudget },
			want: verdict{retry: true, wait: 2 * s, why: retry.ReasonServerDelay}},
		{name: "budget spent and a zero server delay: no retry", resp: testhttp.Response(429, "Retry-After", "0"),
			edit: func(in *attemptEnd) { in.withdraw = spentBudget },
			want: verdict{pause: MinThrottlePause, why: retry.ReasonBudget}},
		{name: "deadline shorter than the server's delay", resp: testhttp.Response(500, "Retry-After", "3"),
			edit: func(in *attemptEnd) { in.deadline = decideNow.Add(2 * s) },
			want: verdict{why: retry.ReasonDeadline, refused: 3 * s, deadline: true}},
		{name: "deadline exactly at the end of the wait: retried", resp: testhttp.Response(500, "Retry-After", "3"),
			edit: func(in *attemptEnd) { in.deadline = decideNow.Add(3 * s) },
			want: verdict{retry: true, wait: 3 * s, why: retry.ReasonServerDelay}},
		{name: "deadline shorter than the pause of a 429 without a delay", resp: testhttp.Response(429), bo: decideBackoff{wait: s},
			edit: func(in *attemptEnd) { in.deadline = decideNow.Add(2 * s) },
			want: verdict{pause: 5 * s, why: retry.ReasonDeadline, refused: 5 * s, deadline: true}, calls: []bool{true}},
		{name: "deadline shorter than a backoff wait", resp: testhttp.Response(502), bo: decideBackoff{wait: 800 * ms},
			edit: func(in *attemptEnd) { in.deadline = decideNow.Add(500 * ms) },
			want: verdict{why: retry.ReasonDeadline, refused: 800 * ms, deadline: true}, calls: []bool{false}},
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
			assert.Equal(t, tt.want, decide(in))
			assert.Equal(t, tt.calls, bo.calls, "calls of the backoff schedule (throttled)")
		})
	}
}

// spentBudget is the withdraw of a spent retry budget.
func spentBudget(time.Time, bool) bool { return false }

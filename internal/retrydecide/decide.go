package retrydecide

import (
	"net/http"
	"time"

	"github.com/pacehttp/pace/internal/retrystatus"
	"github.com/pacehttp/pace/retry"
)

// End is what the retry decision sees of one finished attempt: the
// outcome, the request's situation, and the settings. Now is when the
// attempt ended.
type End struct {
	Now      time.Time
	Attempt  int            // the attempt that ended, from 1
	Resp     *http.Response // nil when err is set
	Err      error
	Retry    bool         // Executor.Check's verdict
	Why      retry.Reason // and its reason
	Failed   bool         // a retryable failure, whether or not this request may repeat it
	CanRetry bool         // the body can be sent again
	// Withdraw takes a retry from the key's retry budget at the given
	// instant and reports whether the budget allowed it; with force it
	// takes it anyway. It is called at most once, for a retry that is
	// otherwise decided; nil means no budget.
	Withdraw func(now time.Time, force bool) bool
	Strikes  int       // the key's consecutive throttles before this one (Permit.Strikes)
	Adaptive bool      // the key has a configured limit, whose rate adapts to throttles without a delay
	Deadline time.Time // the context's deadline; zero: none
	// HookWait is retry.Check.Wait: the delay Decide read from the response,
	// taken as the server's; 0: none.
	HookWait time.Duration
	Fail     error // retry.Check.Fail: end the call with this error

	MaxAttempts   int
	MaxRetryAfter time.Duration
	Jitter        retry.Jitter
	CustomBackoff bool // the schedule comes from retry.Policy.NewBackOff
	// Backoff returns the next wait of the request's backoff schedule,
	// jittered, and false when the schedule says stop; throttled selects
	// the schedule for a throttle. It is called at most once.
	Backoff func(throttled bool) (time.Duration, bool)
	Rnd     func(n int64) int64 // for the jitter of the default pause; nil: math/rand/v2
	// HandBack: the caller waits out a throttle's pause in its own line
	// (package batch, see internal/queued); a throttle whose wait is
	// longer than MinPause is returned to it, not retried.
	HandBack bool
}

// Verdict is the retry decision for one attempt.
type Verdict struct {
	Retry    bool          // send the request again
	Wait     time.Duration // before the next attempt
	Pause    time.Duration // > 0: the answer was a throttle; pause the key this long
	Why      retry.Reason  // the retry's reason (retry.ReasonServerDelay, retry.ReasonBackoff), or why a retryable failure is not retried
	Refused  time.Duration // the server delay or wait that was refused, for retry.ReasonDelayTooLong and retry.ReasonDeadline
	Deadline bool          // the wait would outlast the context's deadline
	Fail     error         // end the call with this error (retry.Check.Fail); why is retry.ReasonDecided
	Cut      bool          // a throttle without a delay of an adaptive key: lower its rate
	HandBack bool          // a throttle returned unretried to a caller that waits out the pause (End.HandBack)
}

// Decide is the retry decision: from what an attempt ended with, whether to
// send the request again, after how long, whether to pause its key, and if a
// retryable failure is not retried, why. It reads the response's headers,
// never its body, and takes explicit time; apart from the backoff schedule
// and the jitter it is a pure function. The rules:
//
//   - The wait is the server's delay when it gave one (retry.Check.Wait, a
//     delay Decide read from the body, or else Retry-After and the other
//     headers ServerDelay reads), else the backoff schedule's next wait,
//     jittered.
//   - A throttle (retrystatus.Throttle) pauses the key: for the server's delay, never
//     less than MinPause. A server delay below MinPause
//     (Retry-After: 0, a past date, a reset already reached) is legal (RFC
//     9110 §10.2.3) and its first throttle pauses for MinPause, but
//     on a key with strikes it is the server's overload, not a schedule:
//     the pause is MinPause doubled by the key's strikes (100 ms
//     on the second consecutive throttle, 200 ms on the third), jittered,
//     never under MinPause, capped at retry.DefaultBackoffMax. Without a
//     delay (a 429 that names none)
//     for ThrottlePause doubled by the key's strikes, jittered, never
//     under retry.DefaultThrottleBackoffInitial, or with a NewBackOff schedule its
//     next wait, never under a second (env0/terraform-provider-env0#1127).
//     Every pause is capped at MaxRetryAfter; the request's own wait is the
//     pause. A key whose configured limit adapts (Adaptive) slows its rate
//     instead (Verdict.Cut: the Limiter lowers its rate): its first throttle without a
//     delay pauses it only for MinPause; a probe throttled again
//     gets the long pause, and the rate drops again.
//   - Decide's Fail ends the call (retry.ReasonDecided), after a throttle's
//     pause is set.
//   - A retryable failure is not retried, in this order, when: the policy
//     said no (its reason); the server's delay exceeds MaxRetryAfter
//     (retry.ReasonDelayTooLong: a retry before it is certain to fail,
//     hashicorp/go-retryablehttp#247); the body cannot be sent again; the
//     attempts are spent; the schedule says stop; the wait would outlast
//     the deadline (retry.ReasonDeadline, decided at once, not slept); or, last,
//     so that only a retry otherwise made takes from it, the budget is
//     spent (unless the server named a delay: the server itself set the
//     pace, and the retry is counted anyway). Just before the budget, a
//     throttle whose wait is longer than MinPause is handed back
//     unretried when the caller waits out pauses itself (HandBack).
func (p *Executor) Decide(in End) Verdict {
	status := 0
	if in.Resp != nil {
		status = in.Resp.StatusCode
	}
	var v Verdict
	var serverWait time.Duration
	fromServer := false
	if in.Resp != nil && (in.Retry || status >= 400) {
		serverWait, fromServer = p.serverDelay(in.Resp, in.Now)
	}
	if in.Resp != nil && in.HookWait > 0 {
		serverWait, fromServer = in.HookWait, true
	}
	throttle := retrystatus.Throttle(status, fromServer)
	if !in.Retry && !throttle {
		switch {
		case in.Fail != nil:
			v.Why, v.Fail = retry.ReasonDecided, in.Fail
		case in.Failed:
			v.Why = in.Why
		}
		return v
	}
	wait, stop := time.Duration(0), false
	v.Why = retry.ReasonBackoff
	switch {
	case fromServer:
		wait, v.Why = serverWait, retry.ReasonServerDelay
	case in.Retry || throttle:
		w, ok := in.Backoff(retrystatus.ThrottleStatus(status)) // a 503 without a delay: the throttle schedule
		wait, stop = w, !ok
	}
	if throttle {
		if fromServer {
			v.Pause = max(serverWait, p.MinPause)
			if serverWait < p.MinPause && in.Strikes > 0 {
				// Retry-After: 0 again (RFC 9110 §10.2.3 allows it): the
				// server is overloaded, not keeping a schedule. Double
				// from MinPause per strike, as a 429 without a
				// delay doubles from ThrottlePause.
				v.Pause = ApplyJitter(in.Jitter, BackoffDelay(in.Strikes+1, p.MinPause, retry.DefaultBackoffMax),
					0, p.MinPause, retry.DefaultBackoffMax, in.Rnd)
			}
			v.Pause = min(v.Pause, in.MaxRetryAfter)
			wait = max(wait, v.Pause)
		} else if in.Adaptive && in.Strikes == 0 && !in.CustomBackoff {
			// The key's rate adapts (adaptiveRate): it slows down instead
			// of pausing for long; a brief pause and a probe, as after
			// Retry-After: 0. A probe throttled again gets the long pause.
			v.Pause, v.Cut = min(p.MinPause, in.MaxRetryAfter), true
			wait = v.Pause
		} else {
			v.Cut = in.Adaptive
			keyWait := wait // a NewBackOff schedule is the caller's choice: its next wait
			if !in.CustomBackoff {
				keyWait = ApplyJitter(in.Jitter, BackoffDelay(in.Strikes+1, p.ThrottlePause, retry.DefaultBackoffMax),
					0, p.ThrottlePause, retry.DefaultBackoffMax, in.Rnd)
			}
			v.Pause = min(max(wait, keyWait, retry.DefaultThrottleBackoffInitial), in.MaxRetryAfter)
			wait = v.Pause
		}
	}
	switch {
	case in.Fail != nil:
		v.Why, v.Fail = retry.ReasonDecided, in.Fail
		return v
	case !in.Retry:
		v.Why = ""
		if in.Failed {
			v.Why = in.Why
		}
		return v
	case fromServer && serverWait > in.MaxRetryAfter:
		v.Why, v.Refused = retry.ReasonDelayTooLong, serverWait
		return v
	case !in.CanRetry:
		v.Why = retry.ReasonNotReplayable
		return v
	case in.Attempt >= in.MaxAttempts:
		v.Why = retry.ReasonAttempts
		return v
	case stop:
		v.Why = retry.ReasonBackoffStop
		return v
	case !in.Deadline.IsZero() && in.Deadline.Sub(in.Now) < wait:
		v.Why, v.Refused, v.Deadline = retry.ReasonDeadline, wait, true
		return v
	case in.HandBack && v.Pause > 0 && wait > p.MinPause:
		v.Why, v.HandBack = "", true // no give-up: the caller retries after the pause
		return v
	}
	serverPaced := fromServer && serverWait > 0
	if in.Withdraw != nil && !in.Withdraw(in.Now, serverPaced) && !serverPaced {
		v.Why = retry.ReasonBudget
		return v
	}
	v.Retry, v.Wait = true, wait
	return v
}

package retrydecide

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/pacehttp/pace/internal/hdr"
	"github.com/pacehttp/pace/internal/httptoken"
	"github.com/pacehttp/pace/internal/retryrule"
	"github.com/pacehttp/pace/retry"
)

// Executor applies a retry.Policy to the attempts of a request: pace's
// default rules, the Policy's Decide, the idempotency key and the retry
// decision (Decide). Its fields are set before first use and not changed
// after; its methods only read them and are safe for concurrent use.
type Executor struct {
	Policy retry.Policy
	// ServerDelay returns the delay resp names, read at now: Retry-After
	// and the reset headers, as pace.RetryAfter reads them. nil: none.
	ServerDelay func(resp *http.Response, now time.Time) (time.Duration, bool)
}

// serverDelay calls ServerDelay.
func (p *Executor) serverDelay(resp *http.Response, now time.Time) (time.Duration, bool) {
	if p.ServerDelay == nil || resp == nil {
		return 0, false
	}
	return p.ServerDelay(resp, now)
}

// Failed reports whether an attempt is a retryable failure, whether or not
// its request may repeat it: what costs retry budget. The attempt ended
// with resp or err (its request's context ctx). It was retried or not
// (again, Check's verdict).
func (p *Executor) Failed(ctx context.Context, resp *http.Response, err error, again bool) bool {
	return again || (resp != nil && p.RetryResponse(resp)) || (err != nil && classOf(ctx, err) != errFinal)
}

// firstValue returns the first value of the canonical key in h without
// its optional whitespace (RFC 9110 §5.6.3), or "". It never allocates.
func firstValue(h http.Header, canonicalKey string) string {
	if vs := h[canonicalKey]; len(vs) > 0 {
		return strings.Trim(vs[0], " \t")
	}
	return ""
}

// Reasons of the default decision that no event carries. They are
// constants so that a decision allocates nothing. The default decision
// also gives retry.ReasonNotIdempotent, retry.ReasonServerHint and, when
// Decide changes it, retry.ReasonDecided.
const (
	reasonRetryableStatus retry.Reason = "retryable status"
	reasonFinalStatus     retry.Reason = "status not retryable"
	reasonServerSaysYes   retry.Reason = "server said Stripe-Should-Retry: true"
)

// hdrStripeShouldRetry is Stripe's explicit retry hint (Stripe API
// reference, "Idempotent requests" and "Errors": the header says whether a
// request should be retried, overriding status-based rules).
const hdrStripeShouldRetry = "Stripe-Should-Retry"

// RetryStatus reports whether code is one of the statuses to retry.
func (p *Executor) RetryStatus(code int) bool {
	return retryrule.StatusRetried(p.Policy.Statuses, code)
}

// idempotencyHeader returns the canonical name of the idempotency header.
func (p *Executor) idempotencyHeader() string {
	if p.Policy.IdempotencyHeader == "" {
		return hdr.IdempotencyKey
	}
	return http.CanonicalHeaderKey(p.Policy.IdempotencyHeader)
}

// hasIdempotencyKey reports whether req carries the idempotency header
// (see retry.Policy.IdempotencyHeader for what counts).
func (p *Executor) hasIdempotencyKey(req *http.Request) bool {
	name := p.Policy.IdempotencyHeader
	if name != "" {
		name = http.CanonicalHeaderKey(name)
	}
	_, ok := retryrule.IdempotencyKey(req.Header, name)
	return ok
}

// replaySafe reports whether req may be sent again when the server may
// have processed it. Its method must be idempotent (RFC 9110 §9.2.2), or it
// must carry an idempotency key, or the policy retries every method.
func (p *Executor) replaySafe(req *http.Request) bool {
	return retryrule.IdempotentMethod(req.Method) || p.Policy.RetryNonIdempotent || p.hasIdempotencyKey(req)
}

// Check decides whether to retry after attempt number attempt (from 1) of
// req ended with resp or err (exactly one non-nil). It applies the default
// rules of retry.Policy, then Decide. reason says why, for observers; it is
// empty for a plain success. hook is what Decide saw and set (its Wait and
// Fail), nil when there is no Decide. check does not look at the attempt
// count or the request's deadline: the Transport checks those. It reads
// resp.Body only when Decide asks (retry.Check.Body), and is safe for
// concurrent use.
func (p *Executor) Check(req *http.Request, resp *http.Response, err error, attempt int) (again bool, reason retry.Reason, hook *retry.Check) {
	if err != nil {
		again, reason = p.checkError(req, err)
	} else {
		again, reason = p.checkResponse(req, resp)
	}
	if p.Policy.Decide == nil {
		return again, reason, nil
	}
	c := &retry.Check{Request: req, Response: resp, Err: err, Attempt: attempt, Retry: again, Reason: reason}
	decided := p.Policy.Decide(c)
	if resp != nil && resp.StatusCode < 400 {
		decided = false // a success or a redirect is never retried, whatever Decide says
	}
	if (decided != again || c.Fail != nil) && c.Reason == reason {
		c.Reason = retry.ReasonDecided
	}
	return decided, c.Reason, c
}

func (p *Executor) checkResponse(req *http.Request, resp *http.Response) (bool, retry.Reason) {
	if resp == nil {
		return false, ""
	}
	if resp.StatusCode >= 400 { // the hint counts on error responses only: no header lookup on success
		if hint := firstValue(resp.Header, hdrStripeShouldRetry); hint != "" {
			switch {
			case strings.EqualFold(hint, "false"):
				return false, retry.ReasonServerHint
			case strings.EqualFold(hint, "true"):
				if !p.replaySafe(req) {
					return false, retry.ReasonNotIdempotent
				}
				return true, reasonServerSaysYes
			}
		}
	}
	if !p.RetryResponse(resp) {
		if resp.StatusCode < 400 {
			return false, ""
		}
		return false, reasonFinalStatus
	}
	if !p.replaySafe(req) {
		return false, retry.ReasonNotIdempotent
	}
	return true, reasonRetryableStatus
}

func (p *Executor) checkError(req *http.Request, err error) (bool, retry.Reason) {
	class, reason := classifyError(req.Context(), err)
	switch class {
	case errNotSent:
		return true, reason
	case errTransient:
		if !p.replaySafe(req) {
			return false, retry.ReasonNotIdempotent
		}
		return true, reason
	}
	return false, reason
}

// WithIdempotencyKey returns req unchanged, or a clone of req whose header
// carries a fresh random key. It clones when AddIdempotencyKey is set and
// req is a POST or PATCH that lacks the idempotency header. The clone has
// the same context and the same Body. The Transport calls it once per
// request, before the first attempt, so every attempt sends the same key.
// The caller's request is never modified.
func (p *Executor) WithIdempotencyKey(req *http.Request) *http.Request {
	if !p.Policy.AddIdempotencyKey || !retryrule.WantsKey(req.Method) || p.hasIdempotencyKey(req) {
		return req
	}
	r := req.Clone(req.Context())
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	r.Header[p.idempotencyHeader()] = []string{newIdempotencyKey()}
	return r
}

// newIdempotencyKey returns a random UUID version 4 (RFC 9562 §5.4), e.g.
// "3b241101-e2bb-4255-8caf-4136c566a962", from crypto/rand.
func newIdempotencyKey() string {
	var u [16]byte
	_, _ = rand.Read(u[:])  // never fails since Go 1.24 (it crashes instead)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10xx (RFC 9562)
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// RetryResponse reports whether resp's status is one to retry: one of the
// policy's statuses, or a 403 that is a throttle (retryrule.Throttle) when the
// policy retries a 429.
func (p *Executor) RetryResponse(resp *http.Response) bool {
	if resp.StatusCode < 400 { // Validate admits error statuses only: no lookup on success
		return false
	}
	if resp.StatusCode == http.StatusForbidden {
		_, delayed := p.serverDelay(resp, time.Now())
		return delayed && p.RetryStatus(http.StatusTooManyRequests)
	}
	return p.RetryStatus(resp.StatusCode)
}

// FieldError is one invalid setting of a retry.Policy. Field is relative
// to the Policy, such as "Statuses" or "Budget.TTL". The Transport turns it
// into a *pace.ConfigError.
type FieldError struct {
	Field  string
	Value  any
	Reason string
}

func (e *FieldError) Error() string { return "invalid " + e.Field + ": " + e.Reason }

// Validate reports the first invalid setting of p, or nil:
//
//   - a negative MaxAttempts;
//   - a status that is not an error status (4xx or 5xx). A success or a
//     redirect is never retried, so listing one is a mistake.
//   - an idempotency header name that is not an HTTP token;
//   - an unknown Jitter, or an invalid Budget.
func Validate(p *retry.Policy) *FieldError {
	if p.MaxAttempts < 0 {
		return &FieldError{"MaxAttempts", p.MaxAttempts, "must not be negative"}
	}
	for _, code := range p.Statuses {
		if code < 400 || code > 599 {
			return &FieldError{"Statuses", code, "not an HTTP error status (400..599); only error responses are retried"}
		}
	}
	if h := p.IdempotencyHeader; h != "" {
		if why := HeaderNameProblem(h); why != "" {
			return &FieldError{"IdempotencyHeader", h, why}
		}
	}
	if j := p.Jitter; j < retry.FullJitter || j > retry.NoJitter {
		return &FieldError{"Jitter", j, "unknown jitter strategy"}
	}
	return validateBudget(p.Budget)
}

// HeaderNameProblem says why name is not a header field name, a token of
// RFC 9110 §5.6.2 (§5.1), or returns "" when it is one.
func HeaderNameProblem(name string) string {
	switch {
	case name == "":
		return "empty header name"
	case !httptoken.Valid(name):
		return "not a header name: a token of RFC 9110 §5.6.2 (letters, digits and !#$%&'*+-.^_`|~), no space, colon or control character"
	}
	return ""
}

// validateBudget reports the first invalid setting of b.
func validateBudget(b retry.Budget) *FieldError {
	switch {
	case b.TTL != 0 && (b.TTL < time.Second || b.TTL > time.Minute):
		return &FieldError{"Budget.TTL", b.TTL, "must be within [1s, 60s], or 0 for the default"}
	case b.MinRetriesPerSec > 1_000_000:
		return &FieldError{"Budget.MinRetriesPerSec", b.MinRetriesPerSec, "must be at most 1,000,000"}
	case math.IsNaN(b.PercentCanRetry) || b.PercentCanRetry > 1000:
		return &FieldError{"Budget.PercentCanRetry", b.PercentCanRetry, "must be at most 1000, negative for none, or 0 for the default"}
	}
	return nil
}

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
	// (package batch, see retryrule.HandBack); a throttle whose wait is
	// longer than retry.MinThrottlePause is returned to it, not retried.
	// Pauses is that caller's schedule for the key's pause.
	HandBack bool
	Pauses   retryrule.Pauses
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

// Decide is the retry decision. From what an attempt ended with, it says
// whether to send the request again, and after how long. It says whether
// to pause its key, and why a retryable failure is not retried. It reads
// the response's headers, never its body, and takes explicit time. Apart
// from the backoff schedule and the jitter it is a pure function. The
// rules:
//
//   - The wait is the server's delay when it gave one, else the backoff
//     schedule's next wait, jittered. The server's delay is retry.Check.Wait
//     (a delay Decide read from the body), or else Retry-After and the other
//     headers ServerDelay reads.
//   - A throttle (retryrule.Throttle) pauses the key for the server's
//     delay, never less than retry.MinThrottlePause. A server delay below retry.MinThrottlePause is
//     legal (RFC 9110 §10.2.3): Retry-After: 0, a past date, a reset
//     already reached. Its first throttle pauses for retry.MinThrottlePause. But on a key
//     with strikes it is the server's overload, not a schedule. The pause
//     is then retry.MinThrottlePause doubled by the key's strikes: 100 ms on the second
//     consecutive throttle, 200 ms on the third. It is jittered, never
//     under retry.MinThrottlePause, capped at retry.DefaultBackoffMax.
//   - A throttle without a delay (a 429 that names none) pauses for
//     retry.DefaultThrottlePause doubled by the key's strikes. It is jittered, never
//     under retry.DefaultThrottleBackoffInitial. With a NewBackOff schedule
//     it pauses for that schedule's next wait, never under a second
//     (env0/terraform-provider-env0#1127).
//   - Every pause is capped at MaxRetryAfter. The request's own wait is the
//     pause.
//   - A key whose configured limit adapts (Adaptive) slows its rate
//     instead (Verdict.Cut: the Limiter lowers its rate). Its first
//     throttle without a delay pauses it only for retry.MinThrottlePause. A probe
//     throttled again gets the long pause, and the rate drops again.
//   - Decide's Fail ends the call (retry.ReasonDecided), after a throttle's
//     pause is set.
//   - A retryable failure is not retried when, in this order: the policy
//     said no (its reason); the server's delay exceeds MaxRetryAfter; the
//     body cannot be sent again; the attempts are spent; the schedule says
//     stop; the wait would outlast the deadline; the budget is spent.
//   - A delay above MaxRetryAfter gives retry.ReasonDelayTooLong: a retry
//     before it is certain to fail (hashicorp/go-retryablehttp#247).
//   - A wait beyond the deadline gives retry.ReasonDeadline, decided at
//     once, not slept.
//   - The budget comes last, so that only a retry otherwise made takes
//     from it. A server that named a delay is not held back by it: the
//     server itself set the pace, and the retry is counted anyway.
//   - Just before the budget, a throttle whose wait is longer than retry.MinThrottlePause
//     is handed back unretried when the caller waits out pauses itself
//     (HandBack).
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
	throttle := retryrule.Throttle(status, fromServer)
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
		w, ok := in.Backoff(retryrule.ThrottleStatus(status)) // a 503 without a delay: the throttle schedule
		wait, stop = w, !ok
	}
	if throttle {
		v.Pause, v.Cut, wait = p.throttlePause(in, serverWait, fromServer, wait)
	}
	return p.settle(in, v, wait, stop, serverWait, fromServer)
}

// throttlePause returns the pause of a throttled key, whether to cut its
// rate, and the request's wait then, which was wait (see Decide).
func (p *Executor) throttlePause(in End, serverWait time.Duration, fromServer bool, wait time.Duration) (pause time.Duration, cut bool, _ time.Duration) {
	if fromServer {
		pause = max(serverWait, retry.MinThrottlePause)
		if serverWait < retry.MinThrottlePause && in.Strikes > 0 {
			// Retry-After: 0 again (RFC 9110 §10.2.3 allows it): the
			// server is overloaded, not keeping a schedule. Double
			// from retry.MinThrottlePause per strike, as a 429 without a
			// delay doubles from retry.DefaultThrottlePause.
			pause = ApplyJitter(in.Jitter, BackoffDelay(in.Strikes+1, retry.MinThrottlePause, retry.DefaultBackoffMax),
				0, retry.MinThrottlePause, retry.DefaultBackoffMax, in.Rnd)
		}
		pause = min(pause, in.MaxRetryAfter, in.maxPause())
		return pause, false, max(wait, pause)
	}
	if in.Adaptive && in.Strikes == 0 && !in.CustomBackoff {
		// The key's rate adapts: it slows down instead of pausing for
		// long; a brief pause and a probe, as after Retry-After: 0. A
		// probe throttled again gets the long pause.
		pause = min(retry.MinThrottlePause, in.MaxRetryAfter)
		return pause, true, pause
	}
	keyWait, floor := wait, retry.DefaultThrottleBackoffInitial // a NewBackOff schedule is the caller's choice: its next wait
	switch {
	case in.HandBack && in.Pauses.First > 0: // the caller's own schedule, as it will wait
		keyWait = BackoffDelay(in.Strikes+1, in.Pauses.First, in.maxPause())
		wait, floor = keyWait, 0
	case !in.CustomBackoff:
		keyWait = ApplyJitter(in.Jitter, BackoffDelay(in.Strikes+1, retry.DefaultThrottlePause, retry.DefaultBackoffMax),
			0, retry.DefaultThrottlePause, retry.DefaultBackoffMax, in.Rnd)
	}
	pause = min(max(wait, keyWait, floor), in.MaxRetryAfter, in.maxPause())
	return pause, in.Adaptive, pause
}

// maxPause is the cap on a key's pause that a caller waiting out throttles
// in its own line set (Pauses.Max); the largest Duration when none.
func (in End) maxPause() time.Duration {
	if in.HandBack && in.Pauses.Max > 0 {
		return in.Pauses.Max
	}
	return math.MaxInt64
}

// settle completes v, a retry after wait with its pause set, with the
// reasons not to retry, in Decide's order, and last the budget; stop says
// the schedule stopped.
func (p *Executor) settle(in End, v Verdict, wait time.Duration, stop bool, serverWait time.Duration, fromServer bool) Verdict {
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
	case in.HandBack && v.Pause > 0 && wait > retry.MinThrottlePause:
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

// Schedule is one request's backoff schedule and its key's share of the
// retry budget. The Transport makes one at a request's first failure, so
// that a request that never fails costs nothing. It is used by the
// request's goroutine only.
type Schedule struct {
	p             *Executor
	budget        *Budget // nil: no budget
	window        *Window // the key's counts
	maxRetryAfter time.Duration
	bo            backoff.BackOff // made at the first backoff
	floor         time.Duration   // shortest backoff wait
	cap           time.Duration   // longest backoff wait
	prevWait      time.Duration   // the last backoff wait, for decorrelated jitter
}

// NewSchedule returns the schedule of a request: p's backoff, waits
// capped at maxRetryAfter, retries taken from budget (nil: none) as the
// key's window w counts them.
func (p *Executor) NewSchedule(budget *Budget, w *Window, maxRetryAfter time.Duration) *Schedule {
	return &Schedule{p: p, budget: budget, window: w, maxRetryAfter: maxRetryAfter}
}

// Withdraw takes a retry from the key's budget at now; with force, even
// when the budget is spent. It reports whether the budget allowed it. That
// is always true without a budget.
func (s *Schedule) Withdraw(now time.Time, force bool) bool {
	if s.budget == nil {
		return true
	}
	return s.budget.Withdraw(s.window, now, force)
}

// Next returns the wait before the next attempt, jittered; ok is false
// when the schedule says stop. throttled selects the default schedule for
// a 429 or 503 without a delay (retry.DefaultThrottleBackoffInitial
// first). Otherwise it selects the one for other failures
// (retry.DefaultBackoffInitial first). Its waits are capped at the lower of
// retry.DefaultBackoffMax and MaxRetryAfter. A schedule from
// retry.Policy.NewBackOff is used as given, with waits from 1ns up to
// MaxRetryAfter.
func (s *Schedule) Next(throttled bool) (time.Duration, bool) {
	if s.bo == nil {
		if nb := s.p.Policy.NewBackOff; nb != nil {
			s.bo, s.floor, s.cap = nb(), 1, s.maxRetryAfter
			if s.bo != nil {
				s.bo.Reset()
			}
		} else {
			initial := retry.DefaultBackoffInitial
			if throttled {
				initial = retry.DefaultThrottleBackoffInitial
			}
			s.bo = NewBackOff(initial, retry.DefaultBackoffMax)
			s.cap = min(retry.DefaultBackoffMax, s.maxRetryAfter)
			s.floor = min(BackoffFloor(initial, throttled), s.cap)
		}
	}
	w, ok := Wait(s.bo, s.p.Policy.Jitter, s.prevWait, s.floor, s.cap, nil)
	if ok {
		s.prevWait = w
	}
	return w, ok
}

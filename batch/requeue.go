package batch

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/retryrule"
	"github.com/pacehttp/pace/retry"
)

// DefaultMaxRequeues is how many times an item may go back in line after a
// retryable failure when Options.MaxRequeues is zero.
const DefaultMaxRequeues = 3

// requeued is an item back in line, due at at, after a retryable failure.
// When refused is set, it follows a client-side limit's refusal of its
// attempt instead (see refuse). That is no requeue. It is not counted
// against MaxRequeues, and it takes none of the slots of requeueSlots.
type requeued struct {
	idx     int
	at      time.Time
	refused bool
}

// retryableErr reports whether err is a failure worth trying again later
// in the run. It is one of these:
//
//   - an answer with a status the Transport retries: statuses, its
//     retry.Policy's Statuses for the request, nil for the defaults (408,
//     500, 502, 503, 504). A 429 is a throttle, handled apart. It counts as
//     a [*StatusError], or as the Response of a *pace.AttemptsError
//     (Transport.ErrorOnGiveUp). So the rule is the same with the option
//     and without.
//   - a pace.Transport that gave up retrying a retryable failure. Its
//     attempts, its retry budget or its backoff schedule ran out, or the
//     next wait would outlast the call's deadline. That is a
//     *pace.AttemptsError whose Reason is retry.ReasonAttempts,
//     ReasonBudget, ReasonBackoffStop or ReasonDeadline.
//   - a pace.Transport whose limiter refused the wait for the next attempt
//     (no Reason, an Err matching pace.ErrRateLimited).
//   - the call's own timeout (context.DeadlineExceeded, as
//     http.Client.Timeout or a per-call context gives). Run's context is
//     still live here, or the item would be Interrupted.
//
// A failure the Transport did not retry because the request was not safe
// to repeat (retry.ReasonNotIdempotent) is not.
func retryableErr(err error, statuses []int) bool {
	var ae *pace.AttemptsError
	if errors.As(err, &ae) {
		if ae.Response != nil {
			return retryableStatus(statuses, ae.Response.StatusCode)
		}
		switch ae.Reason {
		case retry.ReasonAttempts, retry.ReasonBudget, retry.ReasonBackoffStop, retry.ReasonDeadline:
			return true
		case "":
			return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, pace.ErrRateLimited)
		}
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var se *StatusError
	return errors.As(err, &se) && retryableStatus(statuses, se.Code)
}

// retryableStatus reports whether code is a status retried under
// statuses (see retryrule.StatusRetried) and not a throttle's (429).
func retryableStatus(statuses []int, code int) bool {
	return code != http.StatusTooManyRequests && retryrule.StatusRetried(statuses, code)
}

// replaySafe reports whether item idx may be sent again after a failure
// that may have been applied. For HTTP, its last request must have had an
// idempotent method or an idempotency key. For another item function,
// Options.Idempotent must declare it.
func (r *runner[T]) replaySafe(idx int) bool {
	if req := r.marks[idx].req; req.Method != "" {
		return retryrule.IdempotentMethod(req.Method) || req.Key != ""
	}
	return r.opts.Idempotent != nil && r.opts.Idempotent(idx)
}

// requeue puts the item of attempt a, which failed at now, back in line,
// and reports whether it did. It does so only for a retryable failure
// (retryableErr) of an item safe to send again (replaySafe). It does so at
// most MaxRequeues times per item, while dispatch goes on. The wait
// (requeueDelay) must end before the context's deadline.
func (r *runner[T]) requeue(a *attempt, now time.Time) bool {
	n := r.requeues[a.idx] + 1
	if r.stopped || n > r.opts.MaxRequeues || !retryableErr(a.err, a.state.statuses) || !r.replaySafe(a.idx) {
		return false
	}
	d := r.requeueDelay(n)
	if r.outlasts(d, now) {
		return false
	}
	at := now.Add(d)
	if r.requeues[a.idx] = n; n == 1 {
		r.sum.Requeued++
	}
	r.putLater(requeued{idx: a.idx, at: at})
	return true
}

// putLater puts q in line among the items due later, by due time, after
// those due at the same time. So the items a pause held back go in the
// order they came.
func (r *runner[T]) putLater(q requeued) {
	i := sort.Search(len(r.later), func(i int) bool { return r.later[i].at.After(q.at) })
	r.later = slices.Insert(r.later, i, q)
}

// requeueDelay returns the wait before an item's n-th requeued attempt. It
// is the pause of a throttle without a server delay after n-1 strikes
// (pauseFor: Options.Backoff doubled for each earlier requeue, at most
// Options.MaxBackoff). It has equal jitter (a random point of its second
// half), so that items that failed together do not come back together.
func (r *runner[T]) requeueDelay(n int) time.Duration {
	d := r.pauseFor(0, n-1)
	return d/2 + rand.N(d/2+1)
}

// requeueSlots is how many requeued attempts may be in flight at once:
// half of Concurrency, at least one. So requeued items go at a lower pace
// than the run's first attempts.
func (r *runner[T]) requeueSlots() int { return max(1, r.opts.Concurrency/2) }

// dueRequeue returns an item back in line that is due at now and may
// start, if one is, and takes it out of line. A refused one may always
// start; a requeued one may when a slot is free.
func (r *runner[T]) dueRequeue(now time.Time) (requeued, bool) {
	for i, q := range r.later {
		if q.at.After(now) {
			break
		}
		if q.refused || r.requeueInflight < r.requeueSlots() {
			r.later = slices.Delete(r.later, i, i+1)
			return q, true
		}
	}
	return requeued{}, false
}

// requeueWake returns when the next item back in line that could start is
// due. It returns the zero Time when none is, or none could start. The
// attempt that frees a slot wakes Run's loop then.
func (r *runner[T]) requeueWake() time.Time {
	if r.inflight >= r.opts.Concurrency {
		return time.Time{}
	}
	for _, q := range r.later {
		if q.refused || r.requeueInflight < r.requeueSlots() {
			return q.at
		}
	}
	return time.Time{}
}

// outlasts reports whether a wait of d from now would end after the
// context's deadline.
func (r *runner[T]) outlasts(d time.Duration, now time.Time) bool {
	dl, ok := r.ctx.Deadline()
	return ok && now.Add(d).After(dl)
}

// pauseFor returns how long a throttle pauses its key. It is the server's
// delay, never under retry.MinThrottlePause. Without one it is
// Options.Backoff doubled for each of the key's consecutive throttles
// (strikes). Either way it is at most Options.MaxBackoff, the cap that
// pace.Transport applies as MaxRetryAfter. Both default to five minutes.
func (r *runner[T]) pauseFor(delay time.Duration, strikes int) time.Duration {
	if delay > 0 {
		return min(max(delay, retry.MinThrottlePause), r.opts.MaxBackoff)
	}
	d := r.opts.Backoff
	for range min(strikes, 63) {
		if d >= r.opts.MaxBackoff/2 {
			return r.opts.MaxBackoff
		}
		d *= 2
	}
	return min(d, r.opts.MaxBackoff)
}

package batch

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/pacehttp/pace"
)

// DefaultMaxRequeues is how many times an item may go back in line after a
// retryable failure when Options.MaxRequeues is zero.
const DefaultMaxRequeues = 3

// requeued is an item back in line after a retryable failure, due at at.
type requeued struct {
	idx int
	at  time.Time
}

// retryableErr reports whether err is a failure worth trying again later
// in the run: an answer with a status the Transport retries (408, 500, 502,
// 503, 504: pace.DefaultRetryStatuses; a 429 is a throttle, handled
// apart); a pace.Transport that gave up retrying a retryable failure
// because its attempts, its retry budget or its backoff schedule ran out,
// or because the next wait would outlast the call's deadline (a
// *pace.AttemptsError whose Reason is pace.ReasonAttempts,
// pace.ReasonBudget, pace.ReasonBackoffStop or pace.ReasonDeadline); or the
// call's own timeout (context.DeadlineExceeded, as http.Client.Timeout or a
// per-call context gives; Run's context is still live here, or the item
// would be Interrupted). A failure the Transport did not retry because the
// request was not safe to repeat (pace.ReasonNotIdempotent) is not.
func retryableErr(err error) bool {
	var ae *pace.AttemptsError
	if errors.As(err, &ae) {
		switch ae.Reason {
		case pace.ReasonAttempts, pace.ReasonBudget, pace.ReasonBackoffStop, pace.ReasonDeadline:
			return true
		case "":
			return errors.Is(err, context.DeadlineExceeded)
		}
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var se *StatusError
	return errors.As(err, &se) && se.Code != 429 && slices.Contains(pace.DefaultRetryStatuses(), se.Code)
}

// replaySafe reports whether item idx may be sent again after a failure
// that may have been applied: its last request (through HTTP) had an
// idempotent method or an idempotency key, or, for another item function,
// Options.Idempotent declares it.
func (r *runner[T]) replaySafe(idx int) bool {
	if req := r.marks[idx].req; req.Method != "" {
		return idempotentMethod(req.Method) || req.Key != ""
	}
	return r.opts.Idempotent != nil && r.opts.Idempotent(idx)
}

// requeue puts the item of attempt a, which failed at now, back in line,
// and reports whether it did: only for a retryable failure (retryableErr)
// of an item safe to send again (replaySafe), at most MaxRequeues times per
// item, while dispatch goes on, and when the wait (requeueDelay) ends
// before the context's deadline.
func (r *runner[T]) requeue(a *attempt, now time.Time) bool {
	n := r.requeues[a.idx] + 1
	if r.stopped || n > r.opts.MaxRequeues || !retryableErr(a.err) || !r.replaySafe(a.idx) {
		return false
	}
	at := now.Add(r.requeueDelay(n))
	if dl, ok := r.ctx.Deadline(); ok && at.After(dl) {
		return false
	}
	if r.requeues[a.idx] = n; n == 1 {
		r.sum.Requeued++
	}
	i, _ := slices.BinarySearchFunc(r.later, at, func(q requeued, t time.Time) int { return q.at.Compare(t) })
	r.later = slices.Insert(r.later, i, requeued{idx: a.idx, at: at})
	return true
}

// requeueDelay returns the wait before an item's n-th requeued attempt:
// the pause of a throttle without a server delay after n-1 strikes
// (pauseFor: Options.Backoff doubled for each earlier requeue, at most
// Options.MaxBackoff), with equal jitter (a random point of its second
// half), so that items that failed together do not come back together.
func (r *runner[T]) requeueDelay(n int) time.Duration {
	d := r.pauseFor(0, n-1)
	return d/2 + rand.N(d/2+1)
}

// requeueSlots is how many requeued attempts may be in flight at once: half
// of Concurrency, at least one, so that requeued items go at a lower pace
// than the run's first attempts.
func (r *runner[T]) requeueSlots() int { return max(1, r.opts.Concurrency/2) }

// dueRequeue returns a requeued item due at now, if one is and a slot for
// it is free.
func (r *runner[T]) dueRequeue(now time.Time) (int, bool) {
	if len(r.later) == 0 || r.later[0].at.After(now) || r.requeueInflight >= r.requeueSlots() {
		return 0, false
	}
	idx := r.later[0].idx
	r.later = r.later[1:]
	return idx, true
}

// requeueWake returns when the next requeued item is due, or the zero Time
// when none is or none could start (the attempt that frees a slot wakes
// Run's loop then).
func (r *runner[T]) requeueWake() time.Time {
	if len(r.later) == 0 || r.requeueInflight >= r.requeueSlots() || r.inflight >= r.opts.Concurrency {
		return time.Time{}
	}
	return r.later[0].at
}

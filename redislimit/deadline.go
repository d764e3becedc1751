package redislimit

import (
	"context"
	"sync/atomic"
	"time"
)

// maxDeadlineSlack bounds how much shorter than Options.Timeout a round
// trip's deadline may be (see deadlines).
const maxDeadlineSlack = time.Millisecond

// deadlines bounds each round trip to Redis by the Limiter's timeout.
// A context.WithTimeout per round trip costs a runtime timer, armed and
// stopped around every decision (bench/README.md has its cost). The
// caller's context may be one that cannot be cancelled (its Done is nil,
// as for context.Background). Round trips then share the deadline of an
// epoch instead: one deadline and one timer. It is reused while it is at
// least the timeout less slack (min(timeout/20, 1 ms)) away. So each round
// trip gets between timeout − slack and timeout, and at most one timer is
// armed per slack. A cancellable context gets context.WithTimeout, as
// before.
type deadlines struct {
	timeout, slack time.Duration
	cur            atomic.Pointer[epoch]
}

// epoch is one deadline shared by the round trips that start while it is
// far enough away.
type epoch struct {
	at   time.Time
	done chan struct{}   // closed at at
	bg   context.Context // epochCtx of context.Background and this epoch, boxed once
}

// init sets the timeout (> 0).
func (d *deadlines) init(timeout time.Duration) {
	d.timeout, d.slack = timeout, min(timeout/20, maxDeadlineSlack)
}

// bound returns ctx bounded by the timeout from now, and the function that
// releases it.
func (d *deadlines) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return d.boundAt(ctx, time.Now())
}

// boundAt is bound with now read by the caller (no later than now).
func (d *deadlines) boundAt(ctx context.Context, now time.Time) (context.Context, context.CancelFunc) {
	if ctx.Done() != nil {
		return context.WithTimeout(ctx, d.timeout)
	}
	if _, ok := ctx.Deadline(); ok { // a context with a deadline and no Done: not the standard library's
		return context.WithTimeout(ctx, d.timeout)
	}
	e := d.cur.Load()
	if e == nil || e.at.Sub(now) < d.timeout-d.slack {
		e = &epoch{at: now.Add(d.timeout), done: make(chan struct{})}
		e.bg = epochCtx{context.Background(), e}
		time.AfterFunc(time.Until(e.at), func() { close(e.done) })
		d.cur.Store(e)
	}
	if ctx == context.Background() { // comparable: its dynamic type is the standard library's
		return e.bg, func() {}
	}
	return epochCtx{ctx, e}, func() {}
}

// epochCtx is a context that cannot be cancelled (Context) bounded by the
// deadline of e: Done is e's, closed at e.at; Err is
// context.DeadlineExceeded once it is closed; values are Context's.
type epochCtx struct {
	context.Context
	e *epoch
}

func (c epochCtx) Deadline() (time.Time, bool) { return c.e.at, true }
func (c epochCtx) Done() <-chan struct{}       { return c.e.done }

func (c epochCtx) Err() error {
	select {
	case <-c.e.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

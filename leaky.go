package pace

import (
	"fmt"
	"math"
	"time"

	"github.com/pacehttp/pace/internal/quickest"
	"github.com/pacehttp/pace/throttle"
)

// LeakyOptions configures a leaky-bucket pacer (see [LeakyBucket]). The
// zero value is a strict pacer: no slack, releases at least one interval
// apart. Its callers wait for their slot as long as they are willing to,
// like a token bucket's. The [Transport]'s MaxWait and the context bound
// the wait.
type LeakyOptions struct {
	// Queue, if positive, is how many callers may wait for their slot. A
	// caller whose wait would exceed Queue intervals is refused at once with
	// [ErrQueueFull], and books nothing. Each interval counts with a tenth
	// more (a late answer's most) and a millisecond. A request that leaves
	// late pushes the slots behind it back (see [Transport]). So Queue
	// waiters always fit.
	//
	// Zero means the number of waiters is not limited. Only MaxDelay, if set,
	// and the caller bound the wait (the Transport's MaxWait, the context's
	// deadline). The wait may reach about 146 years, past which it is refused
	// with [ErrWaitTooLong]. Any pacer asked with AllowAt refuses instead of
	// queueing, as nginx limit_req without burst does. That is
	// [Shaper.AllowAt], [Keyed.AdmitAt] and package middleware, which never
	// queue. Must not be negative.
	Queue int

	// MaxDelay, if positive, refuses with [ErrQueueFull] a caller whose
	// wait would exceed it (with Queue set, the tighter bound applies).
	// Zero means no bound beyond Queue. Must not be negative.
	MaxDelay time.Duration

	// Slack is how many extra requests may go back to back after an idle
	// period, before even spacing resumes: up to Slack+1 pass at the same
	// instant. Zero means strict spacing. Must not be negative.
	Slack int
}

// LeakyBucket returns a leaky-bucket pacer Limit. Requests are released
// one every r.Interval(): Per/N rounded up to a whole nanosecond, so never
// faster than r. Callers wait for their slot. A caller whose wait would
// exceed the queue is refused at once with [ErrQueueFull], booking
// nothing. After an idle period only o.Slack+1 requests pass at once. The
// pacer never saves up more credit than that, however long it idled.
//
// Its promise: in any closed interval of length L it releases at most
// o.Slack + 1 + ⌊L/r.Interval()⌋ requests. So with Slack 0, releases are
// at least r.Interval() apart. It is GCRA (ITU-T I.371) with a tolerance
// of Slack intervals. It mirrors nginx limit_req, which is a leaky bucket
// with refused requests costing nothing:
//
//   - limit_req (no burst):          LeakyOptions{}
//   - limit_req burst=B:             LeakyOptions{Queue: B}
//   - limit_req burst=B nodelay:     LeakyOptions{Slack: B}
//   - limit_req burst=B delay=D:     LeakyOptions{Slack: D, Queue: B − D}
//
// nginx refuses what it would not queue. Ask with AllowAt (or through
// package middleware) for nginx's refusals. A zero Queue lets callers of
// ReserveAt and Wait queue without a count bound (see [LeakyOptions]).
// nginx counts on a millisecond clock; this pacer counts nanoseconds.
//
// LeakyOptions{Slack: S, MaxDelay: a long bound} is close to
// uber-go/ratelimit's Take with WithSlack(S), with one difference. A fresh
// pacer here starts with its slack whole (S+1 at once). uber's starts with
// none (0, then one interval apart), and earns slack only by idling.
//
// Each request takes one slot. A call may take n <= Slack+1 slots at once,
// since a bigger n would release more than Slack+1 at one instant.
//
// The returned Limit carries a [*ConfigError] (see [Limit.Err]) for bad
// options. It names "Rate.N" or "Rate.Per" when r is not valid (see
// [Rate]). It names "Queue", "Slack" or "MaxDelay" when negative. It names
// "Slack" or "Queue" when that many intervals exceed about 146 years.
func LeakyBucket(r Rate, o LeakyOptions) Limit {
	alg, err := newLeakyAlg(r, o)
	return newLimit(alg, err)
}

// leakyAlg is the pacer as an algorithm: GCRA with capacity Slack+1 and a
// bound on how far ahead of now a slot may be booked.
type leakyAlg struct {
	gcra
	rate Rate
	o    LeakyOptions
	wait int64 // longest delay granted, in nanoseconds
}

func newLeakyAlg(r Rate, o LeakyOptions) (*leakyAlg, error) {
	if err := r.validate("Rate"); err != nil {
		return nil, err
	}
	switch {
	case o.Queue < 0:
		return nil, configErr("Queue", o.Queue, "must not be negative")
	case o.Slack < 0:
		return nil, configErr("Slack", o.Slack, "must not be negative")
	case o.MaxDelay < 0:
		return nil, configErr("MaxDelay", o.MaxDelay, "must not be negative")
	}
	capacity, ok := addCheck(int64(o.Slack), 1)
	if !ok {
		return nil, configErr("Slack", o.Slack, "is too large")
	}
	g, err := newGCRA(r, int(capacity), "Slack", o.Slack)
	if err != nil {
		return nil, err
	}
	// A queued slot may stretch by a late answer's most (quickest.Cap of
	// the widest departure margin) and a millisecond of lateness (see
	// Keyed's queue): Queue waiters must still fit.
	slot := satAdd(g.i, quickest.Cap(maxMargin(g.i))+int64(time.Millisecond))
	wait, ok := mulCheck(int64(o.Queue), slot)
	if !ok || wait > maxSpan {
		return nil, configErr("Queue", o.Queue, "with the interval "+time.Duration(g.i).String()+" spans over 146 years")
	}
	if o.Queue == 0 {
		wait = maxSpan // no bound by count: the caller bounds the wait
	}
	if d := int64(o.MaxDelay); d > 0 && d < wait {
		wait = d
	}
	return &leakyAlg{gcra: g, rate: r, o: o, wait: wait}, nil
}

// earliest is GCRA's earliest slot, refused with ErrQueueFull when it lies
// more than the queue bound after now. Without a bound (wait is maxSpan) a
// slot past maxSpan is refused with ErrWaitTooLong: no queue is full, the
// arithmetic's span is. With the refusal it returns that slot, so the
// caller can tell how long the wait would have been.
func (a *leakyAlg) earliest(c *cell, now int64, n int) (int64, error) {
	t, err := a.gcra.earliest(c, now, n)
	if err != nil {
		return 0, err
	}
	switch {
	case t-now <= a.wait:
		return t, nil
	case a.wait >= maxSpan:
		return t, ErrWaitTooLong
	}
	return t, ErrQueueFull
}

// span is how long after its last booking, at most, a cell takes to drain:
// the queue bound plus the slack. With no bound (a zero Queue and
// MaxDelay) it is the slack alone, as for a token bucket. That bucket's
// callers may also book far ahead. The keyed store then sweeps as often as
// for a bucket of that size. It finds such a cell idle once its bookings
// are past.
func (a *leakyAlg) span() int64 {
	if a.wait >= maxSpan {
		return a.tau
	}
	return min(satAdd(a.tau, a.wait), maxSpan)
}

func (a *leakyAlg) maxN() int { return int(a.c) }

func (a *leakyAlg) String() string {
	s := fmt.Sprintf("leaky bucket %v", a.rate)
	if a.o.Queue > 0 {
		s += fmt.Sprintf(" queue %d", a.o.Queue)
	}
	if a.o.MaxDelay > 0 {
		s += fmt.Sprintf(" max delay %v", a.o.MaxDelay)
	}
	if a.o.Slack > 0 {
		s += fmt.Sprintf(" slack %d", a.o.Slack)
	}
	return s
}

// waitBound is the pacer's queue bound in nanoseconds (see [LeakyOptions]).
func (a *leakyAlg) waitBound() int64 {
	if a.wait >= maxSpan {
		return math.MaxInt64
	}
	return a.wait
}

func (a *leakyAlg) params() (throttle.Algorithm, Rate, int, LeakyOptions) {
	return throttle.LeakyBucket, a.rate, 0, a.o
}

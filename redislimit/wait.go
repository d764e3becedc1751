package redislimit

import (
	"context"
	"errors"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/wake"
	"github.com/pacehttp/pace/throttle"
)

// Wait blocks until one request for key may leave, books it in Redis, and
// returns its Permit; see [throttle.Limiter]. Each decision is one round trip:
// the script reads the key's throttle and limit on Redis's clock and books
// the earliest common slot of all the limit's parts, or refuses, booking
// nothing. While the key is paused the request sleeps until the pause ends
// (or a message says it was extended); when it ends one request of all the
// processes becomes the probe (Permit.Probe) and the others hold, asking
// again when its answer is published or every 100 ms, until Settle reports
// it. A request whose slot lies ahead sleeps until it; if the key is paused
// meanwhile it gives its slot back and waits behind the probe. Any key
// works, of any bytes and length: see docs/fleet.md, "Keys in
// Redis".
//
// It fails at once, booking nothing, with a *pace.WaitError wrapping
// pace.ErrWaitTooLong (maxWait > 0 exceeded; 0 sets no bound),
// pace.ErrQueueFull (a leaky
// bucket's queue), the deadline error (matching pace.ErrWaitExceedsDeadline
// and context.DeadlineExceeded) when the wait would outlast ctx's
// deadline, pace.ErrThrottled when the probe it waited behind was
// throttled again. A nil ctx, and a negative maxWait, are refused, as
// pace.Transport refuses a negative MaxWait: the WaitError wraps a
// *pace.ConfigError (matching pace.ErrInvalidConfig, not
// pace.ErrRateLimited, so package batch fails the item). It refuses with
// pace.ErrWaitTooLong too, whatever maxWait, a slot further ahead than
// the limit's horizon: pace.DefaultMaxWait (5 min), or the longest span
// of one of the limit's parts (capacity × interval, or a window) when that
// is longer, or a leaky bucket's queue bound when that is shorter; this
// bounds the state a key can hold in Redis (see docs/fleet.md,
// "State in Redis"). A key of another type under the Prefix fails it with
// [ErrBadState], booking nothing and not asking the Fallback. If ctx ends
// while waiting, the booking is given back (exactly, when nothing was booked after it) and the error
// wraps ctx.Err(). When Redis fails to answer within Options.Timeout, the
// failure policy decides: the Fallback limiter's answer, or a *WaitError
// wrapping [ErrUnavailable]. The WaitError's Key holds key whole, and
// may be a secret (an API key); its text shows key only as a fingerprint
// ("key~" and 12 hexadecimal digits of its SHA-256; see pace.WaitError),
// of bounded length, unless a pace.Transport keyed the request by host.
// Safe for concurrent use. With Options.Lease, Wait decides on this
// process's share, in memory (see docs/fleet.md, "Leased
// shares"). It refuses at once there too; the Delay is an estimate: the
// share's next slot, or its next renewal.
func (l *Limiter) Wait(ctx context.Context, key string, maxWait time.Duration) (throttle.Permit, error) {
	switch {
	case ctx == nil:
		return throttle.Permit{Key: key}, &pace.WaitError{Key: key, Err: &pace.ConfigError{Field: "ctx", Reason: "must not be nil (use context.Background())"}}
	case maxWait < 0:
		return throttle.Permit{Key: key}, &pace.WaitError{Key: key, Err: &pace.ConfigError{Field: "maxWait", Value: maxWait, Reason: "must not be negative (0 sets no bound)"}}
	case l.closed.Load():
		return throttle.Permit{Key: key}, &pace.WaitError{Key: key, Err: ErrClosed}
	}
	if l.ls != nil {
		return l.ls.wait(ctx, key, maxWait)
	}
	return l.waitShared(ctx, key, maxWait)
}

// wait is Limiter.Wait of a Limiter with Options.Lease.
func (ls *leaser) wait(ctx context.Context, key string, maxWait time.Duration) (throttle.Permit, error) {
	p := throttle.Permit{Key: key, Limited: true}
	if err := ctx.Err(); err != nil {
		return p, &pace.WaitError{Key: key, Err: err}
	}
	k, err := ls.entry(key)
	if err != nil {
		return p, &pace.WaitError{Key: key, Err: err}
	}
	if !k.used.Load() {
		k.used.Store(true)
	}
	now := ls.now()
	if !k.paused.Load() {
		if g := k.cur.Load(); g != nil && g.shaper != nil && g.pacer == nil && now.Before(g.until) && !ls.l.strictAt(now) && g.shaper.AllowAt(now, 1) {
			k.admitted.Add(1)
			p.Gen, p.State, p.Track = k.gen.Load(), ls.ticket(k, now), true
			return p, nil
		}
	}
	return ls.waitSlow(ctx, k, p, maxWait, now)
}

// leaseWait is the state of one Wait past wait's fast path.
type leaseWait struct {
	k       *leaseKey
	p       throttle.Permit
	maxWait time.Duration
	start   time.Time
	shared  bool // the pause and the probe were decided in Redis
	wanted  bool // counted in k.waiting
	strict  bool // kept to the Fallback's pace already (see keepFallback)
}

// waitSlow is wait when the share has no unit free now: the key is
// paused, the share is spent, or there is no share yet.
func (ls *leaser) waitSlow(ctx context.Context, k *leaseKey, p throttle.Permit, maxWait time.Duration, start time.Time) (throttle.Permit, error) {
	p.Gen = k.gen.Load()
	w := &leaseWait{k: k, p: p, maxWait: maxWait, start: start}
	defer func() {
		if w.wanted {
			w.k.waiting.Add(-1)
		}
	}()
	for {
		if !w.shared && w.k.paused.Load() {
			if err := ls.waitPaused(ctx, w); err != nil {
				return w.p, err
			}
		}
		now := time.Now()
		g := w.k.cur.Load()
		if g != nil && g.shaper != nil && now.Before(g.until) {
			done, again, err := ls.take(ctx, w, g, now)
			if done {
				return w.p, err
			}
			if again {
				continue // paused while it waited (the pause decides first), or held to the Fallback's pace
			}
			// beyond the lease: wait for the renewal
		}
		if done, err := ls.awaitRenewal(ctx, w, g, now); done {
			return w.p, err
		}
	}
}

// waitPaused decides the key's pause and probe in Redis, one round trip.
func (ls *leaser) waitPaused(ctx context.Context, w *leaseWait) error {
	gen := w.k.gen.Load()
	rest := w.maxWait
	if w.maxWait > 0 {
		if rest = w.maxWait - time.Since(w.start); rest <= 0 {
			return &pace.WaitError{Key: w.k.key, Err: pace.ErrWaitTooLong}
		}
	}
	pp, err := ls.l.waitShared(ctx, w.k.key, rest)
	ahead := pp.Delay // how far ahead Redis booked it, under the key's pace
	pp.Limited, pp.Delay = true, pp.Delay+w.p.Delay
	w.p = pp
	if err != nil {
		return err
	}
	if !pp.Probe && pp.Held == 0 && ahead == 0 && pp.Gen >= gen { // no pause, and no booking ahead of it
		ls.unpause(w.k)
	}
	w.shared = true
	w.p.Gen = max(w.p.Gen, gen)
	return nil
}

// reserve books a unit of the share g at now, and of its pacer, both at
// the earliest instant they admit; after the pause's decision in Redis
// (shared), which kept to the key's pace already, the pacer counts the
// unit without holding it back. beyond reports, the unit
// given back, that it lies beyond the lease, or that the unclaimed part
// of the limit is to be asked for first (the share, not the pace, holds
// it back).
func (ls *leaser) reserve(k *leaseKey, g *leaseGrant, now time.Time, shared bool) (b *booking, beyond bool, err error) {
	k.book.Lock() // a unit booked and given back goes back whole: nothing was booked after it
	defer k.book.Unlock()
	b = &booking{shaper: g.shaper}
	at := now
	if g.pacer != nil && shared {
		_, _ = g.pacer.ReserveAt(now, 1, 0) // counted, not waited for: later local Waits go after it
	}
	if g.pacer != nil && !shared {
		b.pacer = g.pacer
		if b.pr, err = b.pacer.ReserveAt(now, 1, 0); err != nil {
			return b, false, err
		}
		at = now.Add(b.pr.Delay)
	}
	if b.r, err = b.shaper.ReserveAt(at, 1, 0); err != nil {
		b.cancel(now)
		return b, false, err
	}
	if b.pacer != nil && b.r.Delay > 0 { // the pace's unit goes where the request leaves
		b.pacer.CancelAt(now, b.pr)
		b.pr, _ = b.pacer.ReserveAt(at.Add(b.r.Delay), 1, 0)
	}
	b.delay = at.Add(b.r.Delay).Sub(now)
	beyond = !now.Add(b.delay).Before(g.until) || b.r.Delay > 0 && g.free && ls.growable(k, now)
	if beyond {
		b.cancel(now)
	} else if b.delay > 0 {
		k.booked = append(k.booked, b)
	}
	return b, beyond, nil
}

// take reserves a unit of the share g for w at now and waits for it.
// It refuses at once a unit beyond the bounds, even one beyond the lease
// when no more of the limit is free (a renewal would not bring it
// sooner). It is not done when reserve finds the unit beyond, and again
// when the key is paused, or its sliding log's share grows, while it
// waits: then the unit goes back, with the pause's decision in Redis if
// it had one, as a decision in Redis gives its slot back, and the pause
// or the grown share decides first. It is again, too, after waiting for
// the Fallback's pace (keepFallback).
func (ls *leaser) take(ctx context.Context, w *leaseWait, g *leaseGrant, now time.Time) (done, again bool, err error) {
	k := w.k
	switch held, err := ls.keepFallback(ctx, w, now); {
	case err != nil:
		return true, false, err
	case held: // the share is looked at again after the Fallback's wait
		return false, true, nil
	}
	b, beyond, err := ls.reserve(k, g, now, w.shared)
	if err != nil {
		ls.giveBack(w)
		return true, false, &pace.WaitError{Key: k.key, Delay: b.delay, Err: err}
	}
	rest, bounded := w.maxWait-now.Sub(w.start), w.maxWait > 0
	if beyond && g.free {
		return false, false, nil // the renewal may grow the share first
	}
	if err := refuseWait(ctx, k.key, b.delay, rest, bounded); err != nil {
		if beyond { // given back already; the share was spent: counted as demand
			w.want()
			ls.giveBack(w)
			return true, false, err
		}
		if !k.unbook(b, now, false) {
			b.cancel(now)
		}
		ls.giveBack(w)
		return true, false, err
	}
	if beyond {
		return false, false, nil
	}
	if b.delay > 0 {
		if done, again, err := ls.sleepFor(ctx, w, b, now); done || again {
			return done, again, err
		}
	}
	k.admitted.Add(1)
	if w.p.State == nil { // not the pause's decision, whose record Settle needs
		w.p.State, w.p.Track = ls.ticket(k, now.Add(b.delay)), true
	}
	return true, false, nil
}

// sleepFor sleeps until the unit b that w booked at now is due. It is
// done when ctx ended first (b given back), and again when b went back
// while it slept (a pause, or a grown share: see take). Else the unit is
// w's, and w.p.Delay counts the sleep.
func (ls *leaser) sleepFor(ctx context.Context, w *leaseWait, b *booking, now time.Time) (done, again bool, err error) {
	k := w.k
	w.want()
	woken := k.wakes()
	if !k.gone(b) { // else given back already, before it took the channel: it books again at once
		err = wake.Sleep(ctx, b.delay, woken)
	}
	t := time.Now()
	if err != nil {
		if !k.unbook(b, t, false) {
			b.cancel(t)
		}
		ls.giveBack(w)
		return true, false, &pace.WaitError{Key: k.key, Delay: b.delay, Err: ctxErr(ctx)}
	}
	if k.unbook(b, t, isClosed(woken) || !w.shared && k.paused.Load()) {
		w.p.Delay += t.Sub(now)
		if w.shared { // its decision in Redis goes back too: the new pause decides
			ls.giveBack(w)
			w.p.Probe, w.p.State, w.p.Track, w.p.Strikes, w.shared = false, nil, false, 0, false
		}
		return false, true, nil
	}
	w.p.Delay += b.delay
	return false, false, nil
}

// keepFallback keeps w to the Fallback's pace as well while decisions on
// Redis do (see Limiter.shadow): a share granted by a Redis back from an
// outage knows nothing of what the Fallback admitted. It books the unit
// in the Fallback once per Wait and sleeps what the Fallback's pace asks,
// within the Wait's bounds. held reports that it slept: the share is to
// be looked at again. On an error, the Wait is over.
func (ls *leaser) keepFallback(ctx context.Context, w *leaseWait, now time.Time) (held bool, err error) {
	l := ls.l
	if w.strict || !l.strictAt(now) {
		return false, nil
	}
	w.strict = true
	left, dlLeft := int64(0), int64(-1)
	if w.maxWait > 0 {
		left = max(int64((w.maxWait-now.Sub(w.start))/time.Microsecond), 1)
	}
	if dl, ok := ctx.Deadline(); ok {
		dlLeft = max(int64(dl.Sub(now)/time.Microsecond), 0)
	}
	d, err := l.shadow(w.k.key, now, 0, left, dlLeft)
	if err == nil && d > 0 {
		err = sleepWake(ctx, w.k.key, d, nil)
		w.p.Delay += d
	}
	if err != nil {
		ls.giveBack(w)
		return false, err
	}
	return d > 0, nil
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// awaitRenewal sleeps until the key's next renewal, within the bounds.
// When Redis failed and the lease is over, the failure policy answers.
// It is not done when the Wait is to look at the share again.
func (ls *leaser) awaitRenewal(ctx context.Context, w *leaseWait, g *leaseGrant, now time.Time) (done bool, err error) {
	k := w.k
	if g != nil && errors.Is(g.err, ErrClosed) { // the Limiter closed: no Fallback either
		ls.giveBack(w)
		return true, &pace.WaitError{Key: k.key, Err: ErrClosed}
	}
	if g != nil && g.err != nil && !now.Before(g.until) { // Redis failed and the lease is over
		ls.giveBack(w)
		w.p, err = ls.l.failed(ctx, w.p, w.maxWait, w.start, g.err)
		return true, err
	}
	w.want()
	ch, dead, closed := ls.await(k, g, now)
	if closed {
		ls.giveBack(w)
		return true, &pace.WaitError{Key: k.key, Err: ErrClosed}
	}
	if dead { // dropped while idle: start again on a new entry
		nk, err := ls.entry(k.key)
		if err != nil {
			ls.giveBack(w)
			return true, &pace.WaitError{Key: k.key, Err: err}
		}
		k.waiting.Add(-1) // wanted is set
		w.k, w.wanted = nk, false
		return false, nil
	}
	if g != nil && g.received && g.err == nil { // refused at once when the next renewal comes too late
		if err := refuseWait(ctx, k.key, ls.untilRenewal(k, now), w.maxWait-now.Sub(w.start), w.maxWait > 0); err != nil {
			ls.giveBack(w)
			return true, err
		}
	}
	d, err := w.sleepFor(ctx, g, now)
	if err != nil {
		ls.giveBack(w)
		return true, err
	}
	t0 := time.Now()
	err = wake.Sleep(ctx, d, ch)
	w.p.Delay += time.Since(t0)
	if err != nil {
		ls.giveBack(w)
		return true, &pace.WaitError{Key: k.key, Err: ctxErr(ctx)}
	}
	return false, nil
}

// sleepFor returns how long w may sleep at now waiting for a renewal:
// until the rest of maxWait, ctx's deadline or the end of the grant g
// (an hour at most), or the refusal when a bound has run out.
func (w *leaseWait) sleepFor(ctx context.Context, g *leaseGrant, now time.Time) (time.Duration, error) {
	d := time.Hour
	if w.maxWait > 0 {
		if d = w.maxWait - now.Sub(w.start); d <= 0 {
			return 0, &pace.WaitError{Key: w.k.key, Err: pace.ErrWaitTooLong}
		}
	}
	if dl, ok := ctx.Deadline(); ok {
		rest := dl.Sub(now)
		if rest <= 0 {
			return 0, &pace.WaitError{Key: w.k.key, Err: errDeadline}
		}
		d = min(d, rest)
	}
	if g != nil && now.Before(g.until) {
		d = min(d, g.until.Sub(now)+time.Millisecond)
	}
	return d, nil
}

// want counts w among the Waits that found the share spent, once.
func (w *leaseWait) want() {
	if !w.wanted {
		w.k.want1()
		w.wanted = true
	}
}

// giveBack settles w's Permit with no answer when Redis decided it (the
// pause's decision, or a probe): a probe hands its role on.
func (ls *leaser) giveBack(w *leaseWait) {
	if w.p.Probe || w.p.State != nil {
		ls.l.Settle(w.p, throttle.Outcome{})
	}
}

// refuseWait returns the error for a wait of d when it exceeds the rest
// of maxWait (bounded) or outlasts ctx's deadline, or nil.
func refuseWait(ctx context.Context, key string, d, rest time.Duration, bounded bool) error {
	if bounded && d > rest {
		return &pace.WaitError{Key: key, Delay: d, Err: pace.ErrWaitTooLong}
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Add(d).Before(dl) {
		return &pace.WaitError{Key: key, Delay: d, Err: errDeadline}
	}
	return nil
}

package pace

import (
	"context"
	"slices"
	"time"

	"github.com/pacehttp/pace/internal/intmath"
	"github.com/pacehttp/pace/internal/retryrule"
	"github.com/pacehttp/pace/retry"
	"github.com/pacehttp/pace/throttle"
)

// booking is one request's place in its key's queue.
type booking struct {
	at       int64  // booked instant, ns since the store's epoch; 0 once given back by a pause
	floor    int64  // the earliest instant the key's quota pace allowed it (keyThrottle.paceFrom); replan keeps it
	wrote    int64  // when its request was written (Depart); 0: not yet
	probe    uint32 // the probe role it holds (keyThrottle.lease); 0: it is no probe
	released bool   // its wait is over; it is on its way to the wire
	over     bool   // booked on the shared overflow state
}

// index returns the position of b in the queue, or -1.
func (st *keyState) index(b *booking) int { return slices.Index(st.pending, b) }

// drop takes b out of the queue, leaving its booking as it is.
func (st *keyState) drop(b *booking) {
	if i := st.index(b); i >= 0 {
		st.pending = slices.Delete(st.pending, i, i+1)
	}
}

// PauseUntil makes requests for key wait until until: Wait, ReserveAt and
// AllowAt admit nothing of the key before it. Unlike a throttle reported to
// [Keyed.Settle], it sends no probe when it ends. Every waiter leaves, paced
// by the key's limit, which resumes at its steady rate. It only ever extends
// a pause, never shortens one. A paused key is not evicted before its pause
// ends. A new key whose shard has every key paused or waited on (see
// [KeyedOptions].MaxKeys) pauses the shared overflow state instead. The
// zero Time is ignored, and so is an until in the past of the store. That
// is an until no later than the latest instant the store decided a request
// of the key's shard at, or read for Wait. Such a pause could hold nothing
// back. Safe for concurrent use.
func (k *Keyed) PauseUntil(key string, until time.Time) {
	k.mustInit()
	if until.IsZero() || !until.After(k.epoch) {
		return
	}
	at := sinceEpoch(k.epoch, until)
	e := k.open(0, key, false)
	if at > e.now {
		e.throttle(at-e.now, e.state().th.gen, 0, false)
	}
	e.close(e.c != nil)
}

// PausedUntil returns the end of key's pause, or the zero Time if it has
// none. The store keeps no clock of its own. A pause ends for it once it
// has decided a request of the key's shard at or after the pause's end. So
// a pause that has ended by the wall clock may still be reported until
// then. Safe for concurrent use.
func (k *Keyed) PausedUntil(key string) time.Time {
	k.mustInit()
	e := k.open(0, key, false)
	p, now := e.pause(), e.now
	e.close(false)
	if p <= now {
		return time.Time{}
	}
	return k.epoch.Add(time.Duration(p))
}

// throttle pauses the key for d nanoseconds from e.now. It answers a request
// that left under generation gen (probe: the probe lease it held, 0 for
// none). It wakes the key's waiters if that changed anything. A new or
// longer pause gives back the bookings of the requests still waiting for
// their slot, latest first. So they book again behind the probe instead of
// ahead of it. The key resumes at its steady rate when the pause ends
// (algorithm.resume). The server's window has just been full, so the burst
// that accrued meanwhile is not spent into it.
func (e *entry) throttle(d int64, gen, probe uint32, halfOpen bool) {
	st := e.state()
	set := st.th.pause
	if halfOpen {
		set = st.th.throttled
	}
	if !set(e.now, d, gen, probe) {
		if probe != 0 {
			st.broadcast()
		}
		return
	}
	st.giveBack(e.k.alg, e.c, e.now)
	if e.c != nil && halfOpen {
		e.k.alg.resume(e.c, st.th.until)
	}
	st.broadcast()
}

// giveBack gives back at now, latest first, the bookings of the requests
// still waiting for their slot in c, a cell of alg (nil: no limit, only the
// queue). It wakes them, so that they book again. After a pause they book
// behind the probe. After a limit change (Keyed.SetLimitAt) they book under
// the new limit. A waiter that held the probe role gives it up with its
// booking.
func (st *keyState) giveBack(alg algorithm, c *cell, now int64) {
	i := len(st.pending)
	for i > 0 && !st.pending[i-1].released {
		i--
		b := st.pending[i]
		if c != nil {
			alg.unbook(c, now, b.at, 1)
		}
		b.at = 0
		if b.probe != 0 {
			st.th.released(b.probe)
			b.probe = 0
		}
	}
	st.pending = st.pending[:i]
	// The pace's latest booking goes back with them (to the latest one
	// still held, or now), so that they book again from there, not behind
	// their own given-back slots.
	last := now
	for _, b := range st.pending {
		last = max(last, b.at)
	}
	st.th.pace.last = min(st.th.pace.last, last)
	st.broadcast()
}

// withdraw takes b out of the queue at e.now. Its units go back to the
// limit unless its instant has come (then they count as used). The bookings
// made after it are booked again in order. So the queue closes up as if b
// had never queued, whichever of its members leaves it first.
func (e *entry) withdraw(b *booking) {
	st := e.st
	i := st.index(b)
	if i < 0 {
		return
	}
	if e.c == nil || b.at <= e.now || b.released {
		st.pending = slices.Delete(st.pending, i, i+1)
		return
	}
	e.replan(i, func() { e.k.alg.unbook(e.c, e.now, b.at, 1) })
	st.pending = slices.Delete(st.pending, i, i+1)
	st.broadcast()
}

// depart records that b's request was written at t. A request that left
// later than its slot counts where it left (algorithm.depart), plus the
// key's departure margin (margin.go). The bookings after it move back by
// as much. So no two requests of the key reach the wire closer than the
// limit allows (net/http/httptrace reports the instant). With a limit, b
// stays in the queue until its answer (see entry.answer).
func (e *entry) depart(b *booking, t int64) {
	st := e.st
	i := st.index(b)
	if i < 0 {
		return
	}
	if e.c == nil {
		st.pending = slices.Delete(st.pending, i, i+1)
		return
	}
	b.wrote = t
	e.move(i, satAdd(t, st.th.margin.at(e.k.alg.interval())))
}

// answer records that b's request, written at b.wrote, was answered at
// e.now, without a throttle. An answer later than the key's quickest
// (margin.answer) says the server got to the request late, and may have
// counted it late: nginx stamps an arrival when its worker wakes. When
// that is more than the margin, b counts that much after it left, and the
// bookings after it move back.
func (e *entry) answer(b *booking) {
	if b.wrote == 0 || e.c == nil {
		return
	}
	i := e.st.index(b)
	if i < 0 {
		return
	}
	m, iv := &e.st.th.margin, e.k.alg.interval()
	if late := m.answer(e.now-b.wrote, iv); late > m.at(iv) {
		e.move(i, satAdd(b.wrote, late))
	}
}

// move counts the booking at position i of the queue at t when that is
// later than its instant, and moves the bookings after it back.
func (e *entry) move(i int, t int64) {
	b := e.st.pending[i]
	if t > b.at {
		e.replan(i, func() {
			departOne(e.k.alg, e.c, e.now, b.at, t)
			b.at = t
		})
	}
}

// replan gives back the bookings after position i of the queue, latest
// first, which restores the limit exactly. It calls change, and books them
// again in order. A request still waiting books at its earliest instant
// now. A request already released books where it was, never before the
// booking ahead of it. A waiting booking that can no longer be placed keeps
// its instant. Waiters whose slot moves later find out when they wake.
// replan's callers broadcast when slots may have moved earlier.
func (e *entry) replan(i int, change func()) {
	st, alg := e.st, e.k.alg
	for j := len(st.pending) - 1; j > i; j-- {
		alg.relax(e.c, st.pending[j].at) // the later ones are given back already
		alg.unbook(e.c, e.now, st.pending[j].at, 1)
	}
	alg.relax(e.c, st.pending[i].at)
	change()
	last := st.pending[i].at
	for _, b := range st.pending[i+1:] {
		at := b.at
		if !b.released { // still waiting: its earliest slot now, not before its pace allowed
			if t, err := alg.earliest(e.c, max(e.now, b.floor), 1); err == nil {
				at = t
			}
		}
		// A released request is on its way: it keeps its instant, or the
		// latest one booked before it (a window keeps its log in order).
		at = max(at, last)
		alg.book(e.c, e.now, at, 1)
		b.at, last = at, at
	}
}

// Wait blocks until one request for key may leave, books it, and returns
// its [throttle.Permit]. It implements [throttle.Limiter].
//
// The key's throttle comes first: while the key is paused nothing leaves.
// When the pause ends, the first request to ask leaves as the key's probe
// (Permit.Probe). The others hold until [Keyed.Settle] reports how it
// ended, however long that takes. A probe's throttled answer fails each
// request waiting for it: its Wait returns a *WaitError wrapping
// [ErrThrottled]. Its caller can count the probe's attempt as its own, and
// may call Wait again.
//
// Then comes the key's limit: the request books the earliest slot and waits
// for it. Requests waiting for their slot form the key's queue. One that
// gives up (its context ends) leaves it, and the later ones move up, in
// whatever order they give up. A pause gives their bookings back, so that
// they book again behind the probe.
//
// It fails at once, booking nothing, with a *WaitError wrapping:
//
//   - [ErrWaitTooLong] when the pause or the slot lies beyond maxWait
//     (zero sets no bound);
//   - a [*ConfigError] for a negative maxWait, as the Transport refuses a
//     negative MaxWait, or a nil ctx;
//   - [ErrQueueFull] when the limit's queue is full;
//   - [ErrWaitExceedsDeadline] (which also matches
//     context.DeadlineExceeded) when the wait would not end before ctx's
//     deadline.
//
// A wait for a probe has no end known in advance. It fails the same way
// when it reaches maxWait or the deadline. If ctx ends during the wait, the
// booking is given back and Wait returns a *WaitError wrapping ctx.Err().
// Safe for concurrent use.
func (k *Keyed) Wait(ctx context.Context, key string, maxWait time.Duration) (throttle.Permit, error) {
	k.mustInit()
	if ctx == nil {
		return throttle.Permit{Key: key}, &WaitError{Key: key, Err: nilContextErr()}
	}
	if err := ctx.Err(); err != nil {
		return throttle.Permit{Key: key}, &WaitError{Key: key, Err: err}
	}
	if maxWait < 0 {
		return throttle.Permit{Key: key}, &WaitError{Key: key, Err: maxWaitErr(maxWait)}
	}
	if !k.limited && k.unpaused(key) {
		return throttle.Permit{Key: key}, nil
	}
	start := clampNow(int64(time.Since(k.epoch)))
	if k.waitFast(start, key) {
		return throttle.Permit{Key: key, Limited: k.limited}, nil
	}
	return k.waitSlow(ctx, key, maxWait, start)
}

// unpaused reports whether the shard of key holds no keyState. Then a
// Keyed without a limit has nothing to wait for, and its Wait reads no
// clock: the Transport's path for a host no limit paces.
func (k *Keyed) unpaused(key string) bool {
	s, _ := k.locate(key)
	s.mu.Lock()
	none := len(s.keys) == 0
	s.mu.Unlock()
	return none
}

// waitSlow is Wait past its fast path, from its first clock reading start.
// Like golang.org/x/time/rate's reserveN and wait, it decides under the
// key's lock (waiter.look) and sleeps outside it, then looks again.
func (k *Keyed) waitSlow(ctx context.Context, key string, maxWait time.Duration, start int64) (throttle.Permit, error) {
	var w waiter
	w.k, w.ctx, w.key, w.maxWait, w.start, w.deadline = k, ctx, key, maxWait, start, noDeadline
	w.p.Key, w.p.Limited = key, k.limited
	if dl, ok := ctx.Deadline(); ok {
		w.deadline = sinceEpoch(k.epoch, dl)
	}
	for now, first := start, true; ; now, first = clampNow(int64(time.Since(k.epoch))), false {
		do, err := w.look(now, first)
		switch do {
		case stepDone:
			return w.p, err
		case stepPause, stepPace:
			if err := sleepOn(ctx, key, w.d, w.ch); err != nil {
				return w.p, err
			}
			slept := time.Duration(clampNow(int64(time.Since(k.epoch))) - w.from) // an extension wakes it early
			if do == stepPause {
				w.p.Held += slept
			} else {
				w.paced += slept
			}
		case stepProbe:
			d, err := waitProbe(ctx, key, w.ch, w.d)
			w.p.Held += d
			if err != nil {
				return w.p, err
			}
		case stepBooked:
			again, err := k.sleepBooked(ctx, key, w.b, w.deadline)
			if err != nil || !again {
				return w.p, w.leave(err)
			}
			// A pause gave the booking back: wait for it and book again.
			w.p.Track, w.p.State, w.p.Probe, w.lease = false, nil, false, 0
		}
	}
}

// waiter is one call of [Keyed.Wait] past its fast path: what it carries
// from one look at its key to the next.
type waiter struct {
	k        *Keyed
	ctx      context.Context
	key      string
	maxWait  time.Duration
	start    int64 // the first clock reading, from which maxWait runs
	deadline int64 // ctx's deadline since the epoch, or noDeadline
	p        throttle.Permit
	probes   uint32        // the key's probe count at the first look
	b        *booking      // the request's booking, once it has one
	lease    uint32        // the probe role this request holds (p.Probe); 0: none
	held     int64         // the pace slot this request holds and waits for; 0: none
	heldGen  uint32        // the key's generation when it was taken: a pause voids it
	paced    time.Duration // time waited for pace slots
	// The sleep a look asks for (stepPause, stepPace, stepProbe).
	d    time.Duration   // its length, or the probe wait's bound (-1: none)
	ch   <-chan struct{} // closed by the key's next change
	from int64           // the instant looked at, from which it is counted
}

// A stepKind is what one look at a key (waiter.look) leaves its Wait to
// do, outside the key's lock.
type stepKind uint8

const (
	stepOn     stepKind = iota // go on deciding (within look only)
	stepDone                   // return the Permit, or the error
	stepPause                  // sleep out the key's pause
	stepPace                   // sleep until the held pace slot
	stepProbe                  // wait for the probe's answer
	stepBooked                 // sleep until the booked slot (sleepBooked)
)

// look is one look at the key at now, deciding under its lock: the key's
// throttle, then its pace, then its limit. It returns with the lock
// released; a sleep's length and channel are in w.
func (w *waiter) look(now int64, first bool) (stepKind, error) {
	left := time.Duration(0)
	if w.maxWait > 0 {
		left = max(w.maxWait-time.Duration(now-w.start), 1) // 1ns: refuse any wait
	}
	e := w.k.open(now, w.key, w.b != nil && w.b.over)
	if e.st != nil {
		if do, err := w.admit(&e, left, first); do != stepOn {
			return do, err
		}
	}
	// The key's pace (quota or adaptive, keyThrottle.paceFrom), then its
	// limit. With a limit, a request whose pace slot lies ahead first waits
	// for it, holding it, and books the limit only then. A pause could not
	// give back all of a limit's unit booked far ahead for the pace (a token
	// bucket's TAT keeps the gap), and the key would resume late. A probe
	// books both at once, as before.
	slot := e.now
	if st := e.st; st != nil {
		if w.held != 0 && w.heldGen == st.th.gen {
			slot = max(w.held, e.now)
		} else {
			w.held, slot = 0, st.th.paceFrom(e.now)
		}
	}
	if slot > e.now && e.c != nil && !w.p.Probe {
		return w.holdPace(&e, slot, left)
	}
	return w.book(&e, slot, left)
}

// admit applies the key's throttle (e.st is not nil) at e.now. When the
// request may go on to the pace and the limit, it sets the request's probe
// role, strikes and generation, and returns stepOn. Otherwise it releases
// the lock and returns what to do.
func (w *waiter) admit(e *entry, left time.Duration, first bool) (stepKind, error) {
	st := e.st
	if first {
		w.probes = st.th.probes
	} else if st.th.probes != w.probes {
		e.close(false)
		return stepDone, &WaitError{Key: w.key, Err: ErrThrottled} // p.Held says how long it waited
	}
	switch st.th.admit(e.now) {
	case admitPaused:
		d := time.Duration(st.th.until - e.now)
		var err error
		if _, hb := retryrule.HandBack(w.ctx); d > retry.MinThrottlePause && hb { // its caller waits out the pause in its own line
			err = &WaitError{Key: w.key, Delay: d, Err: ErrThrottled}
		} else {
			err = refuseWait(w.key, d, left, st.th.until, w.deadline)
		}
		if err != nil {
			e.close(false)
			return stepDone, err
		}
		w.d, w.ch, w.from = d, st.waitCh(), e.now
		e.close(false)
		return stepPause, nil
	case admitWaitProbe:
		w.d, w.ch = -1, st.waitCh() // no bound
		if w.maxWait > 0 {
			w.d = left
		}
		e.close(false)
		return stepProbe, nil
	case admitProbe:
		w.p.Probe, w.lease = true, st.th.lease
	}
	w.p.Strikes, w.p.Gen = int(st.th.strikes), uint64(st.th.gen)
	return stepOn, nil
}

// holdPace makes the request hold the pace slot ahead of e.now (e.st is
// not nil) and sleep until it, unless that wait is refused. It releases
// the lock.
func (w *waiter) holdPace(e *entry, slot int64, left time.Duration) (stepKind, error) {
	d := time.Duration(slot - e.now)
	if err := refuseWait(w.key, d, left, slot, w.deadline); err != nil {
		e.close(false)
		return stepDone, err
	}
	if w.held == 0 {
		e.st.th.paced(slot)
		w.held, w.heldGen = slot, e.st.th.gen
	}
	w.d, w.ch, w.from = d, e.st.waitCh(), e.now
	e.close(false)
	return stepPace, nil
}

// book decides the request under the key's limit at slot, its pace's
// earliest instant, and releases the lock. While the limit does not bind,
// the request leaves now without a place in the key's queue. Otherwise it
// joins the queue, and waits for its slot unless that is now.
func (w *waiter) book(e *entry, slot int64, left time.Duration) (stepKind, error) {
	var r Reservation
	var err error
	switch {
	case e.c != nil:
		r, err = decideCell(w.k.alg, e.c, slot, e.now, 1, left, w.deadline, true)
	case slot == e.now: // no limit, and the pace lets it go now
		if e.st != nil {
			e.st.th.paced(slot) // the pace's latest: the next are spaced after it
		}
		w.p.State = leaseOnly(e, w.lease)
		e.close(false)
		return stepDone, nil
	default: // no limit, only the pace
		r = Reservation{Delay: time.Duration(slot - e.now), at: slot, n: 1}
		err = refuseWait(w.key, r.Delay, left, slot, w.deadline)
	}
	if err != nil {
		return stepDone, w.refuse(e, r.Delay, err)
	}
	if e.st != nil {
		e.st.th.paced(r.at)
	}
	w.p.Delay = w.paced + r.Delay
	if e.c != nil && r.Delay == 0 && !w.k.alg.binds(e.c, r.at) {
		w.p.State = leaseOnly(e, w.lease)
		e.close(true)
		return stepDone, nil
	}
	// The limit binds (algorithm.binds), or the pace holds the request. It
	// joins the key's queue. So its departure, or its giving up, can move the
	// later bookings, and a pause can give its slot back.
	st := e.state()
	w.b = &booking{at: r.at, floor: slot, released: r.Delay == 0, probe: w.lease, over: e.over()}
	st.pending = append(st.pending, w.b)
	e.close(e.c != nil)
	w.p.Track, w.p.State = e.c != nil, w.b // a pace alone does not need the departure
	if r.Delay == 0 {
		return stepDone, nil
	}
	return stepBooked, nil
}

// refuse returns the error of a Wait whose slot was refused with err (a
// wait of d), giving up the probe role if it held one, and releases the
// lock.
func (w *waiter) refuse(e *entry, d time.Duration, err error) error {
	if w.p.Probe {
		e.st.th.released(w.lease)
		e.st.broadcast()
		w.p.Probe, w.lease = false, 0
	}
	e.close(false)
	if _, ok := err.(*WaitError); ok {
		return err
	}
	return &WaitError{Key: w.key, Delay: d, Err: err}
}

// leave ends a Wait whose booked sleep is over: err is nil when its slot
// came. A request that gave up has left the queue (sleepBooked); it gives
// up its probe role too.
func (w *waiter) leave(err error) error {
	if err != nil {
		w.p.Track, w.p.State = false, nil
		if w.p.Probe {
			w.k.releaseProbe(w.key, w.b.over, w.lease)
		}
	}
	return err
}

// leaseOnly returns the Permit.State of a request admitted at e without a
// place in its key's queue. That is nil, or for a probe (lease n != 0) a
// booking in no queue that holds its lease. So Settle can end the probe's
// role on the state that leased it (the key's own, or the overflow's). Only
// a probe allocates it, once per pause.
func leaseOnly(e *entry, n uint32) any {
	if n == 0 {
		return nil
	}
	return &booking{released: true, probe: n, over: e.over()}
}

// bookingOf returns the booking a Permit of k's carries in its State, or
// nil: the request's place in its key's queue, or its probe lease.
func bookingOf(p *throttle.Permit) *booking {
	b, _ := p.State.(*booking)
	return b
}

// waitFast is Wait's first look at key at now when the answer is plain. The
// key has no keyState (no pause, no probe, no queue). Its shard needs no
// sweep and is not full. There is no limit, or the limit is a GCRA one
// (token bucket, pacer) with at least two units free at now. So one leaves
// at once and the limit does not bind (Track stays false). waitFast then
// books the unit and reports true: the general path would return
// Permit{Key: key}. Otherwise it changes nothing but the shard's latest
// instant, as open would, and reports false.
func (k *Keyed) waitFast(now int64, key string) bool {
	s, h := k.locate(key)
	s.mu.Lock()
	now = s.advance(now)
	if len(s.keys) != 0 || now-s.last >= k.sweepEvery || (k.alg != nil && k.g == nil) {
		s.mu.Unlock()
		return false
	}
	if k.alg == nil {
		if s.full(k) { // a new key of a full shard opens the overflow state
			s.mu.Unlock()
			return false
		}
		s.mu.Unlock()
		return true
	}
	w, tracked := s.cells[h]
	if !tracked && s.full(k) {
		s.mu.Unlock()
		return false
	}
	// gcra.earliest at now is now when tat−now <= τ−i; after booking one
	// unit (TAT = tat+i) the next is free at now too when tat−now <= τ−2i.
	g := k.g
	tat := max(w.a, now)
	if tat-now > g.tau-2*g.i {
		s.mu.Unlock()
		return false
	}
	s.cells[h] = words{tat + g.i, bookedNow(w.b, now)}
	if !tracked && len(s.cells) > s.peak {
		s.peak = len(s.cells)
	}
	s.mu.Unlock()
	return true
}

// sleepBooked waits for b's slot, following its moves. It returns again
// when a pause gave the booking back, and a *WaitError when ctx ends or the
// slot moved past the deadline (the booking then leaves the queue).
func (k *Keyed) sleepBooked(ctx context.Context, key string, b *booking, deadline int64) (again bool, err error) {
	for {
		now := clampNow(int64(time.Since(k.epoch)))
		e := k.open(now, key, b.over)
		if b.at == 0 {
			e.close(false)
			return true, nil
		}
		if b.at <= e.now {
			b.released = true
			e.close(false)
			return false, nil
		}
		d := time.Duration(b.at - e.now)
		if deadline != noDeadline && b.at >= deadline {
			e.withdraw(b)
			e.close(true)
			return false, &WaitError{Key: key, Delay: d, Err: errDeadline}
		}
		ch := e.st.waitCh()
		var i int64
		if e.c != nil {
			i = e.k.alg.interval()
		}
		e.close(false)
		if err := sleepSlot(ctx, key, d, time.Duration(i), ch); err != nil {
			e := k.open(clampNow(int64(time.Since(k.epoch))), key, b.over)
			e.withdraw(b)
			e.close(true)
			return false, err
		}
	}
}

// releaseProbe gives back the probe role (lease n) of a request that gave up.
func (k *Keyed) releaseProbe(key string, over bool, n uint32) {
	e := k.open(clampNow(int64(time.Since(k.epoch))), key, over)
	if e.st != nil {
		e.st.th.released(n)
		e.st.broadcast()
	}
	e.close(false)
}

// Depart records that the request of p was written at at, for a Permit
// whose Track is set (others are ignored). See [throttle.Limiter]. An at
// in the future counts as now: no request is written later than Depart is
// told of it. Safe for concurrent use.
func (k *Keyed) Depart(p throttle.Permit, at time.Time) {
	k.mustInit()
	b := bookingOf(&p)
	if b == nil {
		return
	}
	t := min(sinceEpoch(k.epoch, at), clampNow(int64(time.Since(k.epoch))))
	e := k.open(t, p.Key, b.over)
	if e.st != nil {
		e.depart(b, t)
	}
	e.close(true)
}

// Settle records how the request of p ended (see [throttle.Outcome]). It
// implements [throttle.Limiter]. A throttle pauses the key for o.Pause. An
// answer closes a half-open key when p is its probe. A probe that ends
// without an answer hands the role to the next request. The booking of a
// request that was never sent is given back if its instant has not come.
// A plain outcome reads no clock: no throttle, a Permit without Track, o.At
// zero, of a key without a pause, probe or queue. It costs a lock at most,
// and none while no key of the store has any.
//
// o.Quota, the server's quota, paces the key. Its Remaining requests are
// spread over the Reset, each Reset/(Remaining+1) after the one before. So
// the key never runs dry before the reset. None remaining pauses the key
// until the reset, without a probe. The key's limit still applies, so a
// quota never makes requests go faster than it. An answer that contradicts
// the quota already known for the same window is ignored. It contradicts
// it when its reset moved more than a second earlier, or more remains than
// an earlier answer said. The pace ends with its window.
//
// The key's departure margin learns (docs/pacing.md, "The margin learns the
// server"). A first throttle of a request that left at its limit's slot
// (p.Track), without a quota, doubles the margin. It grows up to a 20th of
// the limit's interval. 128 answers in a row without one halve it again. A
// Tracked request answered later than the key's quickest recent answers
// counts as leaving that much later (up to a 10th). The key's later
// slots then move back. o.Cut lowers the key's rate (docs/pacing.md,
// "Slowing down by itself"), unless the margin widened. Safe for concurrent
// use.
func (k *Keyed) Settle(p throttle.Permit, o throttle.Outcome) {
	k.mustInit()
	k.settle(&p, o)
}

// settle is Settle with the Permit passed by pointer. o.Quota, when its
// Reset is positive, is the server's quota, from o.At; a throttle widens
// the margin or, with o.Cut, lowers the key's rate, once per strike
// (learnThrottle).
func (k *Keyed) settle(p *throttle.Permit, o throttle.Outcome) {
	q := o.Quota
	t := int64(0) // not read yet
	if !o.At.IsZero() {
		t = sinceEpoch(k.epoch, o.At)
	}
	b := bookingOf(p)
	if b == nil && o.Pause <= 0 && q.Reset <= 0 && ((t == 0 && k.states.Load() == 0) || k.settleFast(t, p.Key)) {
		return // no keyState anywhere: nothing to record (see settleFast)
	}
	if t == 0 {
		t = clampNow(int64(time.Since(k.epoch))) // time.Now, read as cheaply
	}
	e := k.open(t, p.Key, b != nil && b.over)
	lease := uint32(0) // the probe lease p holds
	if b != nil {
		lease = b.probe
	}
	st := e.st
	if st != nil && b != nil {
		if o.Sent {
			if p.Track && o.Response && o.Pause <= 0 {
				e.answer(b)
			}
			st.drop(b) // Depart, if told, has placed it already
		} else {
			e.withdraw(b)
		}
	}
	switch {
	case o.Pause > 0:
		if e.c != nil && (st == nil || uint32(p.Gen) == st.th.gen) { // a new strike, not the same news again
			e.learnThrottle(p, o)
		}
		e.throttle(int64(o.Pause), uint32(p.Gen), lease, true)
	case st == nil:
	case o.Response:
		st.th.answered(e.now, lease)
		if p.Track {
			st.th.margin.answered(e.now, e.k.alg.interval())
		}
		if p.Probe {
			st.broadcast()
		}
	case p.Probe:
		st.th.released(lease)
		st.broadcast()
	}
	if q.Reset > 0 { // after the throttle, so that a 429 still makes the key half-open
		e.learn(q)
	}
	e.close(e.c != nil && (e.tracked || o.Pause > 0))
}

// learnThrottle learns from a new strike, a throttle o of p's request, of a
// key with a limit. Take the first throttle of a request that left at its
// limit's slot (p.Track), with no quota stated. It is the server's clock
// disagreeing with ours, so it widens the key's departure margin
// (margin.go). Otherwise, or once the margin is at its widest, o.Cut lowers
// the key's rate (adaptiveRate).
func (e *entry) learnThrottle(p *throttle.Permit, o throttle.Outcome) {
	i := e.k.alg.interval()
	if p.Track && p.Strikes == 0 && o.Quota.Reset <= 0 && e.state().th.margin.widen(e.now, i) {
		return
	}
	if o.Cut {
		e.state().th.adapt.cut(e.now, i)
	}
}

// learn applies the server's quota q, stated at e.now, to the key (see
// keyThrottle.learn). A spent quota pauses the key until its reset, as
// [Keyed.PauseUntil] does. One with requests left spaces them over the time
// to the reset. Such a quota is not recorded when the key's limit holds the
// key to it already. That is when its pace would be no slower than the
// limit. It is also when the limit is no faster than the quota's own rate
// (Limit per Window, when the server states both). That happens when the
// client is configured with the server's published limit. A window limit
// that slides or leaks refills all along. Its reset (whole seconds, rounded
// up) names when it is whole again. So spreading its remainder would only
// slow such a client down. For the same reason a spent quota does not
// pause a key whose limit spaces each request by its interval (a pacer
// without slack, a token bucket of burst 1) when its reset is within that
// interval rounded up to a whole second: it names the next unit of a
// limit that refills faster than a second (pace's middleware answers
// "r=0;t=1" after each request of a pacer of 10/s), which the key's limit
// waits for already. A limit that allows a burst, or counts in windows of
// its own phase, could send into the spent quota: it pauses.
func (e *entry) learn(q throttle.Quota) {
	reset, left := int64(q.Reset), int64(max(q.Remaining, 0))
	if e.c != nil && (e.st == nil || e.st.th.pace.interval == 0) {
		i := e.k.alg.interval()
		ownRate := q.Limit > 0 && q.Window > 0 && int64(q.Window)/int64(q.Limit) <= i
		switch {
		case left > 0 && (reset/(left+1) <= i || ownRate):
			return
		case left == 0 && ownRate && reset <= intmath.CeilDiv(i, int64(time.Second))*int64(time.Second) && spacesEach(e.k.alg):
			return
		}
	}
	st := e.state()
	if d := st.th.learn(e.now, left, reset, q.Bucket, int64(max(q.Limit, 0)), int64(max(q.Window, 0))); d > 0 {
		e.throttle(d, st.th.gen, 0, false)
	}
}

// settleFast is Settle at now of a Permit with no booking and an outcome
// that is no throttle. It applies when the key has no keyState and its
// shard is not full, so the key cannot be on the overflow state. If now is
// known (> 0), the shard must also need no sweep. Then there is nothing to
// record, and it reports true. It records now as the shard's latest
// instant, as open does. With now 0 (Outcome.At zero) it reads no clock. So
// it neither records an instant nor starts a sweep: a plain success costs
// no clock reading. The shard is swept at its next decision instead.
// Otherwise it reports false, having changed at most the latest instant.
func (k *Keyed) settleFast(now int64, key string) bool {
	s, _ := k.locate(key)
	s.mu.Lock()
	ok := len(s.keys) == 0 && !s.full(k)
	if ok && now > 0 {
		now = s.advance(now)
		ok = now-s.last < k.sweepEvery
	} else if now > 0 {
		s.advance(now)
	}
	s.mu.Unlock()
	return ok
}

// refuseWait returns the error for a wait of d that ends at until, when it
// exceeds left (> 0) or does not end before deadline, or nil.
func refuseWait(key string, d, left time.Duration, until, deadline int64) error {
	switch {
	case left > 0 && d > left:
		return &WaitError{Key: key, Delay: d, Err: ErrWaitTooLong}
	case deadline != noDeadline && until >= deadline:
		return &WaitError{Key: key, Delay: d, Err: errDeadline}
	}
	return nil
}

// spacesEach reports whether alg admits no two units closer than its
// interval: a token bucket or a pacer of capacity 1, alone.
func spacesEach(alg algorithm) bool {
	g := coreOf(alg)
	return g != nil && g.c == 1
}

package pace

import (
	"math/bits"
	"time"

	"github.com/pacehttp/pace/internal/hostkey"
	"github.com/pacehttp/pace/internal/intmath"
	"github.com/pacehttp/pace/throttle"
)

// A limit changed live ([Shaper.SetLimitAt], [Keyed.SetLimitAt],
// [Transport.SetLimit]) keeps what was used under the old one. The new
// limit starts with the units the old one had used at the instant of the
// change already used (retune). So neither forgets the other, and the two
// together never admit more than the larger of them would on its own.

// retune returns, at now, a cell of to that has used what c, a cell of
// from, had used then. It is the same state when that means the same under
// to (see keep). Else it is what c had used, Limit − Remaining, booked at
// now. So it leaves the new window no earlier than it would have left the
// old. For a token bucket or pacer that is the units still to drain. For
// [All] it goes part by part when both have as many parts. Else every new
// part gets the most any part had used. A new window or bucket never counts
// more than it can hold. The units beyond that (a queue) are carried only
// into a token bucket or pacer, whose TAT holds them.
func retune(from, to algorithm, c *cell, now int64) cell {
	if fm, tm := partsOf(from), partsOf(to); fm != nil && tm != nil && len(fm) == len(tm) {
		nc := cell{x: &cellExt{parts: make([]cell, len(tm))}}
		for i := range tm {
			var pc cell
			if c.x != nil && c.x.parts != nil {
				pc = c.x.parts[i]
			}
			nc.x.parts[i] = retune(fm[i], tm[i], &pc, now)
		}
		return nc
	}
	if nc, ok := keep(from, to, c, now); ok {
		return nc
	}
	used := usedUnits(from, c, now)
	if g := coreOf(from); g != nil && coreOf(to) == nil {
		// A window counts every unit taken within it, and a bucket may have
		// let through, within the new window, what it holds drained and
		// all it refilled, even when it is full again: at most
		// ⌈window/interval⌉ more.
		used = satAdd(used, intmath.CeilDiv(to.span(), g.i))
	}
	return carry(to, used, now)
}

// keep returns c as a cell of to when its state means the same under to:
//
//   - a token bucket or pacer's backlog (TAT − now), scaled from the old
//     interval to the new one, exact when they are equal. The part of it
//     within a drained bucket (τ) is what the bucket used. It counts up to
//     the new bucket's capacity. So a drained bucket changed to a smaller
//     one is drained, not in debt, and goes on at the new rate at once. The
//     part beyond it, reservations queued, is kept whole: scaled, and never
//     ending before the last of them, whose instants stay.
//   - a sliding log's instants, whatever the new N and Per.
//   - a fixed window's or sliding estimate's counts when the window length
//     is the same.
func keep(from, to algorithm, c *cell, now int64) (cell, bool) {
	if f, t := coreOf(from), coreOf(to); f != nil && t != nil {
		backlog := max(c.a-now, 0)
		queued := max(backlog-f.tau, 0) // booked beyond a drained bucket
		used := min(rescale(backlog-queued, f.i, t.i), t.tau)
		scaled := min(satAdd(rescale(queued, f.i, t.i), used), maxSpan)
		nc := cell{a: max(c.a, now) - backlog + scaled, b: c.b}
		if queued > 0 {
			// The reservations queued keep their instants, the last at
			// TAT − the old interval at the latest: the new limit's next
			// unit comes its own interval after it, never between them.
			nc.a = max(nc.a, min(satAdd(c.a-f.i, t.tau), satAdd(now, maxSpan)))
		}
		if f.i != t.i || f.tau != t.tau { // the chain (cell.b) does not carry over
			l, _ := f.bounds(c)
			t.mark(&nc, l, l)
		}
		return nc, true
	}
	if partsOf(from) != nil || partsOf(to) != nil {
		return cell{}, false
	}
	fa, fr, _, _ := from.params()
	ta, tr, _, _ := to.params()
	switch {
	case fa != ta:
	case fa == throttle.SlidingLog, // instants mean the same under any N and Per
		(fa == throttle.FixedWindow || fa == throttle.SlidingCounter) && fr.Per == tr.Per:
		return *c, true
	}
	return cell{}, false
}

// rescale returns d·to/from (d >= 0, to and from >= 1), or maxSpan when
// that exceeds it. It turns a span of d at one unit every from nanoseconds
// into a span of as many units every to.
func rescale(d, from, to int64) int64 {
	hi, lo := bits.Mul64(uint64(d), uint64(to))
	if hi < uint64(from) {
		if q, _ := bits.Div64(hi, lo, uint64(from)); q < uint64(maxSpan) {
			return int64(q)
		}
	}
	return maxSpan
}

// usedUnits returns how many units of from c has used at now (see retune).
func usedUnits(from algorithm, c *cell, now int64) int64 {
	if ps := partsOf(from); ps != nil {
		used := int64(0)
		for i, p := range ps {
			var pc cell
			if c.x != nil && c.x.parts != nil {
				pc = c.x.parts[i]
			}
			used = max(used, usedUnits(p, &pc, now))
		}
		return used
	}
	if g := coreOf(from); g != nil {
		return intmath.CeilDiv(max(c.a-now, 0), g.i)
	}
	q := quotaAt(from, c, now, now)
	return int64(max(q.Limit-q.Remaining, 0))
}

// carry returns a cell of to that has used units at now.
func carry(to algorithm, used, now int64) cell {
	var nc cell
	if used <= 0 {
		return nc
	}
	if ps := partsOf(to); ps != nil {
		nc.x = &cellExt{parts: make([]cell, len(ps))}
		for i, p := range ps {
			nc.x.parts[i] = carry(p, used, now)
		}
		return nc
	}
	if g := coreOf(to); g != nil {
		backlog, ok := mulCheck(used, g.i)
		if !ok || backlog > maxSpan {
			backlog = maxSpan
		}
		nc.a = satAdd(now, backlog)
		g.mark(&nc, now, now)
		return nc
	}
	to.book(&nc, now, now, int(min(used, int64(to.maxN()))))
	return nc
}

// SetLimitAt changes the Shaper's limit to l at now, keeping what was used.
// The new limit starts with the units the old one had used at now already
// used. For a token bucket or pacer these are the units still to drain,
// queued reservations included, now spaced at the new interval. For a
// window they are what its current window counts. So in no interval do the
// two together admit more than the larger of them allows on its own. (That
// holds when one allows at least as much as the other at every length of
// interval, as a faster rate with a burst at least as large does.)
// Reservations made before the change keep their instants. It returns l's
// error for an invalid l and a [*ConfigError] for the zero Limit, changing
// nothing. Safe for concurrent use.
//
// What a change keeps depends on the two algorithms. The same limit again
// changes nothing. Between token buckets and pacers, the state is kept in
// the new interval. What the bucket used counts up to the new burst. A
// drained bucket is drained under a smaller one too, and goes on at the new
// rate at once. That is what x/time/rate's SetLimitAt does, which keeps the
// tokens. Reservations queued beyond it stay queued. A sliding log keeps
// its instants under any rate. A fixed window or sliding counter keeps its
// counts under the same window length.
//
// Every other change (across algorithms, or to another window length)
// keeps only a count. That is the units the old limit counted at now
// (Limit − Remaining of [Shaper.QuotaAt]), booked at now, since when each
// was used is not known. From a token bucket or pacer to a window or log
// it is also the units the bucket may have refilled and let through within
// the new window, since the window counts them all. They cost what a burst at now would. A window or
// log holds them for a whole window of the new limit. So 20 used under
// SlidingCounter(PerSecond(20)), changed to SlidingLog(PerSecond(20)),
// admit nothing for 1 s. A token bucket or pacer drains them at its rate.
// The same 20 under TokenBucket(PerSecond(20), 5) give the next unit after
// 800 ms. That is the price of never admitting more than the larger of the
// two in any interval.
func (s *Shaper) SetLimitAt(now time.Time, l Limit) error {
	s.mustInit()
	if err := l.Err(); err != nil {
		return err
	}
	if l.alg == nil {
		return configErr("Limit", "no limit", "a Shaper needs a non-zero Limit")
	}
	at := sinceEpoch(s.epoch, now)
	s.mu.Lock()
	at = max(at, s.seen)
	s.c = retune(s.alg, l.alg, &s.c, at)
	s.alg, s.g = l.alg, coreOf(l.alg)
	s.mu.Unlock()
	return nil
}

// SetLimitAt changes, at now, the limit the store applies to every key to
// l. It keeps each key's state as [Shaper.SetLimitAt] does. Requests
// waiting for a slot of the old limit give it back and book again under
// the new one, as after a pause. So a faster limit speeds them up and a
// slower one holds them. Requests already on their way keep their
// instants, and pauses and probes are kept. The change takes every shard's
// lock at once, for about as long as a sweep of the whole store takes. So
// no request is decided under a mix of the two limits. It returns l's
// error for an invalid l, changing nothing. It returns a [*ConfigError]
// when l or the store's limit is the zero Limit (a store without a limit
// holds pauses only). Safe for concurrent use.
func (k *Keyed) SetLimitAt(now time.Time, l Limit) error {
	k.mustInit()
	if err := l.Err(); err != nil {
		return err
	}
	at := sinceEpoch(k.epoch, now)
	for i := range k.shards {
		k.shards[i].mu.Lock()
	}
	k.over.mu.Lock()
	defer func() {
		k.over.mu.Unlock()
		for i := range k.shards {
			k.shards[i].mu.Unlock()
		}
	}()
	if l.alg == nil || k.alg == nil {
		return configErr("Limit", l, "SetLimitAt changes a limit; it cannot add one to a store without, or remove one")
	}
	from := k.alg
	for i := range k.shards {
		s := &k.shards[i]
		s.retune(from, l.alg, max(at, s.last, s.seen))
	}
	o := &k.over
	t := max(at, o.seen)
	if o.st != nil {
		o.st.giveBack(from, &o.c, t)
	}
	o.c = retune(from, l.alg, &o.c, t)
	k.alg, k.g = l.alg, coreOf(l.alg)
	k.sweepEvery = max(l.alg.span(), minSweepEvery)
	return nil
}

// retune moves every cell of s from the algorithm from to to at now (see
// retune), first giving back the bookings of the requests still waiting
// for their slot. s.mu must be held.
func (s *shard) retune(from, to algorithm, now int64) {
	for h, st := range s.keys {
		if w, ok := s.cells[h]; ok {
			x := s.exts[h]
			s.tmp = cell{a: w.a, b: w.b, x: x}
			st.giveBack(from, &s.tmp, now)
			s.store(h, x)
		} else {
			st.giveBack(from, nil, now)
		}
	}
	for h, w := range s.cells {
		x := s.exts[h]
		s.tmp = cell{a: w.a, b: w.b, x: x}
		s.tmp = retune(from, to, &s.tmp, now)
		s.store(h, x)
	}
	s.tmp = cell{}
}

// SetLimit changes, on a running Transport, the Limit of host's entry of
// Limits ("*" for the default entry) to l, for every key under it. It
// keeps each key's state as [Keyed.SetLimitAt] does. So in no interval do
// the old and the new limit together admit more than the larger. The host
// is matched as Hosts keys are. It changes nothing and returns a
// [*ConfigError] naming the entry when Limits has no entry for host with a
// non-zero Limit. (SetLimit changes limits; it adds and removes none.) It
// does the same when l is invalid or zero. It returns the Transport's
// configuration error if it has one. A Transport with its own Limiter has
// no Limits to change. Safe for concurrent use with RoundTrip.
func (t *Transport) SetLimit(host string, l Limit) error {
	s, err := t.init()
	if err != nil {
		return err
	}
	var he *hostEntry
	if s.hosts != nil {
		if host == DefaultHost {
			he = s.hosts.def
		} else if h, err := hostkey.Key(host); err == nil {
			he = s.hosts.byHost[h]
		}
	}
	k, _ := limiterOf(he).(*Keyed)
	if k == nil {
		return configErr(hostField(host), host, "not in Limits with a limit; SetLimit changes limits, it adds none")
	}
	if err := k.SetLimitAt(time.Now(), l); err != nil {
		return limitErr(hostField(host), err)
	}
	return nil
}

// limiterOf returns he's limiter, or nil.
func limiterOf(he *hostEntry) throttle.Limiter {
	if he == nil {
		return nil
	}
	return he.lim
}

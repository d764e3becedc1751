package pace

import (
	"math"
	"time"
)

// maxSpan is the longest capacity·interval (and queue·interval) a GCRA limit
// accepts, about 146 years. Keeping every span at or below MaxInt64/2 leaves
// room to add it to any instant limiters see (also at most MaxInt64/2).
const maxSpan = math.MaxInt64 / 2

// gcra is the arithmetic shared by the token bucket and the leaky-bucket
// pacer. It is the generic cell rate algorithm in its virtual-scheduling
// form (ITU-T Recommendation I.371, Annex A). It is weighted by units and
// works on integer nanoseconds, so that booking and cancelling are exact.
//
// The state of a cell is two instants, in nanoseconds since the limiter's
// epoch:
//
//   - c.a is the theoretical arrival time TAT: the instant at which the
//     bucket would be full again if nothing more were booked.
//   - c.b bounds the latest instant anything still booked was booked at
//     (latest). So cancel can tell whether later bookings depend on the one
//     being given back. It has two forms, a chain threshold and a plain
//     bound.
//   - As a chain threshold k >= 0: every booking still held at an instant
//     s > k was booked behind a drained bucket. Nothing held since has
//     changed that, so s + τ <= TAT. That is a queue of reservations, each
//     at the instant the one before it left TAT at. Then latest <= max(k,
//     TAT − τ). Cancelling such a queue latest first finds each booking in
//     turn the latest, and gives it back whole.
//   - As a plain bound ^b < 0: nothing held was booked after b. relax
//     learns that, when TAT − τ lies beyond it.
//   - Either way latest <= TAT − i.
//
// With capacity C units and one unit every i nanoseconds, n units may be
// taken at t when TAT + n·i − C·i <= t. Taking them moves TAT to max(TAT,
// t) + n·i. This is the lazy-refill token bucket tokens = min(C, tokens +
// (now−last)/i) in another form: at any now,
//
//	tokens(now) = C − max(0, TAT − now)/i,
//
// so "TAT <= now" is a full bucket. The zero cell (TAT 0, before every
// instant a limiter sees) is a fresh one. The state is an instant rather
// than a count. So a now earlier than before can only see fewer tokens: a
// clock stepping back mints nothing.
//
// The promise, which the tests check on random schedules, is about the
// units booked and not cancelled. Every closed interval [x, y] holds at
// most C + ⌊(y−x)/i⌋ of them, whatever the order in which the instants
// were passed.
type gcra struct {
	i   int64 // nanoseconds per unit, ≥ 1: Rate.Interval, rounded up
	c   int64 // capacity in units, ≥ 1
	tau int64 // c·i, at most maxSpan
}

// newGCRA returns the core for r and capacity units, or a *ConfigError naming
// field (with value, the setting as the user gave it) when
// capacity·interval exceeds maxSpan. r must be valid (Rate.validate bounds
// its interval by maxPer = maxSpan) and capacity >= 1.
func newGCRA(r Rate, capacity int, field string, value int) (gcra, error) {
	i := int64(r.Interval())
	tau, ok := mulCheck(int64(capacity), i)
	if !ok || tau > maxSpan {
		return gcra{}, configErr(field, value, "with the interval "+time.Duration(i).String()+" spans over 146 years")
	}
	return gcra{i: i, c: int64(capacity), tau: tau}, nil
}

// earliest returns the earliest instant t >= now at which n units
// (1 <= n <= g.c) can be taken from c. It refuses with ErrWaitTooLong when
// booking them would move TAT past MaxInt64.
func (g *gcra) earliest(c *cell, now int64, n int) (int64, error) {
	tat := max(c.a, now)
	end, ok := addCheck(tat, int64(n)*g.i) // n <= c, so n·i <= tau: no overflow
	if !ok {
		return 0, ErrWaitTooLong
	}
	return max(now, end-g.tau), nil
}

// book takes n units at t, an instant earliest returned (or now, when
// earliest returned now or earlier). Take a booking after every one held
// that leaves TAT at exactly t + τ: the bucket drained behind it, as for
// any booking that had to wait. It keeps the chain (see cell.b). Any other
// joins the threshold, as one taken at once (t <= now) does, as in allow1.
func (g *gcra) book(c *cell, now, t int64, n int) {
	if t <= now {
		if c.x != nil { // past bookings recorded (backstate.go)
			dropBack(c)
		}
		c.a = satAdd(max(c.a, t), int64(n)*g.i)
		c.b = bookedNow(c.b, t)
		return
	}
	before := words{c.a, c.b}
	l, k := g.bounds(c)
	c.a = satAdd(max(c.a, t), int64(n)*g.i)
	if t <= l || c.a-g.tau != t {
		k = max(k, t)
	}
	g.mark(c, k, max(l, t))
	if t > before.a { // later than the bucket's own slot (a part of All): TAT jumped
		pushBack(c, before, t, n)
	}
}

// unbook gives back n units booked at t. Units booked later than t were
// scheduled behind these. So only the part of n·i that no later booking
// overlaps is given back, as golang.org/x/time/rate's
// Reservation.CancelAt does: TAT −= max(0, n·i − (L − t)). L bounds the
// latest booking (latest). When nothing was booked after t, TAT moves back
// by exactly n·i. The bound then moves back to the booking before it when
// the chain holds (see cell.b). So cancelling a group of reservations
// latest first restores the state exactly, however large the burst
// (thrasher-corp/gocryptotrader#2371). A booking later than TAT (a part
// of All held back by another part) records the state before it, which
// comes back when it is cancelled as the latest (popBack).
//
// The cut keeps the promise. Booking maintains TAT >= s + W(s)·i for every
// held booking instant s, where W(s) counts the units held at or after s.
// That is all the promise needs. Units after t number at most (TAT − t)/i
// − n. So this cut preserves it for s > t as well as s <= t. The chain's
// TAT >= s + τ + (W(s) − n(s))·i survives a whole give-back. A cut ends it
// for what is held (the threshold moves up to L).
func (g *gcra) unbook(c *cell, _, t int64, n int) {
	if popBack(c, t, n) {
		return
	}
	n64 := min(int64(max(n, 0)), g.c) // a foreign Reservation must not overflow
	l, k := g.bounds(c)
	give := n64*g.i - max(0, l-t)
	if give > 0 {
		c.a = max(c.a-give, 0)
	}
	if t >= l { // the latest: given back whole
		l = min(l, c.a-g.i, max(k, c.a-g.tau))
	} else {
		if give > 0 {
			k = l
		}
		l = min(l, c.a-g.i)
	}
	g.mark(c, k, l)
}

// bounds returns latest, the bound on the latest held booking, and the
// chain threshold k <= latest (see cell.b). The plain bound b is a
// threshold too: nothing is held after it.
func (g *gcra) bounds(c *cell) (latest, k int64) {
	if c.b < 0 {
		latest = min(c.a-g.i, ^c.b)
		return latest, latest
	}
	latest = min(c.a-g.i, max(c.b, c.a-g.tau))
	return latest, min(c.b, latest)
}

// mark stores in c.b the chain threshold k when it bounds the latest booking
// as well as latest does (TAT − τ <= latest), else latest as a plain bound.
// Both move up to 0 at least: a higher bound is always safe, and no instant
// a limiter sees is below 1.
func (g *gcra) mark(c *cell, k, latest int64) {
	if c.a-g.tau <= latest {
		c.b = max(min(k, latest), 0)
	} else {
		c.b = ^max(latest, 0)
	}
}

// bookedNow returns the word b of a cell after one unit was taken at now
// at once (allow1, Keyed's fast path): now joins the threshold or the bound.
func bookedNow(b, now int64) int64 {
	if b < 0 {
		return ^max(^b, now)
	}
	return max(b, now)
}

// allow1 takes one unit at now if it can go at once. It is earliest and
// book for n = 1 and t = now, written out for the hot path of Allow. tat −
// now is compared with τ − i rather than adding, so a saturated TAT cannot
// wrap.
func (g *gcra) allow1(c *cell, now int64) bool {
	tat := max(c.a, now)
	if tat-now > g.tau-g.i {
		return false
	}
	c.a = tat + g.i
	c.b = bookedNow(c.b, now)
	return true
}

// depart shifts TAT by the lateness: left − t. The unit at left joins the
// threshold.
func (g *gcra) depart(c *cell, _, t, left int64) {
	l, k := g.bounds(c)
	c.a = satAdd(c.a, left-t)
	g.mark(c, max(k, left), max(l, left))
}

// binds reports whether no unit is left at t.
func (g *gcra) binds(c *cell, t int64) bool { return c.a-t > g.tau-g.i }

// interval is the spacing of units, i.
func (g *gcra) interval() int64 { return g.i }

// relax lowers the bound on the latest booking (see algorithm).
func (g *gcra) relax(c *cell, latest int64) {
	l, k := g.bounds(c)
	l = min(l, latest)
	g.mark(c, min(k, l), l)
}

// resume leaves one unit for at and none saved beyond it. TAT becomes at
// least at + τ − i, so the unit after the one at at comes i later. What is
// held stays bounded as before.
func (g *gcra) resume(c *cell, at int64) {
	l, k := g.bounds(c)
	c.a = max(c.a, satAdd(at, g.tau-g.i))
	g.mark(c, k, l)
}

// core returns g: the token bucket and the pacer, built on GCRA, give it to
// the fast paths of Allow, which skip the interface calls.
func (g *gcra) core() *gcra { return g }

// idle reports whether c is full at now, so it behaves like the zero cell.
func (g *gcra) idle(c *cell, now int64) bool { return c.a <= now }

// addCheck returns a+b and whether it did not overflow.
func addCheck(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// satAdd returns a+b, saturated to the int64 range.
func satAdd(a, b int64) int64 {
	s, ok := addCheck(a, b)
	if ok {
		return s
	}
	if b > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// mulCheck returns a·b for a, b >= 0 and whether it did not overflow.
func mulCheck(a, b int64) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	if a != 0 && b > math.MaxInt64/a {
		return 0, false
	}
	return a * b, true
}

// quota of the token bucket and the pacer. With TAT the instant the bucket
// is full again, n units fit at now when max(TAT−now, 0) + n·i <= C·i.
func (g *gcra) standing(c *cell, now int64) quotaState {
	backlog := max(c.a-now, 0)
	return quotaState{
		limit:     g.c,
		window:    g.tau,
		remaining: max(g.tau-backlog, 0) / g.i,
		reset:     backlog,
	}
}

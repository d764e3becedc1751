package pace

import (
	"math"
	"math/bits"

	"github.com/pacehttp/pace/throttle"
)

// SlidingCounter returns an approximate sliding-window Limit that keeps two
// counters per key. They hold the units booked in the current aligned
// window of length r.Per, and in the previous one. At an instant e into
// the current window it estimates the trailing window's count as
//
//	prev·(1 − e/r.Per) + cur
//
// and admits n units when the estimate plus n is at most r.N. This is the
// estimate HAProxy's sc_http_req_rate uses. Cloudflare describes it in "How
// we built rate limiting capable of scaling to millions of domains" (2017,
// https://blog.cloudflare.com/counting-things-a-lot-of-different-things/).
// Unlike HAProxy, refused requests are not counted. The comparison is
// exact integer arithmetic at nanosecond resolution, so rounding never
// admits a unit above r.N.
//
// # Error against the exact log
//
// Each aligned window holds at most r.N units, and at most r.N−1 when the
// window before it holds any, because the previous window's weight reaches
// 0 only at the boundary. So no trailing window of length r.Per ever holds
// more than 2·r.N−1 units, where [SlidingLog] holds at most r.N.
//
// On evenly spread traffic, one request every r.Per/k:
//   - below the limit (k <= r.N−1) it admits every request, as the log does;
//   - above it (k >= r.N+1) it settles at r.N−1 units per aligned window
//     (one every other window when r.N = 1), a throughput of (r.N−1)/r.N of
//     the log's;
//   - from the third window after the traffic starts, no trailing window
//     holds more than r.N;
//   - in the first two windows after an idle period it can overshoot. The
//     first window takes r.N at once. The next weighs them as if spread
//     over the whole window. So a trailing window can hold up to r.N +
//     ⌊φ·r.N⌋ + 1 units. φ is the fraction of its window that had passed
//     at the first request.
//
// Windows are aligned as for [FixedWindow]. Bookings never go back to an
// earlier window than the latest one booked. Cancelling gives the units
// back to the window they were booked in, as for [FixedWindow]:
// reservations cancelled latest first leave the limiter exactly as before
// them, and units given back to a window no longer tracked stay counted.
//
// The Limit carries a [*ConfigError] naming "Rate.N" (not positive, or
// above 4294967295) or "Rate.Per" (not positive, or over about 146 years:
// see [Rate]).
func SlidingCounter(r Rate) Limit {
	if err := r.validate("Rate"); err != nil {
		return newLimit(nil, err)
	}
	if int64(r.N) > math.MaxUint32 {
		return newLimit(nil, configErr("Rate.N", r.N, "must be at most 4294967295 for a sliding counter"))
	}
	return newLimit(&slidingCounter{newWindow(throttle.SlidingCounter, r)}, nil)
}

// slidingCounter is the algorithm. cell.a is the index of the window last
// booked ("current") and cell.b packs the units booked in it (low 32 bits)
// and in the window before it (high 32 bits).
type slidingCounter struct{ window } // n is at most math.MaxUint32

var _ algorithm = (*slidingCounter)(nil)

func unpackCounts(b int64) (prev, cur int64) {
	return int64(uint64(b) >> 32), int64(uint32(b))
}

func packCounts(prev, cur int64) int64 { return int64(uint64(prev)<<32 | uint64(cur)) }

// counts returns the previous and current windows' counts as seen from
// window w >= c.a.
func (s *slidingCounter) counts(c *cell, w int64) (prev, cur int64) {
	prev, cur = unpackCounts(c.b)
	switch {
	case w == c.a+1:
		return cur, 0
	case w > c.a+1:
		return 0, 0
	}
	return prev, cur
}

// firstFit returns the smallest offset e into a window whose counts are
// prev and cur at which n more units fit: prev·(per−e)/per + cur + n <= N.
// It returns per when they fit nowhere in the window. Solving for e gives
// e >= per − ⌊room·per/prev⌋ with room = N − cur − n. The product is taken
// in 128 bits, so the answer is exact.
func (s *slidingCounter) firstFit(prev, cur int64, n int) int64 {
	room := s.n - cur - int64(n)
	switch {
	case room < 0:
		return s.per
	case prev <= room:
		return 0
	}
	// room < prev, so the quotient is below per and Div64 cannot overflow.
	hi, lo := bits.Mul64(uint64(room), uint64(s.per))
	q, _ := bits.Div64(hi, lo, uint64(prev))
	return s.per - int64(q)
}

// fitsAt reports whether n more units fit at offset e into a window whose
// counts are prev and cur: prev·(per−e) <= (N−cur−n)·per, compared in 128
// bits.
func (s *slidingCounter) fitsAt(prev, cur int64, n int, e int64) bool {
	room := s.n - cur - int64(n)
	switch {
	case room < 0:
		return false
	case prev <= room:
		return true
	}
	hi1, lo1 := bits.Mul64(uint64(prev), uint64(s.per-e))
	hi2, lo2 := bits.Mul64(uint64(room), uint64(s.per))
	return hi1 < hi2 || (hi1 == hi2 && lo1 <= lo2)
}

// earliest looks in the window of max(now, start of the window last
// booked), then the next, then the one after, which is always free.
func (s *slidingCounter) earliest(c *cell, now int64, n int) (int64, error) {
	if err := winCheck(n, s.n); err != nil {
		return 0, err
	}
	t := now
	if booked, _ := winStart(c.a, s.per); t < booked {
		t = booked // c.a came from a booked instant, so its start fits in int64
	}
	w := winIndex(t, s.per)
	start := w * s.per
	prev, cur := s.counts(c, w)
	if s.fitsAt(prev, cur, n, t-start) {
		return t, nil // the common case, without a division
	}
	if e := max(t-start, s.firstFit(prev, cur, n)); e < s.per {
		return s.at(start, e)
	}
	next, ok := winAdd(start, s.per)
	if !ok {
		return 0, ErrWaitTooLong
	}
	if e := s.firstFit(cur, 0, n); e < s.per {
		return s.at(next, e)
	}
	return s.at(next, s.per)
}

// at returns start+e, or ErrWaitTooLong when that is past the end of int64
// time.
func (s *slidingCounter) at(start, e int64) (int64, error) {
	t, ok := winAdd(start, e)
	if !ok {
		return 0, ErrWaitTooLong
	}
	return t, nil
}

func (s *slidingCounter) book(c *cell, now, t int64, n int) {
	if t <= now {
		if c.x != nil { // past bookings recorded (backstate.go)
			dropBack(c)
		}
	}
	w := max(winIndex(t, s.per), c.a)
	before := words{c.a, c.b}
	prev, cur := s.counts(c, w)
	cur = min(cur+int64(n), math.MaxUint32)
	c.a, c.b = w, packCounts(prev, cur)
	if t > now && w > before.a { // it waited into a later window
		pushBack(c, before, t, n)
	}
}

// unbook gives the units back to the window they were booked in while it is
// still one of the two tracked. A booking that moved to a later window,
// cancelled while the cell is as it left it, brings back the state before
// it (popBack). Units of a window no longer tracked stay booked: stricter
// than before, never looser.
func (s *slidingCounter) unbook(c *cell, _, t int64, n int) {
	if popBack(c, t, n) {
		return
	}
	prev, cur := unpackCounts(c.b)
	switch winIndex(t, s.per) {
	case c.a:
		cur = max(0, cur-int64(n))
	case c.a - 1:
		prev = max(0, prev-int64(n))
	default:
		return
	}
	c.b = packCounts(prev, cur)
}

func (s *slidingCounter) idle(c *cell, now int64) bool {
	w := winIndex(now, s.per)
	return w-c.a >= 2 || (w >= c.a && c.b == 0)
}

func (s *slidingCounter) span() int64 { return winSpan(2, s.per) }

// standing is the sliding counter's quotaState at now: the room the
// estimate leaves at now, and the start of the first window from which
// neither count weighs.
func (s *slidingCounter) standing(c *cell, now int64) quotaState {
	q := quotaState{limit: s.n, window: s.per}
	w := winIndex(now, s.per)
	if w >= c.a {
		prev, cur := s.counts(c, w)
		q.remaining = s.room(prev, cur, now-w*s.per)
	}
	prev, cur := unpackCounts(c.b)
	whole := c.a // the first window whose estimate is zero
	switch {
	case cur > 0:
		whole = c.a + 2
	case prev > 0:
		whole = c.a + 1
	}
	q.reset = untilStart(whole, s.per, now)
	return q
}

// room returns the largest n >= 0 with prev·(per−e) <= (N−cur−n)·per: the
// units that fit at offset e into a window whose counts are prev and cur.
// It is ⌊((N−cur)·per − prev·(per−e))/per⌋, computed in 128 bits.
func (s *slidingCounter) room(prev, cur, e int64) int64 {
	avail := s.n - cur
	if avail <= 0 {
		return 0
	}
	ahi, alo := bits.Mul64(uint64(avail), uint64(s.per))
	phi, plo := bits.Mul64(uint64(prev), uint64(s.per-e))
	if phi > ahi || (phi == ahi && plo > alo) {
		return 0
	}
	lo, borrow := bits.Sub64(alo, plo, 0)
	hi, _ := bits.Sub64(ahi, phi, borrow)
	// The quotient is at most avail < 2^33, so hi < per and Div64 is safe.
	n, _ := bits.Div64(hi, lo, uint64(s.per))
	return int64(n)
}

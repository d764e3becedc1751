package pace

import (
	"fmt"
	"math"
	"sort"

	"github.com/pacehttp/pace/throttle"
)

// SlidingLog returns a sliding-window-log Limit: never more than r.N units
// booked in any half-open window [t, t+r.Per), wherever t falls. It counts
// exactly: one entry per unit, no estimate. What it counts is the instants
// it books. That is the instant a call is admitted (AllowAt, ReserveAt's
// slot). In the [Transport] it is the instant the request was written to
// the wire: a request that leaves late has its entry moved to its
// departure. A refused or cancelled call is not counted. So "exact" is
// about pace's own departures. A server that counts arrivals sees them
// later by the network time, which varies. A server that also counts
// refused requests (HAProxy's sc_http_req_rate) counts more. It mirrors
// servers that count requests over a trailing window ("100 in any rolling
// minute"). It is the strictest reading of "N per period".
//
// It remembers the instant of every unit booked in the last r.Per, plus
// every unit reserved for later. That is 8 bytes per unit, up to 8·r.N
// bytes per key under a steady load (more while reservations wait further
// ahead). The memory is allocated on the first booking and grows as
// needed. A key whose window has emptied is idle and can be forgotten. So
// r.N is capped at 1<<20 (1,048,576), 8 MiB per key at most under a steady
// load. One call books at most r.N units. For larger counts, or little
// memory, [SlidingCounter] keeps two counters per key instead.
//
// Bookings are kept in time order. A call never books before the latest
// booking, so a reservation that waits makes later calls wait behind it. A
// request refused or cancelled costs nothing.
//
// The Limit carries a [*ConfigError] naming "Rate.N" or "Rate.Per" when
// either is not positive, N is over 1<<20, or Per is over about 146 years
// (see [Rate]).
func SlidingLog(r Rate) Limit {
	if err := r.validate("Rate"); err != nil {
		return newLimit(nil, err)
	}
	if r.N > maxSlidingLogN {
		return newLimit(nil, configErr("Rate.N", r.N, fmt.Sprintf(
			"exceeds %d, the most a sliding log counts (8 bytes per unit per key); SlidingCounter has no such cap", maxSlidingLogN)))
	}
	return newLimit(&slidingLog{newWindow(throttle.SlidingLog, r)}, nil)
}

// maxSlidingLogN is the largest r.N of a sliding log. Its log holds one
// 8-byte entry per unit. So a key's log stays within 8 MiB under a steady
// load, and one call (n <= r.N) allocates no more than that.
const maxSlidingLogN = 1 << 20

// slidingLog is the algorithm. cell.x.log is a ring buffer of booked
// instants in non-decreasing order (cell.x.head is the oldest, cell.x.count
// the number in use), one entry per unit. cell.a is the latest now at which
// anything was booked: entries at or before cell.a−per can never count
// again, because no booking is made before cell.a, so book drops them.
type slidingLog struct{ window }

var _ algorithm = (*slidingLog)(nil)

// logAt returns the i-th oldest entry of x's ring.
func logAt(x *cellExt, i int) int64 { return x.log[(x.head+i)%len(x.log)] }

// earliest returns the first t >= now, not before the latest booking nor
// the latest booking's now, at which n more units leave at most N in
// (t−per, t]. With the entries sorted b_1 <= … <= b_m that is
// t >= b_{m−N+n} + per.
func (s *slidingLog) earliest(c *cell, now int64, n int) (int64, error) {
	if err := winCheck(n, s.n); err != nil {
		return 0, err
	}
	t := max(now, c.a)
	x := c.x
	if x == nil || x.count == 0 {
		return t, nil
	}
	t = max(t, logAt(x, x.count-1))
	if k := int64(x.count) - s.n + int64(n); k > 0 {
		free, ok := winAdd(logAt(x, int(k-1)), s.per)
		if !ok {
			return 0, ErrWaitTooLong
		}
		t = max(t, free)
	}
	return t, nil
}

// book appends n entries at t, first dropping entries that can never count
// again.
func (s *slidingLog) book(c *cell, now, t int64, n int) {
	c.a = max(c.a, now)
	if c.x == nil {
		c.x = &cellExt{}
	}
	x := c.x
	for x.count > 0 && logAt(x, 0) <= c.a-s.per {
		x.head = (x.head + 1) % len(x.log)
		x.count--
	}
	if x.count == 0 {
		x.head = 0
	}
	if need := x.count + n; need > len(x.log) {
		s.grow(x, need)
	}
	for range n {
		x.log[(x.head+x.count)%len(x.log)] = t
		x.count++
	}
}

// grow enlarges x's ring to hold at least need entries, doubling so that a
// key settles at its peak size after a few bookings.
func (s *slidingLog) grow(x *cellExt, need int) {
	size := max(need, 2*len(x.log), 4)
	if limit := int(s.n); size > limit && need <= limit {
		size = limit // a steady load never holds more than N entries
	}
	log := make([]int64, size)
	for i := range x.count {
		log[i] = logAt(x, i)
	}
	x.log, x.head = log, 0
}

// unbook removes up to n entries equal to t, searching from the newest, and
// closes the gap so the ring stays in order. Entries already dropped (their
// window has passed) are not given back.
func (s *slidingLog) unbook(c *cell, _, t int64, n int) {
	x := c.x
	if x == nil {
		return
	}
	hi := x.count - 1
	for hi >= 0 && logAt(x, hi) > t {
		hi--
	}
	lo := hi
	for lo >= 0 && hi-lo < n && logAt(x, lo) == t {
		lo--
	}
	removed := hi - lo
	if removed == 0 {
		return
	}
	for i := hi + 1; i < x.count; i++ {
		x.log[(x.head+i-removed)%len(x.log)] = logAt(x, i)
	}
	x.count -= removed
}

// depart counts the unit in the window where it left instead of where it
// was booked, keeping the log sorted.
func (s *slidingLog) depart(c *cell, now, t, left int64) {
	s.unbook(c, now, t, 1)
	s.book(c, now, left, 1)
	// Requests booked after this one may have left before it did: keep the
	// ring in order by moving the new entry back past any later ones.
	x := c.x
	for k := x.count - 1; k > 0; k-- {
		i, j := (x.head+k-1)%len(x.log), (x.head+k)%len(x.log)
		if x.log[i] <= x.log[j] {
			break
		}
		x.log[i], x.log[j] = x.log[j], x.log[i]
	}
}

func (s *slidingLog) idle(c *cell, now int64) bool {
	if c.a > now {
		return false
	}
	x := c.x
	return x == nil || x.count == 0 || logAt(x, x.count-1) <= now-s.per
}

// standing is the sliding log's quotaState at now: nothing fits before the
// latest booking or its now (c.a); after them, N minus the entries in
// (now−per, now].
func (s *slidingLog) standing(c *cell, now int64) quotaState {
	q := quotaState{limit: s.n, window: s.per, reset: c.a - now}
	x := c.x
	if x == nil || x.count == 0 {
		if now >= c.a {
			q.remaining = s.n
		}
		return q
	}
	newest := logAt(x, x.count-1)
	if end, ok := winAdd(newest, s.per); !ok {
		q.reset = math.MaxInt64
	} else {
		q.reset = max(q.reset, end-now)
	}
	if now < c.a || now < newest {
		return q
	}
	// The entries are sorted: the first one inside the window starts them.
	in := x.count - sort.Search(x.count, func(i int) bool { return logAt(x, i) > now-s.per })
	q.remaining = max(s.n-int64(in), 0)
	return q
}

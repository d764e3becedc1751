package pace

import (
	"errors"
	"math"
	"math/bits"
	"sort"
	"time"
)

// Quota is where one key stands under its limit at one instant, in the
// terms of a quota API and of the IETF RateLimit header fields
// (draft-ietf-httpapi-ratelimit-headers-11: q and w of RateLimit-Policy
// §3.1, r and t of RateLimit §4.1). [Keyed.QuotaAt] and [Keyed.AdmitAt]
// return it. Durations are exact, not rounded to seconds.
//
// What Limit, Window, Remaining and Reset mean for each limit:
//
//   - [Bucket](r, burst): burst; burst·r.Interval(), the time to refill
//     from empty; the whole tokens, ⌊tokens⌋; the time until the bucket is
//     full.
//   - [LeakyWith](r, o): o.Slack+1; (o.Slack+1)·r.Interval(); the slots
//     free now; the time until the pacer is idle. The queue is not part of
//     the quota: Remaining counts what may go at once, and a queued caller
//     waits.
//   - [Fixed](r): r.N; r.Per; r.N minus the units booked in the current
//     window; the time until that window ends (0 when nothing was booked in
//     it).
//   - [Sliding](r): r.N; r.Per; r.N minus the units booked in
//     (now−r.Per, now]; the time until the newest booking leaves the window.
//   - [SlidingApprox](r): r.N; r.Per; the room the estimate leaves,
//     ⌊r.N − cur − prev·(1 − e/r.Per)⌋ with cur and prev the current and
//     previous windows' counts and e the time into the current window; the
//     time until neither count weighs in the estimate (the end of the next
//     window when the current one holds units).
//   - [All](…): the tightest part's Limit and Window, the tightest part
//     being the one with the fewest Remaining (the first on ties); the
//     smallest Remaining of the parts; the longest Reset. Parts lists every
//     part's own Quota.
//
// Whatever the limit, Remaining is exact: that many calls of one unit
// succeed at that instant and the next is refused. Wait is 0 exactly when
// Remaining is positive, and otherwise the delay a reservation of one unit
// would get. While a key is paused ([Keyed.PauseUntil]) Remaining is 0 and
// Reset and Wait last at least until the pause ends.
type Quota struct {
	// Limit is the most units the limit lets through at once from a fresh
	// state (the quota q, draft §3.1.1). 0 means no limit.
	Limit int

	// Window is the time over which the limit allows Limit units (the
	// window w, draft §3.1.3).
	Window time.Duration

	// Remaining is how many units may be taken now without waiting (the
	// available quota r, draft §4.1.1). It is never negative.
	Remaining int

	// Reset is how long until Remaining is back to Limit if nothing more is
	// booked; 0 when it already is.
	Reset time.Duration

	// Wait is how long until one more unit may be taken: 0 when Remaining
	// is positive, the delay a refused request would have needed otherwise.
	// A wait that cannot be represented is the largest Duration.
	Wait time.Duration

	// Parts holds the Quota of each part of a limit built by [All], in the
	// order of the parts; it is nil for every other limit.
	Parts []Quota
}

// quotaer is implemented by algorithms that can report a cell's standing
// directly. Algorithms that do not are measured by probeQuota.
type quotaer interface {
	// quota returns c's standing at now, which may be earlier than instants
	// recorded in c. It does not change c.
	quota(c *cell, now int64) quotaState
}

// quotaState is an algorithm's answer: Quota's first four fields, with
// durations in nanoseconds.
type quotaState struct {
	limit, remaining int64
	window, reset    int64
}

// quotaAt returns the Quota of c at now for a caller that may not start
// before from (>= now; from > now while the key is paused).
func quotaAt(alg algorithm, c *cell, now, from int64) Quota {
	if m, ok := alg.(*composite); ok {
		return m.quotaAt(c, now, from)
	}
	var s quotaState
	if qa, ok := alg.(quotaer); ok {
		s = qa.quota(c, now)
	} else {
		s = probeQuota(alg, c, now)
	}
	q := Quota{
		Limit:     int(s.limit),
		Window:    time.Duration(s.window),
		Remaining: int(max(s.remaining, 0)),
		Reset:     time.Duration(max(s.reset, 0)),
	}
	if from > now {
		q.Remaining = 0
		q.Reset = max(q.Reset, time.Duration(from-now))
	}
	if q.Remaining == 0 {
		q.Wait = waitFor(alg, c, now, from)
	}
	return q
}

// waitFor returns how long after now one unit can be taken from c, not
// before from: what a reservation would wait if no queue bound refused it.
// A pacer's ErrQueueFull comes with the slot it would have granted, which
// inside a composite may still be too early for another part, so the search
// goes on from there; each step moves forward and never past the answer.
func waitFor(alg algorithm, c *cell, now, from int64) time.Duration {
	t := from
	for range 2 * compositeMaxCalls {
		u, err := alg.earliest(c, t, 1)
		switch {
		case err == nil:
			return time.Duration(max(u, t) - now)
		case errors.Is(err, ErrQueueFull) && u > t:
			t = u
		default: // no instant at all: beyond int64 time
			return math.MaxInt64
		}
	}
	return time.Duration(t - now)
}

// probeQuota measures any algorithm through earliest: Remaining by binary
// search over n (an algorithm that admits n units at an instant admits
// fewer), Reset bounded by the span when c is not idle.
func probeQuota(alg algorithm, c *cell, now int64) quotaState {
	fits := func(n int) bool {
		t, err := alg.earliest(c, now, n)
		return err == nil && t <= now
	}
	r := sort.Search(alg.maxN(), func(i int) bool { return !fits(i + 1) })
	s := quotaState{limit: int64(alg.maxN()), window: alg.span(), remaining: int64(r)}
	if !alg.idle(c, now) {
		s.reset = alg.span()
	}
	return s
}

// quota of the token bucket and the pacer. With TAT the instant the bucket
// is full again, n units fit at now when max(TAT−now, 0) + n·i <= C·i.
func (g *gcra) quota(c *cell, now int64) quotaState {
	backlog := max(c.a-now, 0)
	return quotaState{
		limit:     g.c,
		window:    g.tau,
		remaining: max(g.tau-backlog, 0) / g.i,
		reset:     backlog,
	}
}

// quota of the fixed window: the window that holds now, or the one booked
// ahead of it (then nothing fits until that window starts).
func (f *fixedWindow) quota(c *cell, now int64) quotaState {
	s := quotaState{limit: f.n, window: f.per}
	w := winIndex(now, f.per)
	switch {
	case w > c.a: // a fresh window
		s.remaining = f.n
	case w == c.a:
		s.remaining = f.n - c.b
		if c.b > 0 {
			s.reset = untilStart(c.a+1, f.per, now)
		}
	default: // booked ahead of now
		s.reset = untilStart(c.a, f.per, now)
		if c.b > 0 {
			s.reset = untilStart(c.a+1, f.per, now)
		}
	}
	return s
}

// untilStart returns the time from now to the start of window w,
// saturating when that start cannot be represented.
func untilStart(w, per, now int64) int64 {
	t, ok := winStart(w, per)
	if !ok {
		return math.MaxInt64
	}
	return t - now
}

// quota of the sliding log: nothing fits before the latest booking or its
// now (c.a); after them, N minus the entries in (now−per, now].
func (s *slidingLog) quota(c *cell, now int64) quotaState {
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

// quota of the sliding counter: the room the estimate leaves at now, and
// the start of the first window from which neither count weighs.
func (s *slidingCounter) quota(c *cell, now int64) quotaState {
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

// quotaAt of a composite: every part's Quota, the tightest part's limit,
// and the composite's own wait, which is at least every part's.
func (m *composite) quotaAt(c *cell, now, from int64) Quota {
	parts := make([]Quota, len(m.parts))
	var q Quota
	for i, p := range m.parts {
		pq := quotaAt(p, m.part(c, i), now, from)
		parts[i] = pq
		if i == 0 || pq.Remaining < q.Remaining {
			q.Limit, q.Window, q.Remaining = pq.Limit, pq.Window, pq.Remaining
		}
		q.Reset = max(q.Reset, pq.Reset)
	}
	if q.Remaining == 0 {
		q.Wait = waitFor(m, c, now, from)
	}
	q.Parts = parts
	return q
}

package pace

import (
	"errors"
	"math"
	"time"
)

// Quota is where one key stands under its limit at one instant. It uses
// the terms of a quota API and of the IETF RateLimit header fields
// (draft-ietf-httpapi-ratelimit-headers-11: q and w of RateLimit-Policy
// §3.1, r and t of RateLimit §4.1). [Keyed.QuotaAt] and [Keyed.AdmitAt]
// return it. Durations are exact, not rounded to seconds.
//
// What Limit, Window, Remaining and Reset mean for each limit:
//
//   - [TokenBucket](r, burst): burst; burst·r.Interval(), the time to refill
//     from empty; the whole tokens, ⌊tokens⌋; the time until the bucket is
//     full.
//   - [LeakyBucket](r, o): o.Slack+1; (o.Slack+1)·r.Interval(); the slots
//     free now; the time until the pacer is idle. The queue is not part of
//     the quota: Remaining counts what may go at once, and a queued caller
//     waits.
//   - [FixedWindow](r): r.N; r.Per; r.N minus the units booked in the current
//     window; the time until that window ends (0 when nothing was booked in
//     it).
//   - [SlidingLog](r): r.N; r.Per; r.N minus the units booked in
//     (now−r.Per, now]; the time until the newest booking leaves the window.
//   - [SlidingCounter](r): r.N; r.Per; the room the estimate leaves,
//     ⌊r.N − cur − prev·(1 − e/r.Per)⌋; the time until neither count weighs
//     in the estimate. cur and prev are the current and previous windows'
//     counts, and e the time into the current window. When the current
//     window holds units, the reset is the end of the next window.
//   - [All](…): the tightest part's Limit and Window; the smallest
//     Remaining of the parts; the longest Reset. The tightest part is the
//     one with the fewest Remaining (the first on ties). Parts lists every
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

// quotaState is an algorithm's answer: Quota's first four fields, with
// durations in nanoseconds.
type quotaState struct {
	limit, remaining int64
	window, reset    int64
}

// quotaAt returns the Quota of c under alg at now for a caller that may not
// start before from (>= now; from > now while the key is paused).
// A composite's Quota is its tightest part's, with every part's in Parts.
func quotaAt(alg algorithm, c *cell, now, from int64) Quota {
	q := finishQuota(alg, c, alg.standing(c, now), now, from)
	if m, ok := alg.(*composite); ok {
		q.Parts = make([]Quota, len(m.list))
		for i, p := range m.list {
			q.Parts[i] = quotaAt(p, m.part(c, i), now, from)
		}
	}
	return q
}

// finishQuota turns the standing s of c under alg at now into a Quota for
// a caller that may not start before from. A pause empties Remaining and
// lasts into Reset. An empty quota says how long the wait is.
func finishQuota(alg algorithm, c *cell, s quotaState, now, from int64) Quota {
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
// A pacer's ErrQueueFull comes with the slot it would have granted. Inside
// a composite that may still be too early for another part, so the search
// goes on from there. Each step moves forward and never past the answer.
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

// QuotaAt returns where the Shaper stands at now (see [Quota] for what each
// field means for each algorithm). It changes nothing. Safe for concurrent
// use.
func (s *Shaper) QuotaAt(now time.Time) Quota {
	s.mustInit()
	at := sinceEpoch(s.epoch, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	return quotaAt(s.alg, &s.c, at, at)
}

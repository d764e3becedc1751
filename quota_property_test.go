package pace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

// quotaSchedules is the number of random schedules per limit kind.
const quotaSchedules = 2_000

// quotaKinds are the limits whose Quota the property test checks, on small
// rates so that schedules cross many windows and refills.
var quotaKinds = []struct {
	name  string
	limit func(rng *rand.Rand) Limit
}{
	{"token bucket", func(rng *rand.Rand) Limit { return TokenBucket(winRandomRate(rng), 1+rng.IntN(6)) }},
	{"leaky bucket", func(rng *rand.Rand) Limit {
		return LeakyBucket(winRandomRate(rng), LeakyOptions{Queue: rng.IntN(4), Slack: rng.IntN(4)})
	}},
	{"fixed window", func(rng *rand.Rand) Limit { return FixedWindow(winRandomRate(rng)) }},
	{"sliding log", func(rng *rand.Rand) Limit { return SlidingLog(winRandomRate(rng)) }},
	{"sliding counter", func(rng *rand.Rand) Limit { return SlidingCounter(winRandomRate(rng)) }},
}

// randomQuotaLimit returns a limit of kind i, or All of two or three random
// kinds when i is len(quotaKinds).
func randomQuotaLimit(rng *rand.Rand, i int) Limit {
	if i < len(quotaKinds) {
		return quotaKinds[i].limit(rng)
	}
	var parts []Limit
	for range 2 + rng.IntN(2) {
		parts = append(parts, quotaKinds[rng.IntN(len(quotaKinds))].limit(rng))
	}
	return All(parts...)
}

// TestQuotaProperties checks every limit's Quota against its own decisions
// on random schedules of admissions, reservations ahead, cancels and clock
// steps (forward and back). After each operation:
//   - Remaining equals what earliest admits at once (probeQuota), and that
//     many single units in a row are admitted, the next one refused;
//   - Wait is 0 exactly when Remaining > 0; otherwise one unit is refused
//     at now+Wait−1ns and admitted at now+Wait;
//   - at now+Reset every part is whole (Remaining == Limit), and 1ns earlier
//     one is not;
//   - Remaining single units sent at any later instants are all admitted
//     (what the middleware's RateLimit field promises a client).
func TestQuotaProperties(t *testing.T) {
	for i := range len(quotaKinds) + 1 {
		name := "all"
		if i < len(quotaKinds) {
			name = quotaKinds[i].name
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(20250601, uint64(i)))
			for s := range quotaSchedules {
				l := randomQuotaLimit(rng, i)
				if l.err != nil {
					t.Fatalf("limit: %v", l.err)
				}
				if err := runQuotaSchedule(rng, l.alg, 20); err != nil {
					t.Fatalf("schedule %d, %v: %v", s, l, err)
				}
			}
		})
	}
}

// runQuotaSchedule drives one cell of alg through ops random operations and
// checks its Quota after each.
func runQuotaSchedule(rng *rand.Rand, alg algorithm, ops int) error {
	span := max(alg.span(), 8)
	var (
		c      cell
		now    = 1 + rng.Int64N(4*span)
		booked []Reservation
	)
	for op := range ops {
		switch r := rng.IntN(10); {
		case r < 4: // admissions at now
			for range 1 + rng.IntN(3) {
				n := 1 + rng.IntN(alg.maxN())
				if t, err := alg.earliest(&c, now, n); err == nil && t <= now {
					alg.book(&c, now, now, n)
				}
			}
		case r < 6: // a reservation, maybe ahead of now
			res, err := reserveCell(alg, &c, now, 1+rng.IntN(alg.maxN()), 0)
			if err == nil {
				booked = append(booked, res)
			}
		case r < 7 && len(booked) > 0: // cancel one
			j := rng.IntN(len(booked))
			alg.unbook(&c, now, booked[j].at, booked[j].n)
			booked = slices.Delete(booked, j, j+1)
		case r < 9: // time passes
			now += 1 + rng.Int64N(span)
		default: // the clock steps back, or a little forward
			now = max(1, now+rng.Int64N(span)-span/2)
		}
		if err := checkQuota(rng, alg, &c, now); err != nil {
			return fmt.Errorf("op %d at %d: %w", op, now, err)
		}
	}
	return nil
}

// checkQuota checks the Quota of c at now against alg's decisions.
func checkQuota(rng *rand.Rand, alg algorithm, c *cell, now int64) error {
	q := quotaAt(alg, c, now, now)
	if probe := probeQuota(alg, c, now); int64(q.Remaining) != probe.remaining {
		return fmt.Errorf("Remaining = %d, but %d units fit at once", q.Remaining, probe.remaining)
	}
	if q.Remaining < 0 || q.Remaining > q.Limit {
		return fmt.Errorf("Remaining = %d, want within [0, Limit %d]", q.Remaining, q.Limit)
	}
	if (q.Wait == 0) != (q.Remaining > 0) {
		return fmt.Errorf("Wait = %v with Remaining %d", q.Wait, q.Remaining)
	}
	if got := takeSingles(alg, c, now); got != q.Remaining {
		return fmt.Errorf("%d single units admitted in a row, want Remaining = %d", got, q.Remaining)
	}
	if err := spreadSingles(rng, alg, c, now, q.Remaining); err != nil {
		return err
	}
	if q.Wait > 0 && q.Wait < math.MaxInt64 {
		w := now + int64(q.Wait)
		if fitsOne(alg, c, w-1) || !fitsOne(alg, c, w) {
			return fmt.Errorf("one unit fits at now+Wait−1 (%v) or not at now+Wait (%v), Wait %v",
				fitsOne(alg, c, w-1), fitsOne(alg, c, w), q.Wait)
		}
	}
	if q.Reset < math.MaxInt64 {
		r := now + int64(q.Reset)
		if !whole(alg, c, r) {
			return fmt.Errorf("not whole at now+Reset (Reset %v): %+v", q.Reset, quotaAt(alg, c, r, r))
		}
		if q.Reset > 0 && whole(alg, c, r-1) {
			return fmt.Errorf("already whole at now+Reset−1 (Reset %v)", q.Reset)
		}
	}
	return nil
}

// fitsOne reports whether one unit can be taken from c at now.
func fitsOne(alg algorithm, c *cell, now int64) bool {
	t, err := alg.earliest(c, now, 1)
	return err == nil && t <= now
}

// whole reports whether every part of c has its whole limit at now.
func whole(alg algorithm, c *cell, now int64) bool {
	q := quotaAt(alg, c, now, now)
	for _, p := range q.Parts {
		if p.Remaining != p.Limit {
			return false
		}
	}
	return q.Remaining == q.Limit
}

// takeSingles books single units in a copy of c at now until one is
// refused, and returns how many were booked.
func takeSingles(alg algorithm, c *cell, now int64) int {
	d := cloneCell(c)
	n := 0
	for n <= alg.maxN() && fitsOne(alg, &d, now) {
		alg.book(&d, now, now, 1)
		n++
	}
	return n
}

// spreadSingles books n single units in a copy of c at random instants from
// now on, in time order, and fails if one is refused.
func spreadSingles(rng *rand.Rand, alg algorithm, c *cell, now int64, n int) error {
	d := cloneCell(c)
	span := max(alg.span(), 8)
	for i := range n {
		now += rng.Int64N(span / 2)
		if !fitsOne(alg, &d, now) {
			return fmt.Errorf("unit %d of Remaining %d refused at %d, spread over later instants", i+1, n, now)
		}
		alg.book(&d, now, now, 1)
	}
	return nil
}

// cloneCell returns a deep copy of c.
func cloneCell(c *cell) cell {
	d := cell{a: c.a, b: c.b}
	if c.x != nil {
		x := *c.x
		x.log = slices.Clone(c.x.log)
		if c.x.parts != nil {
			x.parts = make([]cell, len(c.x.parts))
			for i := range c.x.parts {
				x.parts[i] = cloneCell(&c.x.parts[i])
			}
		}
		d.x = &x
	}
	return d
}

// TestProbeQuota checks the fallback for algorithms without a quota method
// against the token bucket's own.
func TestProbeQuota(t *testing.T) {
	alg := TokenBucket(PerSecond(10), 5).alg
	var c cell
	now := int64(time.Hour)
	for range 3 {
		alg.book(&c, now, now, 1)
	}
	want := quotaState{limit: 5, window: int64(500 * time.Millisecond), remaining: 2, reset: int64(500 * time.Millisecond)}
	if got := probeQuota(alg, &c, now); got != want {
		t.Errorf("probeQuota = %+v, want %+v (Reset bounded by the span)", got, want)
	}
	if got := probeQuota(alg, &cell{}, now); got.remaining != 5 || got.reset != 0 {
		t.Errorf("probeQuota of a fresh cell = %+v, want Remaining 5, Reset 0", got)
	}
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

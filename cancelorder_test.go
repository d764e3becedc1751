package pace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCancelOutOfOrderKeepsPromise: reservations cancelled in any order
// never let a limit admit more than it promises, although cancelling
// latest first restores it exactly (backstate.go). In each case a
// reservation waits into a later window (or, in All, a token bucket is
// booked past its own slot), another is booked at the same instant, the
// first is cancelled, and a third of another size leaves the cell as the
// first had: cancelling the second must not bring back the state before
// the first and forget the third. An adversarial review found 4 units in a
// fixed window of 3, 6 at once through a bucket of burst 5, and 5 in a
// sliding counter's window of 4, before the record named its booking's size
// and dropped itself when something booked before it was cancelled.
func TestCancelOutOfOrderKeepsPromise(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 100_000_000, time.UTC)
	for name, tt := range map[string]struct {
		l   Limit
		max int // units the promise allows at one instant of the later window
	}{
		"fixed window 3/s":                {FixedWindow(Rate{N: 3, Per: time.Second}), 3},
		"all of a window 5/s, a bucket 5": {All(FixedWindow(Rate{N: 5, Per: time.Second}), TokenBucket(PerSecond(10), 5)), 5},
	} {
		t.Run(name, func(t *testing.T) {
			for _, keyed := range []bool{false, true} {
				reserve, cancel, allow := shaperOrKeyed(t, tt.l, keyed)
				for allow(now, 1) {
				}
				a := reserve(now, 2) // waits past the current window: a record
				b := reserve(now, 1)
				cancel(now, a)
				c := reserve(now, 1) // the cell is as a left it
				require.Equal(t, a.Delay, c.Delay)
				cancel(now, b) // must not bring back the state before a: c is held
				at, got := now.Add(c.Delay), 1
				for allow(at, 1) {
					got++
				}
				require.LessOrEqual(t, got, tt.max, "units at %v, keyed %v", at, keyed)
			}
		})
	}
	t.Run("sliding counter 4/834ns", func(t *testing.T) {
		r := Rate{N: 4, Per: 834}
		d := newWinDriver(SlidingCounter(r).alg, counterPromise(r), 4192)
		cancel := func(i int) { d.l.CancelAt(d.time(), d.books[i].r); d.books[i].cancelled = true }
		require.NoError(t, d.reserve(3, 0))
		require.NoError(t, d.reserve(2, 0))
		require.NoError(t, d.reserve(1, 0))
		cancel(1)
		require.NoError(t, d.reserve(1, 0)) // at books[1]'s instant, the counts as it left them
		cancel(3)
		require.NoError(t, d.reserve(3, 0))
		cancel(2)
		require.NoError(t, d.reserve(2, 0), "the promise holds")
	})
}

// shaperOrKeyed returns ReserveAt, CancelAt and AllowAt of a Shaper of l,
// or of a Keyed's key "k".
func shaperOrKeyed(t *testing.T, l Limit, keyed bool) (reserve func(time.Time, int) Reservation, cancel func(time.Time, Reservation), allow func(time.Time, int) bool) {
	t.Helper()
	if keyed {
		k, err := NewKeyed(l, KeyedOptions{})
		require.NoError(t, err)
		return func(now time.Time, n int) Reservation {
				r, err := k.ReserveAt(now, "k", n, 0)
				require.NoError(t, err)
				return r
			}, func(now time.Time, r Reservation) { k.CancelAt(now, "k", r) },
			func(now time.Time, n int) bool { return k.AllowAt(now, "k", n) }
	}
	s, err := NewShaper(l)
	require.NoError(t, err)
	return func(now time.Time, n int) Reservation {
		r, err := s.ReserveAt(now, n, 0)
		require.NoError(t, err)
		return r
	}, s.CancelAt, s.AllowAt
}

// TestCancelAnyOrderProperty: random schedules of allows, reservations of
// random sizes, cancels in random order and steps of the clock, through a
// window limit, a token bucket or a pacer, alone or two in All, never put
// more units anywhere than each part promises: N per window (as each
// window kind states it), burst + ⌊d/interval⌋ in any span d of a bucket.
func TestCancelAnyOrderProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for s := range 20000 {
		var parts []Limit
		var promises []winPromise
		scale := Rate{N: 1 << 30}
		for j := range 1 + s%2 {
			l, p, r := randomWindow(rng)
			if (s/2+j)%2 == 0 {
				l, p, r = randomBucket(rng)
			}
			parts, promises = append(parts, l), append(promises, p)
			scale.N, scale.Per = min(scale.N, r.N), max(scale.Per, r.Per)
		}
		l := All(parts...)
		d := newWinDriver(l.alg, allPromises(promises...), 1+rng.Int64N(10*int64(scale.Per)))
		if err := randomSchedule(rng, d, scale, 20+rng.IntN(60)); err != nil {
			t.Fatalf("schedule %d, %v: %v", s, l, err)
		}
	}
}

// bucketPromise checks that no span [x, y] of the bookings holds more than
// capacity + ⌊(y−x)/interval⌋ units.
func bucketPromise(capacity, interval int64) winPromise {
	return func(books []winBooking, _ int64) error {
		var ts []int64
		for _, b := range books {
			for range b.n {
				ts = append(ts, b.at)
			}
		}
		slices.Sort(ts)
		for i := range ts {
			for j := i; j < len(ts); j++ {
				if int64(j-i+1) > capacity+(ts[j]-ts[i])/interval {
					return fmt.Errorf("bucket of %d every %d ns: %d units in [%d, %d]", capacity, interval, j-i+1, ts[i], ts[j])
				}
			}
		}
		return nil
	}
}

func randomWindow(rng *rand.Rand) (Limit, winPromise, Rate) {
	k := windowKinds[rng.IntN(len(windowKinds))]
	r := Rate{N: 1 + rng.IntN(5), Per: time.Duration(100 + rng.IntN(1000))}
	return k.limit(r), k.check(r), r
}

func randomBucket(rng *rand.Rand) (Limit, winPromise, Rate) {
	iv := int64(10 + rng.IntN(300))
	r := Rate{N: 1, Per: time.Duration(iv)}
	if rng.IntN(2) == 0 {
		return LeakyBucket(r, LeakyOptions{}), bucketPromise(1, iv), r
	}
	burst := 1 + rng.IntN(5)
	return TokenBucket(r, burst), bucketPromise(int64(burst), iv), Rate{N: burst, Per: time.Duration(iv * int64(burst))}
}

// randomSchedule runs ops random operations on d, sizes up to r.N.
func randomSchedule(rng *rand.Rand, d *winDriver, r Rate, ops int) error {
	per := int64(r.Per)
	for i := range ops {
		var err error
		switch rng.IntN(10) {
		case 0:
			d.step(rng.Int64N(per/2 + 1))
		case 1, 2:
			err = d.allow(1 + rng.IntN(r.N))
		case 3, 4, 5, 6:
			err = d.reserve(1+rng.IntN(r.N), 0)
		case 7, 8:
			d.cancel(rng.IntN(100))
		case 9:
			d.step(int64(rng.IntN(3)))
		}
		if err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	return nil
}

package pace

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// winPropertySchedules is the number of random schedules per limit kind.
const winPropertySchedules = 10_000

// winRandomRate returns a small rate, so that schedules cross many windows.
func winRandomRate(rng *rand.Rand) Rate {
	return Rate{N: 1 + rng.IntN(5), Per: time.Duration(8 + rng.IntN(4000))}
}

// winRunSchedule drives d through ops random operations: AllowAt and ReserveAt
// with counts mostly valid and sometimes 0 or N+1, reservations with and
// without a longest wait, cancels of pending reservations, and the clock
// moving forward (by up to four windows, or a few nanoseconds) and back (by
// up to two windows).
func winRunSchedule(rng *rand.Rand, d *winDriver, r Rate, ops int) error {
	for i := range ops {
		if err := d.run(byte(rng.Uint32()), byte(rng.Uint32()), r); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	return nil
}

// TestWindowProperties checks each window limit's promise on random
// schedules: the fixed window never holds more than N units in an aligned
// window, the sliding log never more than N in any window [t, t+Per), and
// the sliding counter never more than N in an aligned window nor 2N−1 in any
// window [t, t+Per); an idle cell always decides like a fresh one.
func TestWindowProperties(t *testing.T) {
	for i, k := range windowKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(20250301, uint64(i)))
			for s := range winPropertySchedules {
				r := winRandomRate(rng)
				d := newWinDriver(k.limit(r).alg, k.check(r), 1+rng.Int64N(10*int64(r.Per)))
				if err := winRunSchedule(rng, d, r, 10+rng.IntN(40)); err != nil {
					t.Fatalf("schedule %d, %v: %v", s, r, err)
				}
			}
		})
	}
}

// randomComposite returns All of 1 to 3 random window limits, the promise
// of every part, and a rate to scale the schedule by.
func randomComposite(rng *rand.Rand) (Limit, winPromise, Rate) {
	var (
		limits   []Limit
		promises []winPromise
		scale    = Rate{N: 1 << 30}
	)
	for range 1 + rng.IntN(3) {
		k := windowKinds[rng.IntN(len(windowKinds))]
		r := winRandomRate(rng)
		limits = append(limits, k.limit(r))
		promises = append(promises, k.check(r))
		scale.N = min(scale.N, r.N)
		scale.Per = max(scale.Per, r.Per)
	}
	return All(limits...), allPromises(promises...), scale
}

// TestCompositeProperties checks on random schedules that a composite of
// window limits keeps every part's promise, and that an idle composite
// decides like a fresh one.
func TestCompositeProperties(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(20250301, 99))
	for s := range winPropertySchedules {
		l, p, r := randomComposite(rng)
		d := newWinDriver(l.alg, p, 1+rng.Int64N(10*int64(r.Per)))
		if err := winRunSchedule(rng, d, r, 10+rng.IntN(40)); err != nil {
			t.Fatalf("schedule %d, %v: %v", s, l, err)
		}
	}
}

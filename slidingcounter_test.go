package pace

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSlidingCounterAllowAt: 10 per 1s. At e into a window the estimate is
// prev·(1 − e/1s) + cur, and n units fit when estimate + n <= 10.
func TestSlidingCounterAllowAt(t *testing.T) {
	l, err := NewShaper(SlidingCounter(PerSecond(10)))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	runWinAllow(t, l, []winAllow{
		{0, 10, true},
		{0, 1, false},
		{999 * ms, 1, false},  // cur = 10
		{1000 * ms, 1, false}, // 10·1.0 + 0 + 1 = 11
		{1100 * ms, 1, true},  // 10·0.9 + 0 + 1 = 10
		{1100 * ms, 1, false}, // 9 + 1 + 1 = 11
		{1199 * ms, 1, false}, // 8.01 + 1 + 1 = 10.01
		{1200 * ms, 1, true},  // 8 + 1 + 1 = 10
		{1500 * ms, 3, true},  // 5 + 2 + 3 = 10
		{1500 * ms, 1, false},
		{2000 * ms, 5, true}, // prev = 5: 5 + 0 + 5 = 10
		{2000 * ms, 1, false},
		{3000 * ms, 5, true}, // prev = 5 again
		{3000 * ms, 1, false},
		{5000 * ms, 10, true}, // two windows later, all forgotten
	})
}

// TestSlidingCounterReserveAt: the earliest instant is found in this window,
// the next or the one after.
func TestSlidingCounterReserveAt(t *testing.T) {
	l, err := NewShaper(SlidingCounter(PerSecond(10)))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	runWinReserve(t, l, []winReserve{
		{0, 10, 0, nil},
		{500 * ms, 1, 600 * ms, nil},   // 10·(1 − e) + 0 + 1 <= 10 at e = 0.1: 1.1s
		{500 * ms, 1, 700 * ms, nil},   // 10·(1 − e) + 1 + 1 <= 10 at e = 0.2: 1.2s
		{500 * ms, 8, 1500 * ms, nil},  // nowhere in [1s, 2s); at 2s prev = 2: 2 + 8 <= 10
		{500 * ms, 10, 3500 * ms, nil}, // [2s, 3s) holds 8; at 3s prev = 8 > 0; free at 4s
		{500 * ms, 11, 0, ErrBurstExceeded},
		{500 * ms, 0, 0, ErrBadCount},
	})
}

// TestSlidingCounterNanosecond: the boundary is exact to the nanosecond,
// where float arithmetic would round. 3 per 1s, 3 booked at 0: one more fits
// at 1s + e when 3·(1s − e) <= 2·1s, i.e. e >= 333333333.33… ns, so at
// 1.333333334s and not 1ns earlier.
func TestSlidingCounterNanosecond(t *testing.T) {
	for _, tt := range []struct {
		at time.Duration
		ok bool
	}{
		{time.Second + 333_333_333, false},
		{time.Second + 333_333_334, true},
	} {
		l, err := NewShaper(SlidingCounter(PerSecond(3)))
		if err != nil {
			t.Fatal(err)
		}
		runWinAllow(t, l, []winAllow{{0, 3, true}, {tt.at, 1, tt.ok}})
	}
	l, err := NewShaper(SlidingCounter(PerSecond(3)))
	if err != nil {
		t.Fatal(err)
	}
	runWinReserve(t, l, []winReserve{{0, 3, 0, nil}, {0, 1, time.Second + 333_333_334, nil}})
}

// TestSlidingCounterFirstFit checks the integer solution and the fast fit
// test against exact rational arithmetic on random counts and periods, up to
// the largest ones.
func TestSlidingCounterFirstFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fits := func(s *slidingCounter, prev, cur int64, n int, e int64) bool {
		// prev·(per − e) <= (N − cur − n)·per, exactly.
		lhs := new(big.Int).Mul(big.NewInt(prev), big.NewInt(s.per-e))
		rhs := new(big.Int).Mul(big.NewInt(s.n-cur-int64(n)), big.NewInt(s.per))
		return lhs.Cmp(rhs) <= 0
	}
	for i := range 20_000 {
		var s slidingCounter
		if i%2 == 0 {
			s = slidingCounter{window{n: 1 + rng.Int64N(math.MaxUint32), per: 1 + rng.Int64N(math.MaxInt64)}}
		} else {
			s = slidingCounter{window{n: 1 + rng.Int64N(20), per: 1 + rng.Int64N(1000)}}
		}
		prev, cur := rng.Int64N(s.n+1), rng.Int64N(s.n+1)
		n := 1 + int(rng.Int64N(s.n))
		e := s.firstFit(prev, cur, n)
		switch {
		case e < 0 || e > s.per:
			t.Fatalf("%+v firstFit(%d, %d, %d) = %d, out of [0, per]", s, prev, cur, n, e)
		case e < s.per && !fits(&s, prev, cur, n, e):
			t.Fatalf("%+v firstFit(%d, %d, %d) = %d, which does not fit", s, prev, cur, n, e)
		case e > 0 && fits(&s, prev, cur, n, e-1):
			t.Fatalf("%+v firstFit(%d, %d, %d) = %d, but %d fits", s, prev, cur, n, e, e-1)
		}
		for _, at := range []int64{rng.Int64N(s.per), e, max(e-1, 0), s.per - 1} {
			if at < s.per && s.fitsAt(prev, cur, n, at) != fits(&s, prev, cur, n, at) {
				t.Fatalf("%+v fitsAt(%d, %d, %d, %d) = %v, want %v", s, prev, cur, n, at, !fits(&s, prev, cur, n, at), fits(&s, prev, cur, n, at))
			}
		}
	}
}

// TestSlidingCounterCancel: a reservation in the current window is given
// back exactly; one that waited into a later window leaves the limiter
// there, which only delays.
func TestSlidingCounterCancel(t *testing.T) {
	l, err := NewShaper(SlidingCounter(PerSecond(4)))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	rs := runWinReserve(t, l, []winReserve{{100 * ms, 3, 0, nil}})
	l.CancelAt(winAt(100*ms), rs[0])
	runWinAllow(t, l, []winAllow{{100 * ms, 4, true}, {100 * ms, 1, false}})

	rs = runWinReserve(t, l, []winReserve{{200 * ms, 2, 1300 * ms, nil}}) // at 1.5s: 4·0.5 + 0 + 2 = 4
	l.CancelAt(winAt(200*ms), rs[0])
	runWinReserve(t, l, []winReserve{{200 * ms, 2, 1300 * ms, nil}}) // the same slot again

	// A reservation whose window is no longer tracked gives nothing back:
	// booked at 0.1s, cancelled after bookings at 2.5s, it must not lower
	// the count of [2s, 3s)'s previous window.
	l2, err := NewShaper(SlidingCounter(PerSecond(4)))
	if err != nil {
		t.Fatal(err)
	}
	old := runWinReserve(t, l2, []winReserve{{100 * ms, 1, 0, nil}, {1500 * ms, 3, 0, nil}, {2500 * ms, 1, 0, nil}})
	before := l2.c
	l2.CancelAt(winAt(2500*ms), old[0])
	if l2.c != before {
		t.Errorf("cancelling a forgotten reservation changed the counts: %+v → %+v", before, l2.c)
	}
}

// TestSlidingCounterLargeN: counts up to 2^32−1 pack into one word.
func TestSlidingCounterLargeN(t *testing.T) {
	l, err := NewShaper(SlidingCounter(Rate{N: math.MaxUint32, Per: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	runWinAllow(t, l, []winAllow{
		{0, math.MaxUint32 - 1, true},
		{0, 1, true},
		{0, 1, false},
		{1500 * time.Millisecond, math.MaxUint32 / 2, true},
		{1500 * time.Millisecond, 2, false}, // (2^32−1)/2 + 2^31−1 + 2 > N
	})
	if err := SlidingCounter(Rate{N: math.MaxUint32 + 1, Per: time.Second}).Err(); err == nil {
		t.Errorf("SlidingCounter with N = 2^32 accepted")
	}
}

// trailing returns the most and the fewest units in any half-open window
// [s, s+per) with from <= s and s+per <= to, for sorted instants ts. The
// extremes are reached with s at an instant (most) or just after one
// (fewest), or at from.
func winTrailing(ts []int64, per, from, to int64) (most, fewest int) {
	fewest = math.MaxInt
	count := func(s int64) int {
		lo, _ := slices.BinarySearch(ts, s)
		hi, _ := slices.BinarySearch(ts, s+per)
		return hi - lo
	}
	starts := []int64{from}
	for _, x := range ts {
		starts = append(starts, x, x+1)
	}
	for _, s := range starts {
		if s < from || s+per > to {
			continue
		}
		c := count(s)
		most, fewest = max(most, c), min(fewest, c)
	}
	return most, fewest
}

// TestSlidingCounterErrorVsLog measures the counter against the exact log on
// evenly spread traffic, as SlidingCounter documents: requests every Per/k,
// for k from 1 to 3N+2 per window, starting from idle at 10 phases of a
// window, over 12 windows. It asserts:
//   - the log never has more than N in a trailing window;
//   - the counter never has more than N + ⌊φ·N⌋ + 1 (φ the fraction of the
//     window passed at the first request), nor 2N−1;
//   - from the third window on, the counter never has more than N;
//   - at k <= N−1 both admit every request;
//   - at k >= N+1, from the fourth window on, the counter admits exactly N−1
//     per aligned window (N = 1: one every other window), where the log
//     admits N.
func TestSlidingCounterErrorVsLog(t *testing.T) {
	const per = int64(time.Second)
	for _, N := range []int{1, 2, 3, 5, 10, 60} {
		var ks []int
		for k := 1; k <= 3*N+2; k++ {
			if N < 20 || k%10 == 0 || (k >= N-1 && k <= N+1) || k == 3*N+2 {
				ks = append(ks, k)
			}
		}
		worst := 0
		for _, k := range ks {
			for ph := range int64(10) {
				phase := per * ph / 10
				counter := &slidingCounter{window{n: int64(N), per: per}}
				log := &slidingLog{window{n: int64(N), per: per}}
				var cc, lc cell
				var ct, lt []int64
				start, offered := 10*per+phase, 0
				end := start + 12*per
				for now := start; now < end; now += per / int64(k) {
					offered++
					for _, x := range []struct {
						alg algorithm
						c   *cell
						ts  *[]int64
					}{{counter, &cc, &ct}, {log, &lc, &lt}} {
						if got, err := x.alg.earliest(x.c, now, 1); err == nil && got == now {
							x.alg.book(x.c, now, now, 1)
							*x.ts = append(*x.ts, now)
						}
					}
				}
				name := fmt.Sprintf("N=%d k=%d phase=%d/10", N, k, ph)
				if most, _ := winTrailing(lt, per, start, end); most > N {
					t.Errorf("%s: log admitted %d in a window", name, most)
				}
				most, _ := winTrailing(ct, per, start, end)
				worst = max(worst, most)
				if bound := min(N+int(int64(N)*phase/per)+1, 2*N-1); most > bound {
					t.Errorf("%s: counter admitted %d in a window, want <= %d", name, most, bound)
				}
				if steady, _ := winTrailing(ct, per, start+2*per, end); steady > N {
					t.Errorf("%s: from the third window the counter admitted %d in a window, want <= %d", name, steady, N)
				}
				if k <= N-1 && (len(ct) != offered || len(lt) != offered) {
					t.Errorf("%s: below the limit, counter admitted %d and log %d of %d", name, len(ct), len(lt), offered)
				}
				if k >= N+1 {
					first := start/per + 3
					for w := first; w < end/per-1; w++ {
						got := int(winUnitsIn(winBookedAt(ct), w*per, (w+1)*per))
						if N == 1 {
							got += int(winUnitsIn(winBookedAt(ct), (w+1)*per, (w+2)*per))
						}
						if want := max(N-1, 1); got != want {
							t.Errorf("%s: window %d admitted %d, want %d", name, w-first, got, want)
						}
					}
				}
			}
		}
		t.Logf("N=%d: most in any winTrailing window %d (%.2f·N); steady state <= N", N, worst, float64(worst)/float64(N))
	}
}

func winBookedAt(ts []int64) []winBooking {
	b := make([]winBooking, len(ts))
	for i, t := range ts {
		b[i] = winBooking{at: t, n: 1}
	}
	return b
}

// TestSlidingCounterEndOfTime: when the instant found lies within a window
// that starts before the end of int64 time but is itself beyond it, the
// counter refuses with ErrWaitTooLong instead of wrapping around to a
// negative instant that would be admitted at once (found by fuzzing).
func TestSlidingCounterEndOfTime(t *testing.T) {
	per := int64(65509) << 46 // two windows fit in int64, a third does not
	alg := SlidingCounter(Rate{N: 3, Per: time.Duration(per)}).alg
	var c cell
	now := per / 3
	for _, want := range []int64{now, per + per/2} {
		got, err := alg.earliest(&c, now, 2)
		if err != nil || got != want {
			t.Fatalf("earliest(%d, 2) = %d, %v; want %d", now, got, err, want)
		}
		alg.book(&c, now, got, 2)
	}
	if got, err := alg.earliest(&c, now, 2); !errors.Is(err, ErrWaitTooLong) {
		t.Errorf("earliest past the end of time = %d, %v; want ErrWaitTooLong", got, err)
	}
}

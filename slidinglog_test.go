package pace

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlidingLogAllowAt: exact decisions over a trailing window of 1s, 3
// units. A window [s, s+1s) never holds more than 3.
func TestSlidingLogAllowAt(t *testing.T) {
	l, err := NewShaper(SlidingLog(PerSecond(3)))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	runWinAllow(t, l, []winAllow{
		{0, 1, true},
		{200 * ms, 1, true},
		{400 * ms, 1, true},
		{900 * ms, 1, false},  // 0, 200, 400 are within (−100, 900]
		{999 * ms, 1, false},  // 0 is still within the window
		{1000 * ms, 1, true},  // 0 has left: [0, 1000) holds 0, 200, 400 only
		{1100 * ms, 1, false}, // 200, 400, 1000
		{1200 * ms, 2, false}, // 400, 1000 left: room for 1, not 2
		{1200 * ms, 1, true},
		{1400 * ms, 1, true},
		{1401 * ms, 1, false},
		{5 * time.Second, 3, true}, // all gone
		{5 * time.Second, 1, false},
	})
}

// TestSlidingLogReserveAt: a reservation waits until the entry that makes
// room leaves the window: t = b_{m−N+n} + Per.
func TestSlidingLogReserveAt(t *testing.T) {
	l, err := NewShaper(SlidingLog(PerSecond(2)))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	runWinReserve(t, l, []winReserve{
		{0, 1, 0, nil},
		{300 * ms, 1, 0, nil},
		{300 * ms, 1, 700 * ms, nil},       // entry 0 leaves at 1000
		{400 * ms, 1, 900 * ms, nil},       // entry 300 leaves at 1300
		{500 * ms, 2, 1800 * ms, nil},      // needs 1000 and 1300 gone: 2300
		{500 * ms, 1, 2800 * ms, nil},      // needs one 2300 gone: 3300
		{500 * ms, 3, 0, ErrBurstExceeded}, // can never fit
		{500 * ms, -2, 0, ErrBadCount},     // nonsense
		// Not before the latest booking (3300), which also makes room.
		{3 * time.Second, 1, 300 * ms, nil},
	})
}

// TestSlidingLogExact: on random arrivals the log admits exactly what a
// brute-force count of every trailing window admits.
func TestSlidingLogExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		r := Rate{N: 1 + rng.IntN(5), Per: time.Duration(1 + rng.IntN(1000))}
		l, err := NewShaper(SlidingLog(r))
		if err != nil {
			t.Fatal(err)
		}
		var admitted []winBooking
		now := time.Duration(0)
		for range 60 {
			now += time.Duration(rng.Int64N(int64(r.Per) / 2))
			n := 1 + rng.IntN(r.N)
			// Brute force: n fits at now iff every window [s, s+Per) that
			// contains now holds at most N−n units. Bookings are never
			// after now here, so that is the window (now−Per, now].
			want := winUnitsIn(admitted, int64(now-r.Per)+1, int64(now)+1)+n <= r.N
			if got := l.AllowAt(winAt(now), n); got != want {
				t.Fatalf("%v AllowAt(%v, %d) = %v, want %v (admitted %v)", r, now, n, got, want, winSortedAt(admitted))
			}
			if want {
				admitted = append(admitted, winBooking{at: int64(now), n: n})
			}
		}
	}
}

// TestSlidingLogCancel: cancelling reservations in reverse order restores
// the log exactly (thrasher-corp/gocryptotrader#2371 for the log: nothing lost, nothing extra).
func TestSlidingLogCancel(t *testing.T) {
	for _, n := range []int{1, 2, 60} {
		l, err := NewShaper(SlidingLog(Rate{N: n, Per: time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		// Fill part of the window, then reserve three times more than fits.
		runWinAllow(t, l, []winAllow{{0, (n + 1) / 2, true}})
		var rs []Reservation
		for i := range 3 * n {
			r, err := l.ReserveAt(winAt(100*time.Millisecond), 1, 0)
			if err != nil {
				t.Fatalf("N=%d: ReserveAt %d: %v", n, i, err)
			}
			rs = append(rs, r)
		}
		for i := len(rs) - 1; i >= 0; i-- {
			l.CancelAt(winAt(100*time.Millisecond), rs[i])
		}
		// Exactly N − ⌈N/2⌉ units fit at 100ms, as before the reservations.
		if left := n - (n+1)/2; left > 0 && !l.AllowAt(winAt(100*time.Millisecond), left) {
			t.Errorf("N=%d: after cancelling, %d units refused", n, left)
		}
		if l.AllowAt(winAt(100*time.Millisecond), 1) {
			t.Errorf("N=%d: after cancelling, one unit too many admitted", n)
		}
	}
}

// TestSlidingLogCancelFuture: cancelling a reservation that waited into the
// future must not forget the bookings it waited for. Entries at 0 and 0
// (N=2 per 1s), a reservation at 0.5s gets 1s; after cancelling it a call at
// 0.5s must still be refused, or [0, 1s) would hold three.
func TestSlidingLogCancelFuture(t *testing.T) {
	l, err := NewShaper(SlidingLog(PerSecond(2)))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	runWinAllow(t, l, []winAllow{{0, 2, true}})
	rs := runWinReserve(t, l, []winReserve{
		{500 * ms, 1, 500 * ms, nil},
		{500 * ms, 1, 500 * ms, nil},
		{500 * ms, 2, 1500 * ms, nil},
	})
	for _, r := range rs {
		l.CancelAt(winAt(500*ms), r)
	}
	runWinAllow(t, l, []winAllow{
		{500 * ms, 1, false},
		{999 * ms, 1, false},
		{1000 * ms, 2, true},
	})
}

// TestSlidingLogMemory: under a steady load the ring never holds more than
// N entries, and it is allocated lazily.
func TestSlidingLogMemory(t *testing.T) {
	l, err := NewShaper(SlidingLog(PerSecond(50)))
	if err != nil {
		t.Fatal(err)
	}
	if l.c.x != nil {
		t.Fatalf("ring allocated before the first booking")
	}
	for i := range 10_000 {
		l.AllowAt(winAt(time.Duration(i)*7*time.Millisecond), 1+i%3)
	}
	if got := len(l.c.x.log); got > 50 {
		t.Errorf("ring holds %d entries, want at most N=50", got)
	}
	if got := l.c.x.count; got > 50 {
		t.Errorf("log counts %d entries, want at most 50", got)
	}
}

// TestSlidingLogBadCountBooksNothing: refusals leave the log unchanged.
func TestSlidingLogBadCountBooksNothing(t *testing.T) {
	l, err := NewShaper(SlidingLog(PerSecond(2)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReserveAt(winAt(0), 3, 0); !errors.Is(err, ErrBurstExceeded) {
		t.Errorf("ReserveAt(n=3 > N=2) error = %v, want ErrBurstExceeded", err)
	}
	if l.c.x != nil && l.c.x.count != 0 {
		t.Errorf("a refused call winBooking %d entries", l.c.x.count)
	}
}

// TestSlidingLogCapsN: a sliding log keeps 8 bytes per unit per key, so an
// N past 1<<20 is refused wherever a Limit is used, and one call at the cap
// allocates about 8 MiB, not memory proportional to the n it asks for
// (SlidingLog(PerSecond(math.MaxInt)) was accepted and a ReserveAt of 4e9
// units died out of memory).
func TestSlidingLogCapsN(t *testing.T) {
	huge := SlidingLog(PerSecond(math.MaxInt))
	for name, err := range map[string]error{
		"SlidingLog": huge.Err(),
		"over cap":   SlidingLog(Rate{N: maxSlidingLogN + 1, Per: time.Second}).Err(),
		"All":        All(TokenBucket(PerSecond(1), 1), huge).Err(),
		"NewShaper":  func() error { _, err := NewShaper(huge); return err }(),
		"NewKeyed":   func() error { _, err := NewKeyed(huge, KeyedOptions{}); return err }(),
	} {
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, name)
		assert.Equal(t, "Rate.N", ce.Field, name)
		assert.ErrorIs(t, err, ErrInvalidConfig, name)
	}

	atCap := SlidingLog(Rate{N: maxSlidingLogN, Per: time.Second})
	require.NoError(t, atCap.Err())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := NewShaper(atCap)
	require.NoError(t, err)
	k, err := NewKeyed(All(TokenBucket(PerSecond(1e9), 1e9), atCap), KeyedOptions{})
	require.NoError(t, err)
	book := map[string]func(n int) error{
		"Shaper": func(n int) error { _, err := s.ReserveAt(now, n, 0); return err },
		"Keyed":  func(n int) error { _, err := k.ReserveAt(now, "key", n, 0); return err },
	}
	for name, reserve := range book {
		assert.ErrorIs(t, reserve(4e9), ErrBurstExceeded, name)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		require.NoError(t, reserve(maxSlidingLogN), name)
		runtime.ReadMemStats(&after)
		assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(9<<20), "%s: bytes allocated by one call of n = 1<<20", name)
	}
}

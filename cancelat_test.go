package pace

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCancelAtAfterTheInstantGivesNothingBack is x/time/rate's rule
// (Reservation.CancelAt): units whose instant has passed count as used, so
// a cancel after it gives nothing back, for a single-key limiter and for
// Keyed alike. Cancelled at or before the instant, they come back.
func TestCancelAtAfterTheInstantGivesNothingBack(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name     string
		cancelAt time.Duration // after t0; the reservation's instant is t0+1s
		next     time.Duration // the next reservation's delay, from t0+1s
	}{
		{"before the instant", 500 * time.Millisecond, 0},
		{"at the instant", time.Second, 0},
		{"after the instant", 1500 * time.Millisecond, time.Second},
	} {
		t.Run("LeakyBucket "+tt.name, func(t *testing.T) {
			l, err := NewShaper(LeakyBucket(PerSecond(1), LeakyOptions{Queue: 5}))
			require.NoError(t, err)
			_, err = l.ReserveAt(t0, 1, 0) // at t0
			require.NoError(t, err)
			r, err := l.ReserveAt(t0, 1, 0) // at t0+1s
			require.NoError(t, err)
			require.Equal(t, time.Second, r.Delay)
			l.CancelAt(t0.Add(tt.cancelAt), r)
			next, err := l.ReserveAt(t0.Add(time.Second), 1, 0)
			require.NoError(t, err)
			assert.Equal(t, tt.next, next.Delay)
		})
		t.Run("Keyed "+tt.name, func(t *testing.T) {
			k, err := NewKeyed(LeakyBucket(PerSecond(1), LeakyOptions{Queue: 5}), KeyedOptions{})
			require.NoError(t, err)
			_, err = k.ReserveAt(t0, "a", 1, 0)
			require.NoError(t, err)
			r, err := k.ReserveAt(t0, "a", 1, 0)
			require.NoError(t, err)
			require.Equal(t, time.Second, r.Delay)
			k.CancelAt(t0.Add(tt.cancelAt), "a", r)
			next, err := k.ReserveAt(t0.Add(time.Second), "a", 1, 0)
			require.NoError(t, err)
			assert.Equal(t, tt.next, next.Delay)
		})
	}
}

// reserveTimes books n units one at a time at now and returns the
// reservations.
func reserveTimes(t *testing.T, reserve func() (Reservation, error), n int) []Reservation {
	t.Helper()
	rs := make([]Reservation, n)
	for i := range rs {
		var err error
		rs[i], err = reserve()
		require.NoError(t, err)
	}
	return rs
}

// TestCancelAtLatestFirstIsExactForAnyBurst: a token bucket with a burst of
// two or more gives back every reservation of a queue cancelled latest
// first, not only the newest one, for a Shaper and for Keyed: the next
// reservation gets the slot of the earliest one cancelled, as if the
// cancelled ones had never been booked.
func TestCancelAtLatestFirstIsExactForAnyBurst(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		limit    Limit
		booked   int
		cancel   int           // the latest this many, latest first
		cancelAt time.Duration // after t0
	}{
		{TokenBucket(PerSecond(20), 5), 25, 1, 0},
		{TokenBucket(PerSecond(20), 5), 25, 2, 0},
		{TokenBucket(PerSecond(20), 5), 25, 10, 0},
		{TokenBucket(PerSecond(20), 5), 25, 25, 0},
		{TokenBucket(PerSecond(20), 2), 25, 10, 0},
		{TokenBucket(PerSecond(10), 5), 20, 14, 100 * time.Millisecond},
		{TokenBucket(PerSecond(10), 1), 20, 14, 100 * time.Millisecond},
		{LeakyBucket(PerSecond(20), LeakyOptions{Slack: 3, Queue: 30}), 25, 10, 0},
	} {
		name := fmt.Sprintf("%v %d of %d", tt.limit, tt.cancel, tt.booked)
		at := t0.Add(tt.cancelAt)
		first := tt.booked - tt.cancel // the earliest cancelled
		t.Run("Shaper "+name, func(t *testing.T) {
			s, err := NewShaper(tt.limit)
			require.NoError(t, err)
			rs := reserveTimes(t, func() (Reservation, error) { return s.ReserveAt(t0, 1, 0) }, tt.booked)
			for i := tt.booked - 1; i >= first; i-- {
				s.CancelAt(at, rs[i])
			}
			next, err := s.ReserveAt(at, 1, 0)
			require.NoError(t, err)
			assert.Equal(t, max(rs[first].Delay-tt.cancelAt, 0), next.Delay)
		})
		t.Run("Keyed "+name, func(t *testing.T) {
			k, err := NewKeyed(tt.limit, KeyedOptions{})
			require.NoError(t, err)
			rs := reserveTimes(t, func() (Reservation, error) { return k.ReserveAt(t0, "a", 1, time.Minute) }, tt.booked)
			for i := tt.booked - 1; i >= first; i-- {
				k.CancelAt(at, "a", rs[i])
			}
			next, err := k.ReserveAt(at, "a", 1, time.Minute)
			require.NoError(t, err)
			assert.Equal(t, max(rs[first].Delay-tt.cancelAt, 0), next.Delay)
		})
	}
}

// TestCancelAtEarliestFirstKeepsLaterSlots is the other side of CancelAt's
// rule (golang.org/x/time/rate's Reservation.CancelAt): a reservation that
// later ones were scheduled behind gives back only what they do not
// overlap, so cancelling a queue earliest first gives back nothing while
// the ones behind are still held, and the slots they held stay used; the
// last one cancelled, the latest by then, comes back whole. The
// queue of Keyed.Wait is the one that closes up in whatever order its
// waiters give up.
func TestCancelAtEarliestFirstKeepsLaterSlots(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(100 * time.Millisecond)
	for _, burst := range []int{1, 5} {
		t.Run(fmt.Sprint("burst ", burst), func(t *testing.T) {
			k, err := NewKeyed(TokenBucket(PerSecond(10), burst), KeyedOptions{})
			require.NoError(t, err)
			rs := reserveTimes(t, func() (Reservation, error) { return k.ReserveAt(t0, "a", 1, time.Minute) }, 20)
			for _, r := range rs[6:] {
				k.CancelAt(t1, "a", r)
			}
			next, err := k.ReserveAt(t1, "a", 1, time.Minute)
			require.NoError(t, err)
			// #6 .. #18 gave back nothing; #19, the latest when its turn came, all.
			assert.Equal(t, rs[19].Delay-100*time.Millisecond, next.Delay, "the 20th slot, from t1")
		})
	}
}

// TestCancelAtLatestFirstProperty: on random token buckets and queues,
// cancelling any number of the latest reservations, latest first, leaves a
// Shaper where one that never booked them stands: the next reservation gets
// the same delay. The queue is what the exactness covers: reservations
// taken at one instant (the burst) and then ones that had to wait, the
// caller's clock moving less than an interval between them.
func TestCancelAtLatestFirstProperty(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 5))
	for range 500 {
		r := Rate{N: 1 + rng.IntN(100), Per: time.Duration(1+rng.IntN(3)) * time.Second}
		burst := 1 + rng.IntN(8)
		l := TokenBucket(r, burst)
		booked := burst + rng.IntN(40)
		cancel := rng.IntN(booked + 1)
		step := time.Duration(rng.Int64N(int64(r.Interval()))) // the caller's clock between reservations, after the burst
		if rng.IntN(4) == 0 {
			step = 0
		}
		s, err := NewShaper(l)
		require.NoError(t, err)
		ref, err := NewShaper(l)
		require.NoError(t, err)
		rs := make([]Reservation, booked)
		clock := func(i int) time.Time { return t0.Add(time.Duration(max(i-burst+1, 0)) * step) }
		for i := range rs {
			rs[i], err = s.ReserveAt(clock(i), 1, 0)
			require.NoError(t, err)
			if i < booked-cancel {
				_, err = ref.ReserveAt(clock(i), 1, 0)
				require.NoError(t, err)
			}
		}
		// Cancelled at the earliest cancelled one's instant: none has come.
		at := clock(booked - 1)
		if f := booked - cancel; f < booked {
			at = clock(f).Add(rs[f].Delay)
		}
		for i := booked - 1; i >= booked-cancel; i-- {
			s.CancelAt(at, rs[i])
		}
		got, err := s.ReserveAt(at, 1, 0)
		require.NoError(t, err)
		want, err := ref.ReserveAt(at, 1, 0)
		require.NoError(t, err)
		require.Equal(t, want.Delay, got.Delay, "%v: %d booked %v apart, the latest %d cancelled", l, booked, step, cancel)
	}
}

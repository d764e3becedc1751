package pace

import (
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
			_, err = l.ReserveAt(t0, 1) // at t0
			require.NoError(t, err)
			r, err := l.ReserveAt(t0, 1) // at t0+1s
			require.NoError(t, err)
			require.Equal(t, time.Second, r.Delay)
			l.CancelAt(t0.Add(tt.cancelAt), r)
			next, err := l.ReserveAt(t0.Add(time.Second), 1)
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

package pace

import (
	"testing"
	"time"
)

// TestKeyedPauseIgnoresZeroAndPast: PauseUntil with the zero Time, an
// instant before the store's range, or one the store has already passed
// sets no pause; PausedUntil then, and after a pause has ended by the
// store's clock, reports the zero Time, never a date from its epoch.
func TestKeyedPauseIgnoresZeroAndPast(t *testing.T) {
	tests := []struct {
		name  string
		l     Limit
		until time.Time
	}{
		{"zero Time", every(time.Second, 2), time.Time{}},
		{"zero Time, no limit", Limit{}, time.Time{}},
		{"year 1900", every(time.Second, 2), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"already passed", every(time.Second, 2), at(5 * time.Second)},
		{"already passed, no limit", Limit{}, at(5 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newTestKeyed(t, tt.l, KeyedOptions{})
			if !k.AllowAt(at(10*time.Second), "z", 1) {
				t.Fatal("first AllowAt refused")
			}
			k.PauseUntil("z", tt.until)
			wantPaused(t, k, "z", time.Time{})
			if !k.AllowAt(at(10*time.Second), "z", 1) {
				t.Error("AllowAt refused after an ignored pause")
			}
		})
	}

	t.Run("zero Time on a fresh store", func(t *testing.T) {
		k := newTestKeyed(t, every(time.Second, 2), KeyedOptions{})
		k.PauseUntil("z", time.Time{})
		wantPaused(t, k, "z", time.Time{})
		wantLen(t, k, 0)
	})

	t.Run("ended pause", func(t *testing.T) {
		k := newTestKeyed(t, every(time.Second, 2), KeyedOptions{})
		k.PauseUntil("z", at(20*time.Second))
		wantPaused(t, k, "z", at(20*time.Second))
		if !k.AllowAt(at(30*time.Second), "z", 1) {
			t.Fatal("AllowAt refused after the pause")
		}
		wantPaused(t, k, "z", time.Time{})
	})

	t.Run("overflow key", func(t *testing.T) {
		k := newTestKeyed(t, every(time.Hour, 1), KeyedOptions{MaxKeys: 1})
		if !k.AllowAt(t0, "a", 1) || !k.AllowAt(t0, "b", 1) {
			t.Fatal("first use of a (tracked) or b (overflow) refused")
		}
		k.PauseUntil("c", time.Time{})
		wantPaused(t, k, "c", time.Time{})
	})
}

package pace

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rateLimits builds every algorithm that takes a Rate, alone and in All.
var rateLimits = map[string]func(Rate) Limit{
	"TokenBucket":    func(r Rate) Limit { return TokenBucket(r, 1) },
	"LeakyBucket":    func(r Rate) Limit { return LeakyBucket(r, LeakyOptions{}) },
	"FixedWindow":    FixedWindow,
	"SlidingLog":     SlidingLog,
	"SlidingCounter": SlidingCounter,
	"All":            func(r Rate) Limit { return All(TokenBucket(PerSecond(1), 1), FixedWindow(r)) },
}

// TestRatePerBound: one bound on Rate.Per for every algorithm, checked in
// Rate.validate. Before, the token and leaky buckets refused an interval
// over 146 years while the window limiters took Per = MaxInt64 and
// FixedWindow's ReserveAt granted a 219-year delay with a nil error.
func TestRatePerBound(t *testing.T) {
	for name, mk := range rateLimits {
		t.Run(name, func(t *testing.T) {
			for _, per := range []time.Duration{maxPer + 1, math.MaxInt64} {
				err := mk(Rate{N: 1, Per: per}).Err()
				require.ErrorIs(t, err, ErrInvalidConfig, "Per %v", per)
				var ce *ConfigError
				require.ErrorAs(t, err, &ce)
				if name != "All" {
					assert.Equal(t, "Rate.Per", ce.Field)
					assert.Equal(t, per, ce.Value)
				}
				assert.Contains(t, err.Error(), "146 years")
				_, err = NewShaper(mk(Rate{N: 1, Per: per}))
				assert.ErrorIs(t, err, ErrInvalidConfig, "NewShaper, Per %v", per)
				_, err = NewKeyed(mk(Rate{N: 1, Per: per}), KeyedOptions{})
				assert.ErrorIs(t, err, ErrInvalidConfig, "NewKeyed, Per %v", per)
			}

			// At the bound the limit works, and no wait it grants exceeds
			// one period (two for a sliding counter, which with N = 1
			// admits one request every other window).
			s, err := NewShaper(mk(Rate{N: 1, Per: maxPer}))
			require.NoError(t, err)
			now := time.Now()
			assert.True(t, s.AllowAt(now, 1))
			r, err := s.ReserveAt(now, 1, 0)
			if err == nil {
				bound := maxPer
				if name == "SlidingCounter" {
					bound = 2 * maxPer
				}
				assert.LessOrEqual(t, r.Delay, bound)
			} else {
				assert.True(t, errors.Is(err, ErrWaitTooLong), "%v", err)
			}
		})
	}
}

// TestRatePerBoundN: the bound is on Per, so a huge N under it is fine
// for the algorithms that do not bound N themselves (the sliding log and
// the sliding counter do: TestSlidingLogCapsN, TestSlidingCounterLargeN).
func TestRatePerBoundN(t *testing.T) {
	for _, name := range []string{"TokenBucket", "LeakyBucket", "FixedWindow"} {
		assert.NoError(t, rateLimits[name](Rate{N: math.MaxInt, Per: maxPer}).Err(), name)
	}
}

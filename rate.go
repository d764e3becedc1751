package pace

import (
	"fmt"
	"time"

	"github.com/pacehttp/pace/internal/intmath"
)

// Rate is a number of events allowed per period, stated the way API
// documentation quotes limits. Rate{N: 100, Per: time.Minute} is "100
// requests a minute", one every 600ms when paced evenly.
//
// Every constructor that takes a Rate ([TokenBucket], [LeakyBucket],
// [FixedWindow], [SlidingLog], [SlidingCounter]) checks it. It rejects N
// <= 0, Per <= 0 and Per over MaxInt64/2 nanoseconds (about 146 years).
// The error is a [*ConfigError] naming "Rate.N" or "Rate.Per". So the zero
// Rate is not a usable limit (batch.Options reads it as "no ceiling"). A
// Rate is a plain value and safe to copy and share.
type Rate struct {
	N   int           // events per period; must be positive
	Per time.Duration // length of the period; must be positive
}

// maxPer is the longest period a Rate may have, MaxInt64/2 nanoseconds
// (about 146 years). A limiter counts instants within that span of its
// creation. So a window or an interval up to maxPer added to any of them
// cannot overflow. It bounds Per/N as well, since N >= 1.
const maxPer = time.Duration(maxSpan)

// PerSecond returns a Rate of n events per second; n must be positive for
// the Rate to be valid.
func PerSecond(n int) Rate { return Rate{N: n, Per: time.Second} }

// PerMinute returns a Rate of n events per minute; n must be positive for
// the Rate to be valid.
func PerMinute(n int) Rate { return Rate{N: n, Per: time.Minute} }

// PerHour returns a Rate of n events per hour; n must be positive for the
// Rate to be valid.
func PerHour(n int) Rate { return Rate{N: n, Per: time.Hour} }

// Every returns a Rate of one event per interval d, so its Interval is d; d
// must be positive for the Rate to be valid.
func Every(d time.Duration) Rate { return Rate{N: 1, Per: d} }

// String formats r as "N/Per", for example "100/1m0s".
func (r Rate) String() string { return fmt.Sprintf("%d/%v", r.N, r.Per) }

// Interval returns the even spacing between events, Per/N, rounded up to the
// next nanosecond so that pacing at Interval never exceeds r. It returns 0
// for an invalid Rate.
func (r Rate) Interval() time.Duration {
	if r.N <= 0 || r.Per <= 0 {
		return 0
	}
	return time.Duration(intmath.CeilDiv(int64(r.Per), int64(r.N)))
}

// validate reports a *ConfigError naming field when r is not usable: the
// one check of a Rate every algorithm makes.
func (r Rate) validate(field string) error {
	if r.N <= 0 {
		return configErr(field+".N", r.N, "must be positive")
	}
	if r.Per <= 0 {
		return configErr(field+".Per", r.Per, "must be positive")
	}
	if r.Per > maxPer {
		return configErr(field+".Per", r.Per, "must not exceed "+maxPer.String()+" (about 146 years), the span a limiter's clock covers")
	}
	return nil
}

package pace

import (
	"sync/atomic"
	"testing"
	"time"
)

// benchWindowStep is the clock step between calls: with limits of 1000 a
// second, about as many calls are offered as admitted, so both the admit and
// the refuse paths run.
const benchWindowStep = time.Millisecond

// benchWindowLimiters builds one limiter of each kind for the benchmarks.
var benchWindowLimiters = []struct {
	name string
	new  func() (winLimiter, error)
}{
	{"FixedWindow", func() (winLimiter, error) { return NewShaper(FixedWindow(PerSecond(1000))) }},
	{"SlidingLog", func() (winLimiter, error) { return NewShaper(SlidingLog(PerSecond(1000))) }},
	{"SlidingCounter", func() (winLimiter, error) { return NewShaper(SlidingCounter(PerSecond(1000))) }},
	{"Composite", func() (winLimiter, error) {
		return NewShaper(All(SlidingLog(PerSecond(1000)), FixedWindow(PerMinute(50_000))))
	}},
}

// benchWindowWarm runs the limiter through a few windows, so that the
// sliding log's ring has reached its size before measuring.
func benchWindowWarm(l winLimiter) time.Time {
	now := winBase
	for range 5000 {
		now = now.Add(benchWindowStep / 2)
		l.AllowAt(now, 1)
	}
	return now
}

// BenchmarkWindowAllowAt measures one AllowAt decision on one goroutine.
func BenchmarkWindowAllowAt(b *testing.B) {
	for _, bl := range benchWindowLimiters {
		b.Run(bl.name, func(b *testing.B) {
			l, err := bl.new()
			if err != nil {
				b.Fatal(err)
			}
			now := benchWindowWarm(l)
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(benchWindowStep)
				l.AllowAt(now, 1)
			}
		})
	}
}

// BenchmarkWindowAllowAtParallel measures AllowAt decisions on one limiter
// from GOMAXPROCS goroutines, sharing a clock that advances with each call.
func BenchmarkWindowAllowAtParallel(b *testing.B) {
	for _, bl := range benchWindowLimiters {
		b.Run(bl.name, func(b *testing.B) {
			l, err := bl.new()
			if err != nil {
				b.Fatal(err)
			}
			start := benchWindowWarm(l)
			var clock atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.AllowAt(start.Add(time.Duration(clock.Add(int64(benchWindowStep)))), 1)
				}
			})
		})
	}
}

package bench

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/pacehttp/pace"
	"go.uber.org/ratelimit"
	"golang.org/x/time/rate"
)

// Every limiter here is set to a rate no benchmark can reach (10⁹ a second,
// a token or slot every nanosecond), so that each call goes through the
// whole decision and is admitted: what is measured is deciding, never
// sleeping or refusing. The "admit" metric is the share of calls admitted
// (1 when the set-up is right); uber's Take cannot refuse, so its
// "sleeps/op" counts the calls that slept instead.
const (
	fastRate  = 1_000_000_000 // events per second
	fastBurst = 1000
)

func newPaceBucket(b *testing.B) *pace.Shaper {
	l, err := pace.NewShaper(pace.TokenBucket(pace.PerSecond(fastRate), fastBurst))
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func newPaceLeaky(b *testing.B) *pace.Shaper {
	l, err := pace.NewShaper(pace.LeakyBucket(pace.PerSecond(fastRate), pace.LeakyOptions{}))
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// sleepCountingClock is uber's default clock (time.Now and time.Sleep) with
// a count of the sleeps, so the benchmark can show that Take never slept.
type sleepCountingClock struct{ sleeps atomic.Int64 }

func (c *sleepCountingClock) Now() time.Time { return time.Now() }

func (c *sleepCountingClock) Sleep(d time.Duration) {
	c.sleeps.Add(1)
	time.Sleep(d)
}

// report records the share of admitted calls.
func report(b *testing.B, admitted int64) {
	b.ReportMetric(float64(admitted)/float64(b.N), "admit")
}

// BenchmarkAllow is the cost of one decision on the clock (each limiter
// reads the time itself), from one goroutine.
func BenchmarkAllow(b *testing.B) {
	b.Run("pace.TokenBucket", func(b *testing.B) {
		l := newPaceBucket(b)
		var ok int64
		b.ReportAllocs()
		for b.Loop() {
			if l.Allow() {
				ok++
			}
		}
		report(b, ok)
	})
	b.Run("pace.LeakyBucket", func(b *testing.B) {
		l := newPaceLeaky(b)
		var ok int64
		b.ReportAllocs()
		for b.Loop() {
			if l.Allow() {
				ok++
			}
		}
		report(b, ok)
	})
	b.Run("x-time-rate.Allow", func(b *testing.B) {
		l := rate.NewLimiter(fastRate, fastBurst)
		var ok int64
		b.ReportAllocs()
		for b.Loop() {
			if l.Allow() {
				ok++
			}
		}
		report(b, ok)
	})
	b.Run("uber-ratelimit.Take", func(b *testing.B) {
		clk := &sleepCountingClock{}
		l := ratelimit.New(fastRate, ratelimit.WithClock(clk))
		b.ReportAllocs()
		for b.Loop() {
			l.Take()
		}
		b.ReportMetric(float64(clk.sleeps.Load())/float64(b.N), "sleeps/op")
	})
	b.Run("failsafe-smooth.TryAcquirePermit", func(b *testing.B) {
		l := ratelimiter.NewSmooth[any](fastRate, time.Second)
		var ok int64
		b.ReportAllocs()
		for b.Loop() {
			if l.TryAcquirePermit() {
				ok++
			}
		}
		report(b, ok)
	})
	b.Run("failsafe-bursty.TryAcquirePermit", func(b *testing.B) {
		l := ratelimiter.NewBursty[any](fastRate, time.Second)
		var ok int64
		b.ReportAllocs()
		for b.Loop() {
			if l.TryAcquirePermit() {
				ok++
			}
		}
		report(b, ok)
	})
}

// parallel runs allow from GOMAXPROCS goroutines on one shared limiter and
// reports the share admitted.
func parallel(b *testing.B, allow func() bool) {
	var ok atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var n int64
		for pb.Next() {
			if allow() {
				n++
			}
		}
		ok.Add(n)
	})
	report(b, ok.Load())
}

// BenchmarkAllowParallel is BenchmarkAllow with every goroutine
// (GOMAXPROCS) deciding on one shared limiter. The limiter is called
// through a func value, one indirect call that every contestant pays alike.
func BenchmarkAllowParallel(b *testing.B) {
	b.Run("pace.TokenBucket", func(b *testing.B) { parallel(b, newPaceBucket(b).Allow) })
	b.Run("pace.LeakyBucket", func(b *testing.B) { parallel(b, newPaceLeaky(b).Allow) })
	b.Run("x-time-rate.Allow", func(b *testing.B) { parallel(b, rate.NewLimiter(fastRate, fastBurst).Allow) })
	b.Run("uber-ratelimit.Take", func(b *testing.B) {
		clk := &sleepCountingClock{}
		l := ratelimit.New(fastRate, ratelimit.WithClock(clk))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Take()
			}
		})
		b.ReportMetric(float64(clk.sleeps.Load())/float64(b.N), "sleeps/op")
	})
	b.Run("failsafe-smooth.TryAcquirePermit", func(b *testing.B) {
		parallel(b, ratelimiter.NewSmooth[any](fastRate, time.Second).TryAcquirePermit)
	})
	b.Run("failsafe-bursty.TryAcquirePermit", func(b *testing.B) {
		parallel(b, ratelimiter.NewBursty[any](fastRate, time.Second).TryAcquirePermit)
	})
}

// step is how far the explicit clock of BenchmarkAllowAt moves per call:
// far more than one token's worth, so every call is admitted.
const step = time.Microsecond

// BenchmarkAllowAt is the cost of one decision at an explicit instant (no
// clock read), where the library offers one: pace's AllowAt and x/time/rate's
// AllowN. The instant advances by step each call; advancing it costs the
// same for both.
func BenchmarkAllowAt(b *testing.B) {
	b.Run("pace.TokenBucket.AllowAt", func(b *testing.B) {
		l := newPaceBucket(b)
		now := time.Now()
		var ok int64
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(step)
			if l.AllowAt(now, 1) {
				ok++
			}
		}
		report(b, ok)
	})
	b.Run("pace.LeakyBucket.AllowAt", func(b *testing.B) {
		l := newPaceLeaky(b)
		now := time.Now()
		var ok int64
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(step)
			if l.AllowAt(now, 1) {
				ok++
			}
		}
		report(b, ok)
	})
	b.Run("x-time-rate.AllowN", func(b *testing.B) {
		l := rate.NewLimiter(fastRate, fastBurst)
		now := time.Now()
		var ok int64
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(step)
			if l.AllowN(now, 1) {
				ok++
			}
		}
		report(b, ok)
	})
}

// BenchmarkRefuse is the cost of a refusal: each limiter allows one event
// an hour and is drained by its first call, so every later call is refused
// (admit ≈ 0). uber's Take has no refusal (it sleeps) and is left out.
func BenchmarkRefuse(b *testing.B) {
	b.Run("pace.TokenBucket", func(b *testing.B) {
		l, err := pace.NewShaper(pace.TokenBucket(pace.PerHour(1), 1))
		if err != nil {
			b.Fatal(err)
		}
		refuse(b, l.Allow)
	})
	b.Run("pace.LeakyBucket", func(b *testing.B) {
		l, err := pace.NewShaper(pace.LeakyBucket(pace.PerHour(1), pace.LeakyOptions{}))
		if err != nil {
			b.Fatal(err)
		}
		refuse(b, l.Allow)
	})
	b.Run("x-time-rate.Allow", func(b *testing.B) {
		refuse(b, rate.NewLimiter(rate.Every(time.Hour), 1).Allow)
	})
	b.Run("failsafe-smooth.TryAcquirePermit", func(b *testing.B) {
		refuse(b, ratelimiter.NewSmooth[any](1, time.Hour).TryAcquirePermit)
	})
	b.Run("failsafe-bursty.TryAcquirePermit", func(b *testing.B) {
		refuse(b, ratelimiter.NewBursty[any](1, time.Hour).TryAcquirePermit)
	})
}

// refuse drains the limiter with one call, then measures calls that are
// refused. Like parallel, it calls through a func value.
func refuse(b *testing.B, allow func() bool) {
	allow()
	var ok int64
	b.ReportAllocs()
	for b.Loop() {
		if allow() {
			ok++
		}
	}
	report(b, ok)
}

var (
	sinkTime time.Time
	sinkDur  time.Duration
)

// BenchmarkClock is the floor under every decision on the clock: reading
// it with time.Now (x/time/rate, uber) or, more cheaply, as time.Since a
// fixed instant (pace, failsafe-go), and that plus an uncontended mutex,
// which every limiter measured here but uber's takes.
func BenchmarkClock(b *testing.B) {
	b.Run("time.Now", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkTime = time.Now()
		}
	})
	start := time.Now()
	b.Run("time.Since", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkDur = time.Since(start)
		}
	})
	b.Run("time.Since+mutex", func(b *testing.B) {
		var mu sync.Mutex
		b.ReportAllocs()
		for b.Loop() {
			d := time.Since(start)
			mu.Lock()
			sinkDur = d
			mu.Unlock()
		}
	})
}

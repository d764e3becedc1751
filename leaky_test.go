package pace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/internal/quickest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leakyDelays reserves one slot k times at now and returns the delays, or
// the error that ended the run.
func leakyDelays(l *Shaper, now time.Time, k int) ([]time.Duration, error) {
	var ds []time.Duration
	for range k {
		r, err := l.ReserveAt(now, 1, 0)
		if err != nil {
			return ds, err
		}
		ds = append(ds, r.Delay)
	}
	return ds, nil
}

// spaced returns k delays: slack+1 zeros, then one interval more each.
func spaced(k, slack int, interval time.Duration) []time.Duration {
	ds := make([]time.Duration, k)
	for i := range ds {
		ds[i] = time.Duration(max(0, i-slack)) * interval
	}
	return ds
}

// TestLeakyBucketSpacing: slots come exactly one interval apart, the queue
// bound refuses at once with ErrQueueFull (saying how long the wait would
// have been) and books nothing, and a slot frees up as time passes.
func TestLeakyBucketSpacing(t *testing.T) {
	const I = 100 * time.Millisecond
	l := gcraLeaky(t, PerSecond(10), LeakyOptions{Queue: 5})
	ds, err := leakyDelays(l, gcraT0, 6)
	if err != nil || fmt.Sprint(ds) != fmt.Sprint(spaced(6, 0, I)) {
		t.Fatalf("delays %v, %v; want %v", ds, err, spaced(6, 0, I))
	}
	before := gcraCell(l)
	r, err := l.ReserveAt(gcraT0, 1, 0)
	if !errors.Is(err, ErrQueueFull) || !errors.Is(err, ErrRateLimited) || r.Delay != 6*I {
		t.Errorf("7th ReserveAt = %v, %v; want ErrQueueFull with Delay 600ms", r.Delay, err)
	}
	if l.AllowAt(gcraT0, 1) {
		t.Errorf("AllowAt with a full queue = true")
	}
	if gcraCell(l) != before {
		t.Errorf("refusals changed the pacer")
	}
	if r := gcraReserve(t, l, gcraAt(I), 1); r.Delay != 5*I {
		t.Errorf("ReserveAt one interval later: delay %v, want 500ms (slot at 600ms)", r.Delay)
	}
}

// TestLeakyBucketZeroQueue: the zero LeakyOptions is the documented
// default, not "nobody may wait": 4 callers at one instant (and 100) all get
// a slot, one interval apart, as they would from a token bucket; AllowAt,
// which never queues, still refuses a request one interval too early, as
// nginx limit_req without burst does.
func TestLeakyBucketZeroQueue(t *testing.T) {
	const I = 100 * time.Millisecond
	l := gcraLeaky(t, PerSecond(10), LeakyOptions{})
	ds, err := leakyDelays(l, gcraT0, 100)
	require.NoError(t, err)
	assert.Equal(t, spaced(100, 0, I), ds)
	strict := gcraLeaky(t, PerSecond(10), LeakyOptions{})
	assert.True(t, strict.AllowAt(gcraT0, 1))
	assert.False(t, strict.AllowAt(gcraAt(99*time.Millisecond), 1))

	synctest.Test(t, func(t *testing.T) { // 4 concurrent Wait calls: none refused
		w := gcraLeaky(t, PerSecond(10), LeakyOptions{})
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = w.Wait(t.Context(), 0) })
		}
		wg.Wait()
		for i, err := range errs {
			assert.NoError(t, err, "caller %d", i+1)
		}
		assert.Equal(t, 3*I, time.Since(start), "the last of 4 leaves 3 intervals later")
	})
}

// TestLeakyBucketQueueBounds: the queue is bounded by a count of waiters, a
// longest delay, or both (the tighter one).
func TestLeakyBucketQueueBounds(t *testing.T) {
	const I = 100 * time.Millisecond
	tests := []struct {
		name    string
		o       LeakyOptions
		granted int // delays 0, I, 2I, … before ErrQueueFull
	}{
		{"queue 3", LeakyOptions{Queue: 3}, 4},
		{"max delay 250ms", LeakyOptions{MaxDelay: 250 * time.Millisecond}, 3},
		{"max delay exactly 200ms", LeakyOptions{MaxDelay: 200 * time.Millisecond}, 3},
		{"queue 1 tighter than max delay", LeakyOptions{Queue: 1, MaxDelay: 250 * time.Millisecond}, 2},
		{"max delay tighter than queue 5", LeakyOptions{Queue: 5, MaxDelay: 250 * time.Millisecond}, 3},
		{"slack 2 queue 1", LeakyOptions{Queue: 1, Slack: 2}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := gcraLeaky(t, PerSecond(10), tt.o)
			ds, err := leakyDelays(l, gcraT0, tt.granted+1)
			if want := spaced(tt.granted, tt.o.Slack, I); fmt.Sprint(ds) != fmt.Sprint(want) || !errors.Is(err, ErrQueueFull) {
				t.Errorf("delays %v then %v; want %v then ErrQueueFull", ds, err, want)
			}
		})
	}
}

// TestLeakyBucketNginx: the configurations that mirror nginx limit_req at
// rate=10r/s behave as nginx documents: without burst a request 99 ms after
// the last is refused; burst=5 nodelay passes 6 at once; burst=5 delays 5;
// burst=5 delay=2 passes 3 at once and delays 3.
func TestLeakyBucketNginx(t *testing.T) {
	const I = 100 * time.Millisecond
	strict := gcraLeaky(t, PerSecond(10), LeakyOptions{})
	for _, s := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {99 * time.Millisecond, false}, {100 * time.Millisecond, true}, {150 * time.Millisecond, false}, {250 * time.Millisecond, true}} {
		if got := strict.AllowAt(gcraAt(s.at), 1); got != s.want {
			t.Errorf("limit_req: AllowAt(%v) = %v, want %v", s.at, got, s.want)
		}
	}
	nodelay := gcraLeaky(t, PerSecond(10), LeakyOptions{Slack: 5}) // burst=5 nodelay: 6 at once, then refused
	for i := range 7 {
		if got, want := nodelay.AllowAt(gcraT0, 1), i < 6; got != want {
			t.Errorf("burst=5 nodelay: request %d AllowAt = %v, want %v", i+1, got, want)
		}
	}
	tests := []struct {
		name string
		o    LeakyOptions
		want []time.Duration // delays of 7 requests at one instant until refused
	}{
		{"burst=5", LeakyOptions{Queue: 5}, spaced(6, 0, I)},
		{"burst=5 delay=2", LeakyOptions{Slack: 2, Queue: 3}, []time.Duration{0, 0, 0, I, 2 * I, 3 * I}},
	}
	for _, tt := range tests {
		l := gcraLeaky(t, PerSecond(10), tt.o)
		ds, err := leakyDelays(l, gcraT0, 7)
		if fmt.Sprint(ds) != fmt.Sprint(tt.want) || !errors.Is(err, ErrQueueFull) {
			t.Errorf("%s: delays %v then %v; want %v then ErrQueueFull", tt.name, ds, err, tt.want)
		}
	}
}

// TestLeakyBucketCancelInReverse is thrasher-corp/gocryptotrader#2371 for the pacer: three slots reserved at T
// and cancelled latest first leave the pacer as it was.
func TestLeakyBucketCancelInReverse(t *testing.T) {
	for _, n := range []int{60, 30, 100} {
		t.Run(PerSecond(n).String(), func(t *testing.T) {
			T := gcraAt(time.Minute)
			l := gcraLeaky(t, PerSecond(n), LeakyOptions{Queue: 2})
			rs := make([]Reservation, 3)
			for i := range rs {
				rs[i] = gcraReserve(t, l, T, 1)
			}
			for i := len(rs) - 1; i >= 0; i-- {
				l.CancelAt(T, rs[i])
			}
			if !l.AllowAt(T, 1) {
				t.Errorf("AllowAt(T, 1) after cancelling in reverse = false, want true")
			}

			// Forward order frees only the last slot: the held later
			// reservations were spaced behind the earlier ones.
			f := gcraLeaky(t, PerSecond(n), LeakyOptions{Queue: 2})
			for i := range rs {
				rs[i] = gcraReserve(t, f, T, 1)
			}
			for _, r := range rs {
				f.CancelAt(T, r)
			}
			if next := gcraReserve(t, f, T, 1); next.Delay != rs[2].Delay {
				t.Errorf("after cancelling in forward order, delay %v, want %v", next.Delay, rs[2].Delay)
			}
		})
	}
}

// c18Check checks one burst of uber-go/ratelimit#106: the release instants of 30 calls
// made in a tight loop after an idle period, with slack S: the first S+1 at
// the first instant, then each exactly one interval after the previous, so
// the burst lasts (30−S−1)·100ms.
func c18Check(t *testing.T, cycle, slack int, releases []time.Time) {
	t.Helper()
	const I = 100 * time.Millisecond
	first := releases[0]
	same := 0
	for _, r := range releases {
		if r.Equal(first) {
			same++
		}
	}
	if same > slack+1 {
		t.Errorf("cycle %d slack %d: %d calls at the first instant, want at most %d", cycle, slack, same, slack+1)
	}
	for i := slack + 1; i < len(releases); i++ {
		if gap := releases[i].Sub(releases[i-1]); gap < I {
			t.Errorf("cycle %d slack %d: gap %d = %v, want >= %v", cycle, slack, i, gap, I)
		}
	}
	if total, want := releases[len(releases)-1].Sub(first), time.Duration(30-slack-1)*I; total < want {
		t.Errorf("cycle %d slack %d: 30 calls took %v, want >= %v", cycle, slack, total, want)
	}
}

// TestLeakyBucketIdleThenLoop is uber-go/ratelimit#106 with explicit time: pacer 10/s, one call,
// 3 s idle, then 30 calls in a tight loop (each made when the previous one
// was released), twice, with slack 0 and 3. The first call after the idle
// period is immediate. Also all 30 reserved at one instant.
func TestLeakyBucketIdleThenLoop(t *testing.T) {
	for _, slack := range []int{0, 3} {
		t.Run(fmt.Sprintf("slack %d", slack), func(t *testing.T) {
			l := gcraLeaky(t, PerSecond(10), LeakyOptions{Slack: slack, Queue: 1})
			now := gcraT0
			for cycle := range 2 {
				r := gcraReserve(t, l, now, 1) // right after the last burst it waits its turn
				if cycle == 0 && r.Delay != 0 {
					t.Fatalf("lone call on an idle pacer delayed %v", r.Delay)
				}
				now = now.Add(r.Delay + 3*time.Second)
				start := now
				var releases []time.Time
				for range 30 {
					r := gcraReserve(t, l, now, 1)
					now = now.Add(r.Delay) // the caller waits, then calls again
					releases = append(releases, now)
				}
				if !releases[0].Equal(start) {
					t.Errorf("cycle %d: first call after idle released at +%v, want at once", cycle, releases[0].Sub(start))
				}
				c18Check(t, cycle, slack, releases)
			}

			all := gcraLeaky(t, PerSecond(10), LeakyOptions{Slack: slack, Queue: 30})
			gcraReserve(t, all, gcraT0, 1)
			ds, err := leakyDelays(all, gcraAt(3*time.Second), 30)
			if want := spaced(30, slack, 100*time.Millisecond); err != nil || fmt.Sprint(ds) != fmt.Sprint(want) {
				t.Errorf("30 at one instant: delays %v, %v; want %v", ds, err, want)
			}
		})
	}
}

// TestLeakyBucketIdleThenLoopWait is uber-go/ratelimit#106 through the blocking Wait on the fake
// clock of a synctest bubble.
func TestLeakyBucketIdleThenLoopWait(t *testing.T) {
	for _, slack := range []int{0, 3} {
		t.Run(fmt.Sprintf("slack %d", slack), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := gcraLeaky(t, PerSecond(10), LeakyOptions{Slack: slack, Queue: 1})
				ctx := context.Background()
				for cycle := range 2 {
					if err := l.Wait(ctx, 0); err != nil {
						t.Fatalf("cycle %d: lone Wait: %v", cycle, err)
					}
					time.Sleep(3 * time.Second)
					start := time.Now()
					var releases []time.Time
					for i := range 30 {
						if err := l.Wait(ctx, 0); err != nil {
							t.Fatalf("cycle %d: Wait %d: %v", cycle, i, err)
						}
						releases = append(releases, time.Now())
					}
					if !releases[0].Equal(start) {
						t.Errorf("cycle %d: first Wait after idle returned at +%v, want at once", cycle, releases[0].Sub(start))
					}
					c18Check(t, cycle, slack, releases)
				}
			})
		})
	}
}

// TestLeakyBucketWaitQueueFull: of five callers arriving together at a
// pacer with a queue of 2, three are released 100 ms apart and two are
// refused at once with ErrQueueFull.
func TestLeakyBucketWaitQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLeaky(t, PerSecond(10), LeakyOptions{Queue: 2})
		start := time.Now()
		var (
			mu       sync.Mutex
			released []time.Duration
			refused  []time.Duration
			wg       sync.WaitGroup
		)
		for range 5 {
			wg.Go(func() {
				err := l.Wait(context.Background(), 0)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					released = append(released, time.Since(start))
				case errors.Is(err, ErrQueueFull):
					refused = append(refused, time.Since(start))
					if we := (*WaitError)(nil); !errors.As(err, &we) || we.Delay != 300*time.Millisecond {
						t.Errorf("queue full error %v, want a *WaitError with Delay 300ms", err)
					}
				default:
					t.Errorf("Wait: %v", err)
				}
			})
		}
		wg.Wait()
		if fmt.Sprint(released) != "[0s 100ms 200ms]" || fmt.Sprint(refused) != "[0s 0s]" {
			t.Errorf("released at %v, refused at %v; want [0s 100ms 200ms] and [0s 0s]", released, refused)
		}
	})
}

// TestLeakyBucketWaitCancel: a waiter whose context is cancelled returns at
// once and gives its slot back to the next caller.
func TestLeakyBucketWaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLeaky(t, PerSecond(10), LeakyOptions{Queue: 5})
		if !l.Allow() {
			t.Fatal("Allow on an idle pacer = false")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- l.Wait(ctx, 0) }() // slot at 100ms
		synctest.Wait()
		time.Sleep(30 * time.Millisecond)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Wait = %v, want context.Canceled", err)
		}
		if r := gcraReserve(t, l, time.Now(), 1); r.Delay != 70*time.Millisecond {
			t.Errorf("next ReserveAt delay %v, want 70ms (the freed slot at 100ms)", r.Delay)
		}
	})
}

// TestLeakyBucketPromise checks the pacer's promise on 10,000 seeded random
// schedules with random cancels and a clock stepping back: in any closed
// interval of length L at most Slack+1+⌊L/interval⌋ slots are booked and
// kept (with Slack 0: slots at least one interval apart), no delay exceeds
// the queue bound, refusals book nothing, and an idle pacer admits again.
func TestLeakyBucketPromise(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 10_000 {
		interval := gcraIntervals[rng.IntN(len(gcraIntervals))]
		o := LeakyOptions{Queue: rng.IntN(5), Slack: rng.IntN(4)}
		if rng.IntN(3) == 0 {
			o.MaxDelay = time.Duration(rng.Int64N(int64(6 * interval)))
		}
		l := gcraLeaky(t, Every(interval), o)
		spec := gcraSpec{capacity: int64(o.Slack + 1), interval: int64(interval), wait: leakyWait(o, int64(interval))}
		if err := exerciseGCRA(l, spec, randomGCRAOps(rng, 24)); err != nil {
			t.Fatalf("schedule %d (interval %v, %+v): %v", i, interval, o, err)
		}
	}
}

// leakyWait is the documented queue bound: Queue intervals, or MaxDelay
// when it is set and tighter, or no bound (the largest int64) when both are
// zero.
func leakyWait(o LeakyOptions, interval int64) int64 {
	wait := int64(math.MaxInt64)
	if o.Queue > 0 {
		wait = int64(o.Queue) * (interval + quickest.Cap(maxMargin(interval)) + int64(time.Millisecond)) // a queued slot may stretch
	}
	if md := int64(o.MaxDelay); md > 0 && md < wait {
		wait = md
	}
	return wait
}

// FuzzLeakyBucket runs fuzzed operation sequences on fuzzed pacers,
// including ones whose arithmetic would overflow, and checks the invariants
// of TestLeakyBucketPromise.
func FuzzLeakyBucket(f *testing.F) {
	f.Add([]byte{3, 0, 0, 2, 0, 3, 1, 3, 9, 4, 0, 2, 7, 1, 2, 3, 4, 1})
	f.Add([]byte{1, 1, 3, 1, 2, 3, 0, 3, 0, 4, 1, 1, 5, 4, 7, 2, 0, 3, 1})
	f.Add([]byte{5, 0, 0, 0xF5, 9, 3, 0, 3, 0, 3, 0, 5, 3})     // 73-year slots: overflow
	f.Add([]byte{4, 2, 0xF3, 0xF9, 0, 3, 2, 1, 200, 2, 9})      // huge slack and queue: config error
	f.Add([]byte{2, 0, 2, 3, 40, 3, 1, 3, 2, 4, 0, 4, 1, 0, 3}) // max delay, cancels
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 5 {
			return
		}
		r, interval := gcraFuzzRate(data[0], data[1])
		o := LeakyOptions{Slack: gcraFuzzSize(data[2]), Queue: gcraFuzzSize(data[3])}
		if data[4] != 0 {
			o.MaxDelay = time.Duration(data[4]) * time.Duration(interval) / 16
		}
		l, err := NewShaper(LeakyBucket(r, o))
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("NewShaper(LeakyBucket(%v, %+v)) = %v, want a config error", r, o, err)
			}
			return
		}
		ops := decodeGCRAOps(data[5:])
		ops = ops[:min(len(ops), gcraMaxFuzzOps)]
		spec := gcraSpec{capacity: int64(o.Slack) + 1, interval: interval, wait: leakyWait(o, interval)}
		if err := exerciseGCRA(l, spec, ops); err != nil {
			t.Fatalf("%v %+v: %v", r, o, err)
		}
	})
}

func BenchmarkLeakyBucketAllow(b *testing.B) {
	l := gcraLeaky(b, PerSecond(1_000_000), LeakyOptions{Queue: 100})
	b.ReportAllocs()
	for b.Loop() {
		l.Allow()
	}
}

func BenchmarkLeakyBucketAllowParallel(b *testing.B) {
	l := gcraLeaky(b, PerSecond(1_000_000), LeakyOptions{Queue: 100})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Allow()
		}
	})
}

func BenchmarkLeakyBucketReserveAt(b *testing.B) {
	l := gcraLeaky(b, PerSecond(1_000_000), LeakyOptions{Queue: 100})
	now := gcraT0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Microsecond) // one slot's worth: delays stay zero
		if _, err := l.ReserveAt(now, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLeakyBucketReserveAtParallel(b *testing.B) {
	l := gcraLeaky(b, PerSecond(1_000_000), LeakyOptions{Queue: 100})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := gcraT0
		for pb.Next() {
			now = now.Add(time.Microsecond)
			l.ReserveAt(now, 1, 0) // refusals when the queue is full are part of the cost
		}
	})
}

// TestLeakyFreshSlackIsWhole: a fresh pacer with Slack 2 at 10/s lets 3
// requests through at once, then one every 100 ms; uber-go/ratelimit's
// WithSlack(2) starts with no slack instead (0, 100 ms, 200 ms), as
// LeakyBucket's doc says.
func TestLeakyFreshSlackIsWhole(t *testing.T) {
	s, err := NewShaper(LeakyBucket(PerSecond(10), LeakyOptions{Slack: 2}))
	require.NoError(t, err)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []time.Duration
	for range 5 {
		r, err := s.ReserveAt(t0, 1, 0)
		require.NoError(t, err)
		got = append(got, r.Delay)
	}
	assert.Equal(t, []time.Duration{0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond}, got)
}

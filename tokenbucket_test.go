package pace

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// bucketStep is one AllowAt call at gcraT0+at and its right answer.
type bucketStep struct {
	at   time.Duration
	want bool
}

func runBucketSteps(t *testing.T, b *Shaper, steps []bucketStep) {
	t.Helper()
	for i, s := range steps {
		if got := b.AllowAt(gcraAt(s.at), 1); got != s.want {
			t.Errorf("step %d: AllowAt(%v, 1) = %v, want %v", i, s.at, got, s.want)
		}
	}
}

// repeatStep returns k steps at the same instant: the first ok admitted, the
// rest refused.
func repeatStep(at time.Duration, k, ok int) []bucketStep {
	steps := make([]bucketStep, k)
	for i := range steps {
		steps[i] = bucketStep{at: at, want: i < ok}
	}
	return steps
}

// TestTokenBucketRightValues: the right values of issue 2, item 3.
func TestTokenBucketRightValues(t *testing.T) {
	t.Run("rate 2/s capacity 5", func(t *testing.T) {
		// 8 calls at 0: 5 admitted, 3 refused; at 1.1s 2.2 tokens: 2 admitted.
		steps := append(repeatStep(0, 8, 5), repeatStep(1100*time.Millisecond, 3, 2)...)
		runBucketSteps(t, gcraBucket(t, PerSecond(2), 5), steps)
	})
	t.Run("rate 1/s capacity 2", func(t *testing.T) {
		steps := append(repeatStep(0, 3, 2), repeatStep(3*time.Second, 3, 2)...)
		runBucketSteps(t, gcraBucket(t, PerSecond(1), 2), steps)
	})
	t.Run("rate 1/s capacity 60 after an idle hour", func(t *testing.T) {
		b := gcraBucket(t, PerSecond(1), 60)
		start := time.Hour // the bucket was created, then idle for an hour
		steps := repeatStep(start, 100, 60)
		for s := 1; s <= 60; s++ {
			steps = append(steps, bucketStep{at: start + time.Duration(s)*time.Second, want: true})
		}
		steps = append(steps, bucketStep{at: start + 60*time.Second, want: false})
		admitted := 0
		for i, s := range steps {
			got := b.AllowAt(gcraAt(s.at), 1)
			if got != s.want {
				t.Errorf("step %d: AllowAt(%v, 1) = %v, want %v", i, s.at, got, s.want)
			}
			if got {
				admitted++
			}
		}
		if admitted != 120 {
			t.Errorf("admitted %d, want 120 (60 + 60)", admitted)
		}
	})
}

// TestTokenBucketReserveAt: reservations queue behind each other at exactly
// one interval, and tokensAt shows the debt.
func TestTokenBucketReserveAt(t *testing.T) {
	b := gcraBucket(t, PerSecond(2), 2)
	want := []time.Duration{0, 0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	for i, w := range want {
		if r := gcraReserve(t, b, gcraT0, 1); r.Delay != w {
			t.Errorf("reservation %d: delay %v, want %v", i, r.Delay, w)
		}
	}
	if got := tokensAt(b, gcraT0); got != -3 {
		t.Errorf("tokens(T) = %v, want -3", got)
	}
	if got := tokensAt(b, gcraAt(2250*time.Millisecond)); got != 1.5 {
		t.Errorf("tokens(T+2.25s) = %v, want 1.5", got)
	}
	r := gcraReserve(t, b, gcraT0, 2) // two at once wait for two tokens
	if r.Delay != 2500*time.Millisecond {
		t.Errorf("ReserveAt(T, 2) delay %v, want 2.5s", r.Delay)
	}
}

// TestTokenBucketCancelInReverse is thrasher-corp/gocryptotrader#2371: reserving three tokens at T with burst 1
// and cancelling them, latest first, gives the bucket back exactly, so one
// token is available at T again (x/time/rate left -6e-8 tokens at 60/s).
func TestTokenBucketCancelInReverse(t *testing.T) {
	for _, n := range []int{60, 30, 100} {
		t.Run(PerSecond(n).String(), func(t *testing.T) {
			T := gcraAt(time.Minute)
			reverse := gcraBucket(t, PerSecond(n), 1)
			rs := make([]Reservation, 3)
			for i := range rs {
				rs[i] = gcraReserve(t, reverse, T, 1)
			}
			if rs[1].Delay <= 0 || rs[2].Delay <= rs[1].Delay {
				t.Fatalf("delays %v, %v, %v: want the 2nd and 3rd in the future", rs[0].Delay, rs[1].Delay, rs[2].Delay)
			}
			for i := len(rs) - 1; i >= 0; i-- {
				reverse.CancelAt(T, rs[i])
			}
			if got := tokensAt(reverse, T); got != 1 {
				t.Errorf("tokens(T) after cancelling in reverse = %v, want exactly 1", got)
			}
			if !reverse.AllowAt(T, 1) {
				t.Errorf("AllowAt(T, 1) after cancelling in reverse = false, want true")
			}

			// Forward order: while the later reservations are held, the
			// earlier slots are not given to new requests (each later one
			// was scheduled behind them); the last cancel frees its own
			// slot, so nobody waits longer than that reservation would have.
			forward := gcraBucket(t, PerSecond(n), 1)
			for i := range rs {
				rs[i] = gcraReserve(t, forward, T, 1)
			}
			for _, r := range rs {
				forward.CancelAt(T, r)
			}
			next := gcraReserve(t, forward, T, 1)
			if next.Delay != rs[2].Delay {
				t.Errorf("after cancelling in forward order, ReserveAt(T) delay %v, want %v (the last cancelled slot)", next.Delay, rs[2].Delay)
			}
		})
	}
}

// TestTokenBucketBurstZero is xanzy/go-gitlab#1837: burst 0 is a construction error naming
// Burst, never a bucket that refuses or admits everything; burst 1 at 2/s
// releases 10 sequential Waits at 0, 0.5s, …, 4.5s.
func TestTokenBucketBurstZero(t *testing.T) {
	b, err := NewShaper(TokenBucket(PerSecond(2), 0))
	var ce *ConfigError
	if b != nil || !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != "Burst" {
		t.Fatalf("NewShaper(TokenBucket(2/s, 0)) = %v, %v; want nil and a *ConfigError naming Burst", b, err)
	}
	if err := TokenBucket(PerSecond(2), 0).Err(); !errors.As(err, &ce) || ce.Field != "Burst" {
		t.Fatalf("TokenBucket(2/s, 0).Err() = %v, want a *ConfigError naming Burst", err)
	}
	synctest.Test(t, func(t *testing.T) {
		b := gcraBucket(t, PerSecond(2), 1)
		start := time.Now()
		for i := range 10 {
			if err := b.Wait(context.Background(), 0); err != nil {
				t.Fatalf("Wait %d: %v", i, err)
			}
			if got, want := time.Since(start), time.Duration(i)*500*time.Millisecond; got != want {
				t.Errorf("Wait %d returned at %v, want %v", i, got, want)
			}
		}
	})
}

// TestTokenBucketWaitDeadline: a wait that would outlast the deadline fails
// at once with an error matching ErrWaitExceedsDeadline, DeadlineExceeded
// and ErrRateLimited, and leaves the bucket as it was.
func TestTokenBucketWaitDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := gcraBucket(t, PerSecond(1), 1)
		if !b.Allow() {
			t.Fatal("Allow on a fresh bucket = false")
		}
		before := gcraCell(b)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := b.Wait(ctx, 0)
		if elapsed := time.Since(start); elapsed != 0 {
			t.Errorf("Wait returned after %v, want at once", elapsed)
		}
		if !errors.Is(err, ErrWaitExceedsDeadline) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrRateLimited) {
			t.Errorf("Wait error = %v, want ErrWaitExceedsDeadline, DeadlineExceeded and ErrRateLimited", err)
		}
		var we *WaitError
		if !errors.As(err, &we) || we.Delay != time.Second {
			t.Errorf("Wait error = %#v, want a *WaitError with Delay 1s", err)
		}
		if gcraCell(b) != before {
			t.Errorf("a refused Wait changed the bucket")
		}
		if r := gcraReserve(t, b, time.Now(), 1); r.Delay != time.Second {
			t.Errorf("next ReserveAt delay %v, want 1s as before the refused Wait", r.Delay)
		}
	})
}

// TestTokenBucketWaitCancel: cancelling the context during a wait returns
// at once with context.Canceled and gives the token back.
func TestTokenBucketWaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := gcraBucket(t, PerSecond(1), 1)
		b.Allow() // the bucket is empty until 1s
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- b.Wait(ctx, 0) }()
		synctest.Wait()
		time.Sleep(300 * time.Millisecond)
		cancel()
		start := time.Now()
		err := <-done
		if elapsed := time.Since(start); elapsed != 0 {
			t.Errorf("Wait returned %v after cancel, want at once", elapsed)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Wait error = %v, want context.Canceled", err)
		}
		// The cancelled waiter held the token due at 1s; it is free again.
		if r := gcraReserve(t, b, time.Now(), 1); r.Delay != 700*time.Millisecond {
			t.Errorf("ReserveAt at 0.3s after the cancel: delay %v, want 700ms", r.Delay)
		}
	})
}

// TestTokenBucketWaitErrors: Wait fails at once on a done context and a
// negative maxWait, and ReserveAt on n <= 0 and n above the burst, booking
// nothing.
func TestTokenBucketWaitErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := gcraBucket(t, PerSecond(1), 2)
		done, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, b.Wait(done, 0), context.Canceled)
		assert.ErrorIs(t, b.Wait(context.Background(), -1), ErrInvalidConfig)
		for n, want := range map[int]error{0: ErrBadCount, 3: ErrBurstExceeded} {
			_, err := b.ReserveAt(time.Now(), n, 0)
			assert.ErrorIs(t, err, want, "ReserveAt(n=%d)", n)
		}
		if gcraCell(b) != (cell{}) {
			t.Errorf("failed Waits booked something")
		}
	})
}

// TestTokenBucketPromise checks the token bucket's promise on 10,000 seeded
// random schedules with random cancels and a clock stepping back: the units
// booked and kept in any closed interval of length L are at most
// burst + ⌊L/interval⌋, and a bucket left alone refills.
func TestTokenBucketPromise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 10_000 {
		interval := gcraIntervals[rng.IntN(len(gcraIntervals))]
		burst := 1 + rng.IntN(6)
		b := gcraBucket(t, Every(interval), burst)
		spec := gcraSpec{capacity: int64(burst), interval: int64(interval), wait: math.MaxInt64}
		if err := exerciseGCRA(b, spec, randomGCRAOps(rng, 24)); err != nil {
			t.Fatalf("schedule %d (interval %v, burst %d): %v", i, interval, burst, err)
		}
	}
}

// FuzzTokenBucket runs fuzzed operation sequences (reserve, allow, cancel,
// time forward and backward, jumps) on fuzzed configurations, including
// ones whose arithmetic would overflow, and checks the same invariants as
// TestTokenBucketPromise.
func FuzzTokenBucket(f *testing.F) {
	f.Add([]byte{3, 0, 2, 3, 1, 3, 9, 4, 0, 2, 7, 1, 2, 3, 4, 1})
	f.Add([]byte{0, 1, 1, 3, 0, 3, 0, 4, 1, 1, 5, 4, 7, 2, 0, 3, 1})
	f.Add([]byte{5, 0, 0, 3, 0, 3, 0, 3, 0, 3, 0, 5, 3}) // 73-year tokens: overflow
	f.Add([]byte{4, 2, 0xF3, 2, 0, 3, 2, 1, 200, 2, 9})  // huge burst at 1/h: config error
	f.Add([]byte{2, 0, 4, 3, 1, 3, 2, 4, 0, 4, 1, 0, 3}) // cancels
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		r, interval := gcraFuzzRate(data[0], data[1])
		burst := gcraFuzzSize(data[2])
		b, err := NewShaper(TokenBucket(r, burst))
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("NewShaper(TokenBucket(%v, %d)) = %v, want a config error", r, burst, err)
			}
			return
		}
		ops := decodeGCRAOps(data[3:])
		ops = ops[:min(len(ops), gcraMaxFuzzOps)]
		spec := gcraSpec{capacity: int64(burst), interval: interval, wait: math.MaxInt64}
		if err := exerciseGCRA(b, spec, ops); err != nil {
			t.Fatalf("%v burst %d: %v", r, burst, err)
		}
	})
}

func BenchmarkTokenBucketAllow(b *testing.B) {
	tb := gcraBucket(b, PerSecond(1_000_000), 100)
	b.ReportAllocs()
	for b.Loop() {
		tb.Allow()
	}
}

func BenchmarkTokenBucketAllowParallel(b *testing.B) {
	tb := gcraBucket(b, PerSecond(1_000_000), 100)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tb.Allow()
		}
	})
}

func BenchmarkTokenBucketReserveAt(b *testing.B) {
	tb := gcraBucket(b, PerSecond(1_000_000), 100)
	now := gcraT0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Microsecond) // one token's worth: delays stay zero
		if _, err := tb.ReserveAt(now, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTokenBucketReserveAtParallel(b *testing.B) {
	tb := gcraBucket(b, PerSecond(1_000_000), 100)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := gcraT0
		for pb.Next() {
			now = now.Add(time.Microsecond)
			if r, err := tb.ReserveAt(now, 1, 0); err == nil && r.Delay > time.Millisecond {
				tb.CancelAt(now, r) // keep the queue short
			}
		}
	})
}

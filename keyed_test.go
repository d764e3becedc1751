package pace

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// every returns a token bucket of burst units that refills one unit every
// interval.
func every(interval time.Duration, burst int) Limit { return TokenBucket(Every(interval), burst) }

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns the instant d after t0.
func at(d time.Duration) time.Time { return t0.Add(d) }

func newTestKeyed(tb testing.TB, l Limit, o KeyedOptions) *Keyed {
	tb.Helper()
	k, err := NewKeyed(l, o)
	if err != nil {
		tb.Fatalf("NewKeyed(%v, %+v): %v", l, o, err)
	}
	return k
}

// drain counts the units AllowAt grants key at now, one at a time, up to max.
func drain(k *Keyed, now time.Time, key string, max int) int {
	n := 0
	for n < max && k.AllowAt(now, key, 1) {
		n++
	}
	return n
}

// reserve calls k.ReserveAt and fails the test on an error.
func reserve(t *testing.T, k *Keyed, now time.Time, key string, n int) Reservation {
	t.Helper()
	r, err := k.ReserveAt(now, key, n, 0)
	if err != nil {
		t.Fatalf("ReserveAt(%v, %q, %d): %v", now, key, n, err)
	}
	return r
}

// wantLen checks k.Len().
func wantLen(t *testing.T, k *Keyed, want int) {
	t.Helper()
	if got := k.Len(); got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
}

// wantPaused checks k.PausedUntil(key); the zero want means no pause.
func wantPaused(t *testing.T, k *Keyed, key string, want time.Time) {
	t.Helper()
	if got := k.PausedUntil(key); !got.Equal(want) {
		t.Errorf("PausedUntil(%q) = %v, want %v", key, got, want)
	}
}

// wantWaitError checks that err is a *WaitError for key with delay that
// matches every target.
func wantWaitError(t *testing.T, err error, key string, delay time.Duration, targets ...error) {
	t.Helper()
	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("error = %v, want a *WaitError", err)
	}
	if we.Key != key || we.Delay != delay {
		t.Errorf("WaitError{Key: %q, Delay: %v}, want {%q, %v}", we.Key, we.Delay, key, delay)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Errorf("error = %v, want it to match %v", err, target)
		}
	}
}

// since returns the fake time elapsed since start inside a synctest bubble.
func wantElapsed(t *testing.T, start time.Time, want time.Duration, what string) {
	t.Helper()
	if got := time.Since(start); got != want {
		t.Errorf("%s: elapsed %v, want %v", what, got, want)
	}
}

func TestNewKeyed(t *testing.T) {
	tests := []struct {
		name         string
		l            Limit
		maxKeys      int
		wantErrField string // "" for no error
		wantShards   int
		wantPerShard int
	}{
		{"defaults", every(time.Second, 1), 0, "", maxShards, DefaultMaxKeys / maxShards},
		{"zero limit", Limit{}, 0, "", maxShards, DefaultMaxKeys / maxShards},
		{"one key", every(time.Second, 1), 1, "", 1, 1},
		{"small cap uses fewer shards", every(time.Second, 1), 1000, "", 8, 125},
		{"rounding up", every(time.Second, 1), 1001, "", 8, 126},
		{"negative MaxKeys", every(time.Second, 1), -1, "MaxKeys", 0, 0},
		{"invalid rate", TokenBucket(PerSecond(0), 1), 0, "Rate.N", 0, 0},
		{"burst 0 (xanzy/go-gitlab#1837)", TokenBucket(PerSecond(2), 0), 0, "Burst", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := NewKeyed(tt.l, KeyedOptions{MaxKeys: tt.maxKeys})
			if tt.wantErrField != "" {
				var ce *ConfigError
				if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != tt.wantErrField || k != nil {
					t.Fatalf("NewKeyed = %v, %v; want nil and a *ConfigError for %s", k, err, tt.wantErrField)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewKeyed: %v", err)
			}
			if len(k.shards) != tt.wantShards || k.perShard != tt.wantPerShard {
				t.Errorf("shards, per shard = %d, %d; want %d, %d", len(k.shards), k.perShard, tt.wantShards, tt.wantPerShard)
			}
			used := make(map[*shard]bool)
			for i := range 10_000 {
				s, _ := k.locate(strconv.Itoa(i))
				used[s] = true
			}
			if len(used) != len(k.shards) {
				t.Errorf("10,000 keys used %d of %d shards", len(used), len(k.shards))
			}
		})
	}
}

func TestKeyedShardSize(t *testing.T) {
	// A shard fills whole cache lines so that neighbours never share one.
	if got := unsafe.Sizeof(shard{}); got%64 != 0 {
		t.Errorf("unsafe.Sizeof(shard{}) = %d, want a multiple of 64", got)
	}
}

func TestKeyedPerKeyIndependence(t *testing.T) {
	k := newTestKeyed(t, every(time.Second, 3), KeyedOptions{})
	wantLen(t, k, 0)
	if got := drain(k, t0, "a", 10); got != 3 {
		t.Errorf("a at 0s: %d granted, want 3", got)
	}
	wantLen(t, k, 1)
	if got := drain(k, t0, "b", 10); got != 3 {
		t.Errorf("b at 0s: %d granted, want 3 (untouched by a)", got)
	}
	wantLen(t, k, 2)
	if got := drain(k, at(time.Second), "a", 10); got != 1 {
		t.Errorf("a at 1s: %d granted, want 1", got)
	}
	// Refused requests create no state.
	if k.AllowAt(t0, "c", 4) {
		t.Error("AllowAt(c, 4) = true above the burst")
	}
	if _, err := k.ReserveAt(t0, "d", 0, 0); !errors.Is(err, ErrBadCount) {
		t.Errorf("ReserveAt(d, 0) error = %v, want ErrBadCount", err)
	}
	wantLen(t, k, 2)
}

func TestKeyedReserveAt(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		maxWait   time.Duration
		wantDelay time.Duration
		wantErr   error
	}{
		{"within burst", 1, 0, 0, nil},
		{"waits for units", 3, 0, 2 * time.Second, nil},
		{"maxWait equal to the wait", 3, 2 * time.Second, 2 * time.Second, nil},
		{"maxWait shorter than the wait", 3, time.Second, 2 * time.Second, ErrWaitTooLong},
		{"above burst", 4, 0, 0, ErrBurstExceeded},
		{"zero units", 0, 0, 0, ErrBadCount},
		{"negative units", -1, 0, 0, ErrBadCount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newTestKeyed(t, every(time.Second, 3), KeyedOptions{})
			reserve(t, k, t0, "a", 2) // one unit left
			r, err := k.ReserveAt(t0, "a", tt.n, tt.maxWait)
			if !errors.Is(err, tt.wantErr) || r.Delay != tt.wantDelay {
				t.Errorf("ReserveAt(%d, %v) = %v, %v; want %v, %v", tt.n, tt.maxWait, r.Delay, err, tt.wantDelay, tt.wantErr)
			}
			if err != nil && !k.AllowAt(t0, "a", 1) {
				t.Error("a refusal booked units")
			}
		})
	}
}

func TestKeyedCancelAt(t *testing.T) {
	k := newTestKeyed(t, every(time.Second, 1), KeyedOptions{})
	reserve(t, k, t0, "a", 1)
	r := reserve(t, k, t0, "a", 1)
	k.CancelAt(t0, "a", r)
	if got := reserve(t, k, t0, "a", 1).Delay; got != time.Second {
		t.Errorf("after CancelAt the next Delay = %v, want 1s (the cancelled slot)", got)
	}
	k.CancelAt(t0, "a", Reservation{}) // gives nothing back
	if got := reserve(t, k, t0, "a", 1).Delay; got != 2*time.Second {
		t.Errorf("after cancelling the zero Reservation the next Delay = %v, want 2s", got)
	}
}

func TestKeyedPause(t *testing.T) {
	k := newTestKeyed(t, every(time.Second, 2), KeyedOptions{})
	wantPaused(t, k, "a", time.Time{})
	k.PauseUntil("a", at(5*time.Second))
	wantPaused(t, k, "a", at(5*time.Second))
	k.PauseUntil("a", at(3*time.Second)) // never shortens
	wantPaused(t, k, "a", at(5*time.Second))
	k.PauseUntil("a", at(7*time.Second)) // extends
	wantPaused(t, k, "a", at(7*time.Second))
	wantPaused(t, k, "b", time.Time{})
	wantLen(t, k, 1)

	if k.AllowAt(at(6*time.Second), "a", 1) {
		t.Error("AllowAt = true while paused")
	}
	if !k.AllowAt(at(6*time.Second), "b", 1) {
		t.Error("AllowAt(b) = false: pauses are per key")
	}
	now := at(6 * time.Second)
	if _, err := k.ReserveAt(now, "a", 1, 999*time.Millisecond); !errors.Is(err, ErrWaitTooLong) {
		t.Errorf("ReserveAt with maxWait 999ms, 1s before the pause ends: error = %v, want ErrWaitTooLong", err)
	}
	if r, err := k.ReserveAt(now, "a", 1, time.Second); err != nil || r.Delay != time.Second {
		t.Errorf("ReserveAt(a, 1, maxWait 1s) = %v, %v; want 1s (the pause)", r.Delay, err)
	}
	if r := reserve(t, k, now, "a", 2); r.Delay != 2*time.Second {
		t.Errorf("ReserveAt(a, 2) = %v, want 2s (the limit after the pause)", r.Delay)
	}
	if !k.AllowAt(at(10*time.Second), "a", 1) {
		t.Error("AllowAt(a, 10s) = false after the pause and the bookings")
	}
}

func TestKeyedPauseNoLimit(t *testing.T) {
	k := newTestKeyed(t, Limit{}, KeyedOptions{})
	if got := drain(k, t0, "a", 100); got != 100 {
		t.Errorf("zero Limit granted %d of 100", got)
	}
	wantLen(t, k, 0)
	k.PauseUntil("a", at(time.Minute))
	if k.AllowAt(at(time.Second), "a", 1) {
		t.Error("AllowAt = true while paused")
	}
	if r := reserve(t, k, at(time.Second), "a", 1); r.Delay != 59*time.Second {
		t.Errorf("ReserveAt during the pause: Delay %v, want 59s", r.Delay)
	}
	wantLen(t, k, 1)
	if got := k.sweepAt(at(59 * time.Second)); got != 0 {
		t.Errorf("sweepAt(59s) = %d, want 0", got)
	}
	if got := k.sweepAt(at(time.Minute)); got != 1 {
		t.Errorf("sweepAt(60s) = %d, want 1 (the ended pause)", got)
	}
	wantLen(t, k, 0)
	if !k.AllowAt(at(time.Minute), "a", 1) {
		t.Error("AllowAt after the pause = false")
	}
}

func TestKeyedWait(t *testing.T) {
	t.Run("paces and honours the pause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			k := newTestKeyed(t, every(time.Second, 1), KeyedOptions{})
			start := time.Now()
			for i, want := range []time.Duration{0, time.Second} {
				if err := errOf(k.Wait(t.Context(), "a", 0)); err != nil {
					t.Fatal(err)
				}
				wantElapsed(t, start, want, "wait "+strconv.Itoa(i))
			}
			k.PauseUntil("a", start.Add(5*time.Second))
			for i, want := range []time.Duration{5 * time.Second, 6 * time.Second} {
				if err := errOf(k.Wait(t.Context(), "a", 0)); err != nil {
					t.Fatal(err)
				}
				wantElapsed(t, start, want, "wait after pause "+strconv.Itoa(i))
			}
		})
	})
	t.Run("maxWait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			k := newTestKeyed(t, every(time.Second, 1), KeyedOptions{})
			start := time.Now()
			if err := errOf(k.Wait(t.Context(), "a", time.Second)); err != nil {
				t.Fatal(err)
			}
			err := errOf(k.Wait(t.Context(), "a", 999*time.Millisecond))
			wantWaitError(t, err, "a", time.Second, ErrWaitTooLong, ErrRateLimited)
			wantElapsed(t, start, 0, "refusal")

			k.PauseUntil("b", start.Add(2*time.Second))
			err = errOf(k.Wait(t.Context(), "b", time.Second))
			wantWaitError(t, err, "b", 2*time.Second, ErrWaitTooLong) // the pause counts

			if err := errOf(k.Wait(t.Context(), "a", time.Second)); err != nil {
				t.Fatal(err)
			}
			wantElapsed(t, start, time.Second, "the refusal booked nothing")
		})
	})
	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			k := newTestKeyed(t, every(time.Second, 1), KeyedOptions{})
			start := time.Now()
			if err := errOf(k.Wait(t.Context(), "a", 0)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			defer cancel()
			err := errOf(k.Wait(ctx, "a", 0))
			wantWaitError(t, err, "a", time.Second, ErrWaitExceedsDeadline, context.DeadlineExceeded, ErrRateLimited)
			wantElapsed(t, start, 0, "refusal")

			k.PauseUntil("b", start.Add(time.Second))
			err = errOf(k.Wait(ctx, "b", 0))
			wantWaitError(t, err, "b", time.Second, ErrWaitExceedsDeadline) // the pause counts

			if err := errOf(k.Wait(t.Context(), "a", 0)); err != nil {
				t.Fatal(err)
			}
			wantElapsed(t, start, time.Second, "the refusal booked nothing")
		})
	})
	t.Run("cancelled context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			k := newTestKeyed(t, every(time.Second, 1), KeyedOptions{})
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			wantWaitError(t, errOf(k.Wait(ctx, "a", 0)), "a", 0, context.Canceled)
			wantLen(t, k, 0)
		})
	})
	t.Run("a cancelled wait gives its slot back", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			k := newTestKeyed(t, every(time.Second, 1), KeyedOptions{})
			start := time.Now()
			if err := errOf(k.Wait(t.Context(), "a", 0)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() { errc <- errOf(k.Wait(ctx, "a", 0)) }()
			synctest.Wait() // it booked the slot at 1s and sleeps
			cancel()
			wantWaitError(t, <-errc, "a", time.Second, context.Canceled)

			if err := errOf(k.Wait(t.Context(), "a", 0)); err != nil {
				t.Fatal(err)
			}
			wantElapsed(t, start, time.Second, "the next caller gets the cancelled slot")
		})
	})
	t.Run("many waiters are spaced", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			k := newTestKeyed(t, every(100*time.Millisecond, 1), KeyedOptions{})
			start := time.Now()
			var mu sync.Mutex
			released := make(map[time.Duration]int)
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					if err := errOf(k.Wait(t.Context(), "a", 0)); err != nil {
						t.Error(err)
					}
					mu.Lock()
					released[time.Since(start)]++
					mu.Unlock()
				})
			}
			wg.Wait()
			for i := range 20 {
				if d := time.Duration(i) * 100 * time.Millisecond; released[d] != 1 {
					t.Errorf("%d releases at %v, want 1", released[d], d)
				}
			}
		})
	})
}

func TestKeyedWaitAllocs(t *testing.T) {
	k := newTestKeyed(t, every(time.Nanosecond, 1<<30), KeyedOptions{})
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := errOf(k.Wait(ctx, "a", 0)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Wait without waiting: %v allocs, want 0", allocs)
	}
}

// TestKeyedManyKeysTouchedOnce is didip/tollbooth#32: a hundred thousand keys touched once leave at
// most a handful behind after the idle time; a paused key is not evicted.
func TestKeyedManyKeysTouchedOnce(t *testing.T) {
	const keys = 100_000
	tests := []struct {
		name string
		l    Limit // each with a span (idle TTL) of 1s
	}{
		{"token bucket", every(100*time.Millisecond, 10)},
		{"sliding log", SlidingLog(PerSecond(10))},
		{"composite", All(every(100*time.Millisecond, 10), SlidingLog(PerSecond(10)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ttl := time.Duration(tt.l.alg.span())
			if ttl != time.Second {
				t.Fatalf("span %v, want 1s", ttl)
			}
			paused := "host-7.example"
			pauseEnd := at(2*ttl + 3600*time.Second)

			before := heapInUse()
			k := newTestKeyed(t, tt.l, KeyedOptions{})
			for i := range keys {
				if !k.AllowAt(t0, "host-"+strconv.Itoa(i)+".example", 1) {
					t.Fatalf("key %d refused", i)
				}
			}
			wantLen(t, k, keys)
			grown := heapInUse()

			k.PauseUntil(paused, pauseEnd)
			if got := k.sweepAt(at(2 * ttl)); got != keys-1 {
				t.Errorf("sweepAt = %d, want %d", got, keys-1)
			}
			after := heapInUse()

			wantLen(t, k, 1) // at most 10; here exactly the paused key
			wantPaused(t, k, paused, pauseEnd)
			if k.AllowAt(at(3*ttl), paused, 1) {
				t.Error("AllowAt(paused) = true")
			}
			k.sweepAt(at(time.Hour))
			wantPaused(t, k, paused, pauseEnd)
			wantLen(t, k, 1)

			t.Logf("heap: baseline %d B; with %d keys %+d B; after the sweep %+d B",
				before, keys, int64(grown-before), int64(after)-int64(before))
			if d := int64(after) - int64(before); d > 10<<20 {
				t.Errorf("heap after the sweep is %d B above the baseline, want at most 10 MB", d)
			}
			if d := int64(after) - int64(before); d > 1<<20 {
				t.Errorf("heap after the sweep is %d B above the baseline: emptied maps should be rebuilt, not kept at their peak size", d)
			}
			if grown-before < 2<<20 {
				t.Errorf("%d keys took only %d B: the measurement is broken", keys, grown-before)
			}
			runtime.KeepAlive(k)
		})
	}
}

// heapInUse returns the bytes of live heap objects after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestKeyedEvictOnAccess(t *testing.T) {
	k := newTestKeyed(t, every(100*time.Millisecond, 10), KeyedOptions{}) // span 1s
	for i := range 10_000 {
		k.AllowAt(t0, "old-"+strconv.Itoa(i), 1)
	}
	// After the idle time, touch every shard once, with new keys only.
	seen := make(map[*shard]bool)
	probes := 0
	for ; len(seen) < len(k.shards); probes++ {
		key := "new-" + strconv.Itoa(probes)
		s, _ := k.locate(key)
		seen[s] = true
		k.AllowAt(at(2*time.Second), key, 1)
	}
	wantLen(t, k, probes) // every old key forgotten without an explicit sweep

	// Within the sweep interval nothing more is swept on access.
	for i := range 100 {
		k.AllowAt(at(2*time.Second+500*time.Millisecond), "later-"+strconv.Itoa(i), 1)
	}
	wantLen(t, k, probes+100)
}

// TestKeyedNeverEvictsBusy checks that an entry that is not idle is never
// evicted, which would reset its limit (ELares/IronTraffic#217).
func TestKeyedNeverEvictsBusy(t *testing.T) {
	k := newTestKeyed(t, every(time.Second, 10), KeyedOptions{})
	drain(k, t0, "busy", 100)
	k.AllowAt(t0, "light", 1)
	for _, step := range []struct {
		now  time.Duration
		want int
	}{
		{time.Second - 1, 0}, // light is full again at 1s, busy at 10s
		{time.Second, 1},
		{5 * time.Second, 0},
	} {
		if got := k.sweepAt(at(step.now)); got != step.want {
			t.Errorf("sweepAt(%v) = %d, want %d", step.now, got, step.want)
		}
	}
	wantLen(t, k, 1)
	if got := drain(k, at(5*time.Second), "busy", 100); got != 5 {
		t.Errorf("busy at 5s: %d granted, want 5 (its refill, not a fresh 10)", got)
	}
	if got := k.sweepAt(at(15*time.Second - 1)); got != 0 {
		t.Errorf("sweepAt(15s-1ns) = %d, want 0", got)
	}
	if got := k.sweepAt(at(15 * time.Second)); got != 1 {
		t.Errorf("sweepAt(15s) = %d, want 1", got)
	}
	wantLen(t, k, 0)
}

// TestKeyedMatchesIndependentLimits checks on random schedules that a Keyed
// decides exactly as one separate limiter per key that is never evicted:
// eviction forgets only state that behaves like a fresh one.
func TestKeyedMatchesIndependentLimits(t *testing.T) {
	limits := []Limit{
		TokenBucket(Every(100*time.Millisecond), 3),
		LeakyBucket(PerSecond(10), LeakyOptions{Queue: 3, Slack: 1}),
		FixedWindow(PerSecond(4)),
		SlidingLog(Rate{N: 3, Per: 300 * time.Millisecond}),
		SlidingCounter(PerSecond(5)),
		All(TokenBucket(Every(100*time.Millisecond), 3), SlidingLog(Rate{N: 5, Per: time.Second})),
	}
	keys := []string{"a", "b", "c", "d", "e"}
	rng := rand.New(rand.NewPCG(1, 2))
	evicted := 0
	for _, l := range limits {
		span := time.Duration(l.alg.span())
		for schedule := range 400 {
			k := newTestKeyed(t, l, KeyedOptions{})
			ref := make(map[string]*Shaper)
			kres := make(map[string]Reservation)
			rres := make(map[string]Reservation)
			now := t0
			for step := range 60 {
				if rng.IntN(3) > 0 {
					now = now.Add(time.Duration(rng.Int64N(int64(2 * span))))
				}
				key := keys[rng.IntN(len(keys))]
				if ref[key] == nil {
					ref[key] = mustShaper(t, l)
				}
				n := 1 + rng.IntN(l.alg.maxN()+1) // sometimes one too many
				switch op := rng.IntN(10); {
				case op < 4:
					got, want := k.AllowAt(now, key, n), ref[key].AllowAt(now, n)
					if got != want {
						t.Fatalf("%v schedule %d step %d: AllowAt(%v, %s, %d) = %v, want %v", l, schedule, step, now.Sub(t0), key, n, got, want)
					}
				case op < 8:
					got, gotErr := k.ReserveAt(now, key, n, 0)
					want, wantErr := ref[key].ReserveAt(now, n, 0)
					if got.Delay != want.Delay || !errors.Is(gotErr, wantErr) {
						t.Fatalf("%v schedule %d step %d: ReserveAt(%v, %s, %d) = %v, %v; want %v, %v", l, schedule, step, now.Sub(t0), key, n, got.Delay, gotErr, want.Delay, wantErr)
					}
					kres[key], rres[key] = got, want
				case op < 9:
					k.CancelAt(now, key, kres[key])
					ref[key].CancelAt(now, rres[key])
					delete(kres, key)
					delete(rres, key)
				default:
					evicted += k.sweepAt(now)
				}
			}
		}
	}
	if evicted < 1000 {
		t.Errorf("only %d keys evicted: the schedules do not exercise eviction", evicted)
	}
}

// TestKeyedClockBackAfterEviction checks that a now earlier than a sweep
// cannot use the eviction to mint units.
func TestKeyedClockBackAfterEviction(t *testing.T) {
	k := newTestKeyed(t, every(time.Second, 10), KeyedOptions{})
	drain(k, at(100*time.Second), "a", 100)
	if got := k.sweepAt(at(200 * time.Second)); got != 1 {
		t.Fatalf("sweepAt(200s) = %d, want 1", got)
	}
	got := drain(k, at(105*time.Second), "a", 100) // the clock steps back
	got += drain(k, at(200*time.Second), "a", 100)
	if got != 10 {
		t.Errorf("granted at 105s (a step back) and then at 200s: %d, want 10", got)
	}
}

func TestKeyedMaxKeys(t *testing.T) {
	const maxKeys, keys, burst = 1000, 100_000, 100
	k := newTestKeyed(t, every(10*time.Second, burst), KeyedOptions{MaxKeys: maxKeys})
	admitted := 0
	for i := range keys {
		if k.AllowAt(t0, "k"+strconv.Itoa(i), 1) {
			admitted++
		}
		if i%1000 == 0 && k.Len() > maxKeys {
			t.Fatalf("after %d keys Len() = %d, above MaxKeys %d", i+1, k.Len(), maxKeys)
		}
	}
	wantLen(t, k, maxKeys)
	if admitted != keys {
		t.Errorf("admitted %d, want %d: past MaxKeys a new key evicts another and gets its own limit", admitted, keys)
	}

	// Once the tracked keys are idle again (at 10s), a full shard is swept
	// on access, well before the routine sweep (span 1000s): new keys take
	// the room of idle ones.
	fresh := 0
	for i := range 200 {
		if k.AllowAt(at(20*time.Second), "fresh"+strconv.Itoa(i), 2) {
			fresh++
		}
	}
	if fresh != 200 {
		t.Errorf("fresh keys admitted: %d, want 200", fresh)
	}
	if k.Len() > maxKeys {
		t.Errorf("Len() = %d, above MaxKeys %d", k.Len(), maxKeys)
	}
}

// TestKeyedMaxKeysPause: past MaxKeys a new key evicts one that is not
// paused; only when every key of the shard is paused do new keys share the
// overflow limit and pause.
func TestKeyedMaxKeysPause(t *testing.T) {
	k := newTestKeyed(t, every(time.Hour, 1), KeyedOptions{MaxKeys: 1})
	if !k.AllowAt(t0, "a", 1) || !k.AllowAt(t0, "b", 1) {
		t.Fatal("first use of a or b (which evicts a) refused")
	}
	wantLen(t, k, 1)
	k.PauseUntil("b", at(time.Minute)) // b cannot be evicted now
	if !k.AllowAt(t0, "c", 1) {
		t.Error("AllowAt(c) = false: the first overflow key has the overflow's burst")
	}
	if k.AllowAt(t0, "d", 1) {
		t.Error("AllowAt(d) = true: overflow keys share one limit")
	}
	k.PauseUntil("d", at(2*time.Minute))
	wantPaused(t, k, "e", at(2*time.Minute)) // overflow keys share the pause
	wantPaused(t, k, "b", at(time.Minute))   // the tracked key keeps its own
	wantLen(t, k, 1)
}

func TestKeyedOverflowWaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newTestKeyed(t, every(time.Second, 1), KeyedOptions{MaxKeys: 1})
		start := time.Now()
		for _, key := range []string{"a", "b"} { // a is tracked, b overflows
			if err := errOf(k.Wait(t.Context(), key, 0)); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- errOf(k.Wait(ctx, "c", 0)) }() // overflow slot at 1s
		synctest.Wait()
		cancel()
		wantWaitError(t, <-errc, "c", time.Second, context.Canceled)
		if err := errOf(k.Wait(t.Context(), "d", 0)); err != nil {
			t.Fatal(err)
		}
		wantElapsed(t, start, time.Second, "the next overflow key gets the cancelled slot")
		wantLen(t, k, 1)
	})
}

func TestKeyedContention(t *testing.T) {
	const (
		goroutines = 16
		calls      = 300
		keys       = 4
		burst      = 50
	)
	k := newTestKeyed(t, every(time.Hour, burst), KeyedOptions{})
	var admitted [keys + 1]atomic.Int64 // the last is the key all goroutines share
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				j := (g + i) % keys
				if k.AllowAt(t0, "key"+strconv.Itoa(j), 1) {
					admitted[j].Add(1)
				}
				if k.AllowAt(t0, "shared", 1) {
					admitted[keys].Add(1)
				}
				if i%50 == 0 {
					k.sweepAt(t0)
				}
			}
		})
	}
	wg.Wait()
	for j := range admitted {
		if got := admitted[j].Load(); got != burst {
			t.Errorf("key %d: %d admitted, want %d", j, got, burst)
		}
	}
	wantLen(t, k, keys+1)
}

// maxInWindow returns the most releases any half-open window [t, t+w)
// holds.
func maxInWindow(releases []time.Duration, w time.Duration) int {
	r := slices.Clone(releases)
	slices.Sort(r)
	most, lo := 0, 0
	for hi := range r {
		for r[hi]-r[lo] >= w {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

// releases runs callers goroutines that each call k.Wait for key once, and
// then again for as long as less than stop has passed since start, and
// returns the instants (since start) at which the waits returned. It must
// run inside a synctest bubble.
func releases(t *testing.T, k *Keyed, key string, callers int, start time.Time, stop time.Duration) []time.Duration {
	var mu sync.Mutex
	var got []time.Duration
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for first := true; first || time.Since(start) < stop; first = false {
				if err := errOf(k.Wait(t.Context(), key, 0)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got = append(got, time.Since(start))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return got
}

// TestKeyedManyWaiters is Embassy-of-the-Free-Mind/sourcelibrary-v2#4396: 60 callers waiting at once for a key
// limited to 5/s are released no more than 5 in any second.
func TestKeyedManyWaiters(t *testing.T) {
	tests := []struct {
		name     string
		l        Limit
		wantMax  int           // most releases in any [t, t+1s)
		wantDone time.Duration // when the last of the 60 is released
	}{
		{"sliding log", SlidingLog(PerSecond(5)), 5, 11 * time.Second},
		{"leaky pacer", LeakyBucket(PerSecond(5), LeakyOptions{Queue: 60}), 5, 11800 * time.Millisecond},
		{"token bucket burst 1", TokenBucket(PerSecond(5), 1), 5, 11800 * time.Millisecond},
		// The failure the report describes: a bucket whose burst equals its rate
		// admits burst + rate·1s - 1 = 9 in the first second.
		{"token bucket burst 5 (too loose)", TokenBucket(PerSecond(5), 5), 9, 11 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := newTestKeyed(t, tt.l, KeyedOptions{})
				start := time.Now()
				got := releases(t, k, "api.example.com", 60, start, 0) // one Wait each
				if len(got) != 60 {
					t.Fatalf("%d releases, want 60", len(got))
				}
				if most := maxInWindow(got, time.Second); most != tt.wantMax {
					t.Errorf("most releases in a [t, t+1s) window = %d, want %d", most, tt.wantMax)
				}
				if done := slices.Max(got); done != tt.wantDone {
					t.Errorf("last release at %v, want %v", done, tt.wantDone)
				}
			})
		})
	}
}

// TestKeyedRollingMinute is AlaskanTuna/Rokabot#149: a server enforces 15 in any
// rolling 60 s; greedy callers start after 5 idle minutes and run for 5
// minutes. In a half-open window of length T a token bucket admits up to
// burst + rate·T − 1 (T a multiple of its interval), so at 15/min it meets
// the contract only with burst 1: the burst must be derived from the
// server's window, not set to the rate.
func TestKeyedRollingMinute(t *testing.T) {
	tests := []struct {
		name    string
		l       Limit
		wantMax int // most releases in any [t, t+60s)
	}{
		{"sliding log", SlidingLog(PerMinute(15)), 15},
		{"leaky pacer", LeakyBucket(PerMinute(15), LeakyOptions{Queue: 15}), 15},
		{"token bucket burst 1", TokenBucket(PerMinute(15), 1), 15},
		// Burst 15 at 15/min (capacity equal to the rate, as in
		// AlaskanTuna/Rokabot#149) admits 15 + 14 = 29 in a rolling minute.
		{"token bucket burst 15 (too loose)", TokenBucket(PerMinute(15), 15), 29},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := newTestKeyed(t, tt.l, KeyedOptions{})
				time.Sleep(5 * time.Minute)
				start := time.Now()
				got := releases(t, k, "api.example.com", 3, start, 5*time.Minute)
				if len(got) < 75 {
					t.Errorf("%d releases in 5 minutes, want at least 75 (15/min)", len(got))
				}
				if most := maxInWindow(got, time.Minute); most != tt.wantMax {
					t.Errorf("most releases in a [t, t+60s) window = %d, want %d", most, tt.wantMax)
				}
			})
		})
	}
}

func TestKeyedString(t *testing.T) {
	for _, tt := range []struct {
		l    Limit
		want string
	}{
		{every(time.Second, 1), "keyed token bucket 1/1s burst 1"},
		{Limit{}, "keyed no limit"},
	} {
		if got := newTestKeyed(t, tt.l, KeyedOptions{}).String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func BenchmarkKeyedWait1Key(b *testing.B) {
	k := newTestKeyed(b, every(time.Nanosecond, 1<<30), KeyedOptions{})
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := errOf(k.Wait(ctx, "api.example.com", 0)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := errOf(k.Wait(ctx, "api.example.com", 0)); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// million holds the keys of the million-key benchmarks, built once so that
// their bytes are never counted.
var million = sync.OnceValue(func() []string {
	keys := make([]string, 1_000_000)
	for i := range keys {
		keys[i] = "host-" + strconv.Itoa(i) + ".example.com"
	}
	return keys
})

func BenchmarkKeyedAllowAt1MKeys(b *testing.B) {
	keys := million()
	// A bucket that never empties during the run and, once used, is not
	// idle again, so every key stays tracked.
	k := newTestKeyed(b, every(time.Second, 1<<30), KeyedOptions{})
	for _, key := range keys {
		k.AllowAt(t0, key, 1)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if !k.AllowAt(t0, keys[i], 1) {
				b.Fatal("refused")
			}
			if i++; i == len(keys) {
				i = 0
			}
		}
	})
	var next atomic.Int64
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1)*7919) % len(keys)
			for pb.Next() {
				if !k.AllowAt(t0, keys[i], 1) {
					b.Fatal("refused")
				}
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
	})
}

// bytesPerKey returns the heap bytes a Keyed of l takes per key once the
// keys have been used, not counting the key strings (built beforehand).
func bytesPerKey(tb testing.TB, l Limit, keys []string) float64 {
	before := heapInUse()
	k := newTestKeyed(tb, l, KeyedOptions{})
	for _, key := range keys {
		k.AllowAt(t0, key, 1)
	}
	after := heapInUse()
	if k.Len() != len(keys) {
		tb.Fatalf("Len() = %d, want %d", k.Len(), len(keys))
	}
	runtime.KeepAlive(k)
	return float64(int64(after)-int64(before)) / float64(len(keys))
}

// TestKeyedMemoryPerKey checks the target of at most 64 bytes per key at a
// million keys for the token bucket, not counting the key strings.
func TestKeyedMemoryPerKey(t *testing.T) {
	got := bytesPerKey(t, every(time.Second, 10), million())
	t.Logf("%.1f B/key at 1,000,000 keys", got)
	if got > 64 {
		t.Errorf("%.1f bytes per key at 1,000,000 keys, want at most 64", got)
	}
}

// BenchmarkKeyedMemory1MKeys reports the heap bytes per tracked key, not
// counting the key strings.
func BenchmarkKeyedMemory1MKeys(b *testing.B) {
	keys := million()
	var perKey float64
	for b.Loop() {
		perKey = bytesPerKey(b, every(time.Second, 10), keys)
	}
	b.ReportMetric(perKey, "B/key")
}

// TestKeyedOutOfOrderInstants: callers read the clock before taking a
// shard's lock, so instants a microsecond apart can arrive in the wrong
// order. A sliding log with room must still admit them, and report what is
// really left (a new user found 70 spurious 429s from the middleware).
func TestKeyedOutOfOrderInstants(t *testing.T) {
	k, err := NewKeyed(SlidingLog(PerSecond(10)), KeyedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k.AdmitAt(now, "x", 1)
	k.AdmitAt(now.Add(time.Microsecond), "x", 1)
	q, ok := k.AdmitAt(now, "x", 1) // a microsecond "late"
	if !ok || q.Remaining != 7 {
		t.Fatalf("AdmitAt(a µs before the latest) = %v, Remaining %d; want admitted, 7 left", ok, q.Remaining)
	}
	r, err := k.ReserveAt(now, "x", 1, 0)
	if err != nil || r.Delay != time.Microsecond {
		t.Fatalf("ReserveAt(a µs before the latest) = %+v, %v; want a delay of 1µs counted from now", r, err)
	}
}

// TestKeyedWaitNegativeMaxWait: Wait refuses a negative maxWait, as the
// Transport refuses a negative MaxWait and redislimit's Limiter.Wait does
// (throttle.Limiter's contract), with a *ConfigError that is no throttle,
// and books nothing: the key's one unit is still there for a Wait with no
// bound.
func TestKeyedWaitNegativeMaxWait(t *testing.T) {
	k, err := NewKeyed(TokenBucket(PerMinute(1), 1), KeyedOptions{})
	require.NoError(t, err)
	_, err = k.Wait(context.Background(), "k", -time.Second)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalidConfig)
	assert.NotErrorIs(t, err, ErrRateLimited, "a caller's bug is no throttle")
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "maxWait", ce.Field)
	assert.True(t, k.AllowAt(time.Now(), "k", 1), "nothing was booked")
}

package retrydecide

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/pacehttp/pace/retry"
)

var allJitters = []retry.Jitter{retry.FullJitter, retry.EqualJitter, retry.DecorrelatedJitter, retry.NoJitter}

// TestJitterWaitBoundsProperty drives each jitter kind through 10,000
// attempts of the exponential schedule for several caps and floors, feeding
// each wait back as prev, and checks every wait is above zero, at least the
// floor (or the cap when the floor is above it) and at most the cap.
func TestJitterWaitBoundsProperty(t *testing.T) {
	caps := []time.Duration{1, time.Millisecond, time.Second, retry.DefaultBackoffMax, math.MaxInt64}
	floors := []time.Duration{0, 50 * time.Millisecond, math.MaxInt64}
	for _, j := range allJitters {
		for _, cap := range caps {
			for _, floor := range floors {
				rng := rand.New(rand.NewPCG(uint64(j)+1, uint64(cap)))
				b := NewBackOff(retry.DefaultBackoffInitial, cap)
				lo := min(max(floor, 1), cap)
				var prev time.Duration
				for attempt := 1; attempt <= 10_000; attempt++ {
					w, ok := Wait(b, j, prev, floor, cap, rng.Int64N)
					if !ok || w <= 0 || w > cap || w < lo {
						t.Fatalf("%v cap %v floor %v attempt %d: retryWait = %v, %v; want ok and in [%v, %v]",
							j, cap, floor, attempt, w, ok, lo, cap)
					}
					prev = w
				}
			}
		}
	}
}

// TestJitterHostilePolicyProperty feeds apply 10,000 arbitrary delays and
// previous waits per kind (negative, zero, huge, as a user policy might
// return) and checks the wait stays in (0, cap].
func TestJitterHostilePolicyProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	arbitrary := func() time.Duration {
		switch rng.IntN(4) {
		case 0:
			return time.Duration(rng.Int64()) // up to MaxInt64
		case 1:
			return -time.Duration(rng.Int64()) // negative
		case 2:
			return time.Duration(rng.Int64N(3)) - 1 // -1 (Stop), 0, 1
		}
		return time.Duration(rng.Int64N(int64(time.Minute)))
	}
	for _, j := range allJitters {
		for range 10_000 {
			d, prev, floor := arbitrary(), arbitrary(), arbitrary()
			cap := arbitrary()
			w := ApplyJitter(j, d, prev, floor, cap, rng.Int64N)
			wantCap := cap
			if cap <= 0 {
				wantCap = retry.DefaultBackoffMax
			}
			if w <= 0 || w > wantCap {
				t.Fatalf("%v.apply(%v, %v, %v, %v) = %v; want in (0, %v]", j, d, prev, floor, cap, w, wantCap)
			}
		}
	}
}

// TestJitterApplyEdges pins each kind at the ends of its random range with
// rnd returning its smallest and largest value, and checks how out-of-range
// inputs are brought into [floor, cap].
func TestJitterApplyEdges(t *testing.T) {
	lowest := func(int64) int64 { return 0 }
	highest := func(n int64) int64 { return n - 1 }
	broken := func(n int64) int64 { return n + 5 } // out of contract: clamped
	const s = time.Second
	tests := []struct {
		name                string
		j                   retry.Jitter
		d, prev, floor, cap time.Duration
		rnd                 func(int64) int64
		want                time.Duration
	}{
		{"full lowest is the floor", retry.FullJitter, 4 * s, 0, s / 2, 20 * s, lowest, s / 2},
		{"full highest is d", retry.FullJitter, 4 * s, 0, s / 2, 20 * s, highest, 4 * s},
		{"full above cap", retry.FullJitter, 40 * s, 0, s / 2, 20 * s, highest, 20 * s},
		{"full zero floor is 1ns", retry.FullJitter, 4 * s, 0, 0, 20 * s, lowest, 1},
		{"equal lowest is half", retry.EqualJitter, 4 * s, 0, 0, 20 * s, lowest, 2 * s},
		{"equal lowest odd rounds up", retry.EqualJitter, 3, 0, 0, 20 * s, lowest, 2},
		{"equal highest is d", retry.EqualJitter, 4 * s, 0, 0, 20 * s, highest, 4 * s},
		{"equal floor above half", retry.EqualJitter, 4 * s, 0, 3 * s, 20 * s, lowest, 3 * s},
		{"decorrelated first retry up to 3d", retry.DecorrelatedJitter, s, 0, s / 2, 20 * s, highest, 3 * s},
		{"decorrelated up to 3 prev", retry.DecorrelatedJitter, s, 5 * s, s / 2, 20 * s, highest, 15 * s},
		{"decorrelated capped", retry.DecorrelatedJitter, s, 9 * s, s / 2, 20 * s, highest, 20 * s},
		{"decorrelated huge prev does not overflow", retry.DecorrelatedJitter, s, math.MaxInt64, s / 2, 20 * s, highest, 20 * s},
		{"decorrelated lowest is the floor", retry.DecorrelatedJitter, s, 5 * s, s / 2, 20 * s, lowest, s / 2},
		{"decorrelated prev below floor", retry.DecorrelatedJitter, s, 1, s / 2, 20 * s, highest, s / 2},
		{"none is d", retry.NoJitter, 4 * s, 0, s / 2, 20 * s, nil, 4 * s},
		{"none capped", retry.NoJitter, math.MaxInt64, 0, s / 2, 20 * s, nil, 20 * s},
		{"zero delay means floor", retry.NoJitter, 0, 0, s / 2, 20 * s, nil, s / 2},
		{"negative delay means floor", retry.FullJitter, -5, 0, s / 2, 20 * s, highest, s / 2},
		{"floor above cap means cap", retry.FullJitter, s, 0, 30 * s, 20 * s, lowest, 20 * s},
		{"zero cap means default", retry.NoJitter, time.Hour, 0, 0, 0, nil, retry.DefaultBackoffMax},
		{"huge cap and delay", retry.FullJitter, math.MaxInt64, 0, 1, math.MaxInt64, highest, math.MaxInt64},
		{"unknown kind is full", retry.Jitter(42), 4 * s, 0, s / 2, 20 * s, lowest, s / 2},
		{"rnd out of range clamped", retry.FullJitter, 4 * s, 0, s / 2, 20 * s, broken, 4 * s},
		{"negative rnd clamped", retry.FullJitter, 4 * s, 0, s / 2, 20 * s, func(int64) int64 { return -9 }, s / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ApplyJitter(tt.j, tt.d, tt.prev, tt.floor, tt.cap, tt.rnd); got != tt.want {
				t.Errorf("%v.apply(%v, %v, %v, %v) = %v, want %v", tt.j, tt.d, tt.prev, tt.floor, tt.cap, got, tt.want)
			}
		})
	}
}

// TestFullJitterSpreads checks that full jitter with the default random
// source really spreads waits over [floor, d]: the mean of many draws is
// near the middle and both ends of the range are approached.
func TestFullJitterSpreads(t *testing.T) {
	const n = 4000
	floor, d := 50*time.Millisecond, time.Second
	var sum float64
	lowest, highest := d, floor
	for range n {
		w := ApplyJitter(retry.FullJitter, d, 0, floor, retry.DefaultBackoffMax, nil)
		sum += float64(w)
		lowest, highest = min(lowest, w), max(highest, w)
	}
	mid := float64(floor+d) / 2
	if mean := sum / n; math.Abs(mean-mid) > 0.05*mid {
		t.Errorf("mean full-jitter wait = %v, want about %v", time.Duration(mean), time.Duration(mid))
	}
	if lowest > floor+50*time.Millisecond || highest < d-50*time.Millisecond {
		t.Errorf("full-jitter waits spanned [%v, %v], want close to [%v, %v]", lowest, highest, floor, d)
	}
}

// TestBackoffManyAttempts is carlescere/goback#5: base 100 ms, factor 2, cap 1 s, jitter off.
// Every value for attempts 1..10,000 lies in [100ms, 1s], and from the 5th
// on it is exactly 1 s. The closed form backoffDelay agrees with the
// cenkalti schedule at every one of those attempts, including 63, 64 and
// 1025, and gives 1 s at 2^31-1 and at the largest int.
func TestBackoffManyAttempts(t *testing.T) {
	const base, cap = 100 * time.Millisecond, time.Second
	b := NewBackOff(base, cap)
	for attempt := 1; attempt <= 10_000; attempt++ {
		w, ok := Wait(b, retry.NoJitter, 0, BackoffFloor(base, false), cap, nil)
		if !ok || w < base || w > cap {
			t.Fatalf("attempt %d: wait = %v, %v; want in [%v, %v]", attempt, w, ok, base, cap)
		}
		if attempt >= 5 && w != cap {
			t.Fatalf("attempt %d: wait = %v, want exactly %v from the 5th on", attempt, w, cap)
		}
		if c := BackoffDelay(attempt, base, cap); c != w {
			t.Fatalf("BackoffDelay(%d) = %v, but the schedule gave %v", attempt, c, w)
		}
	}
	for _, n := range []int{63, 64, 1025, math.MaxInt32, math.MaxInt} {
		if got := BackoffDelay(n, base, cap); got != cap {
			t.Errorf("BackoffDelay(%d, %v, %v) = %v, want %v", n, base, cap, got, cap)
		}
	}
}

// TestBackoffFixedPoint shows why attempt 2^31-1 of the real schedule is
// also exactly the cap without running two billion steps: once capped, a
// call to NextBackOff leaves the ExponentialBackOff's whole state unchanged,
// so every later call returns the same value.
func TestBackoffFixedPoint(t *testing.T) {
	for _, tc := range []struct{ initial, max time.Duration }{
		{100 * time.Millisecond, time.Second},
		{retry.DefaultThrottleBackoffInitial, retry.DefaultBackoffMax},
		{1, math.MaxInt64},
	} {
		eb := NewBackOff(tc.initial, tc.max).(*backoff.ExponentialBackOff)
		for range 70 { // at most 63 doublings reach any cap
			eb.NextBackOff()
		}
		before := *eb
		if d := eb.NextBackOff(); d != tc.max {
			t.Errorf("NewBackOff(%v, %v) after 70 calls = %v, want the cap", tc.initial, tc.max, d)
		}
		if after := *eb; after != before {
			t.Errorf("NewBackOff(%v, %v): state changed after capping: %+v -> %+v", tc.initial, tc.max, before, after)
		}
	}
}

// TestBackoffDelayMatchesSchedule cross-checks the closed form against
// ExponentialBackOff for awkward bounds (odd values, an initial above the
// cap, the largest cap, defaults).
func TestBackoffDelayMatchesSchedule(t *testing.T) {
	for _, tc := range []struct{ initial, max time.Duration }{
		{3, 1000},
		{7 * time.Millisecond, time.Second + 1},
		{time.Second, 20 * time.Second},
		{30 * time.Second, 20 * time.Second},
		{1, math.MaxInt64},
		{0, 0},
		{-time.Second, -1},
	} {
		b := NewBackOff(tc.initial, tc.max)
		for n := 1; n <= 200; n++ {
			if want, got := b.NextBackOff(), BackoffDelay(n, tc.initial, tc.max); got != want {
				t.Fatalf("BackoffDelay(%d, %v, %v) = %v, schedule gives %v", n, tc.initial, tc.max, got, want)
			}
		}
	}
	if got := BackoffDelay(0, time.Second, time.Minute); got != time.Second {
		t.Errorf("BackoffDelay(0, 1s, 1m) = %v, want the first delay 1s", got)
	}
}

func TestNewBackOffDefaults(t *testing.T) {
	b := NewBackOff(0, 0)
	if d := b.NextBackOff(); d != retry.DefaultBackoffInitial {
		t.Errorf("NewBackOff(0, 0) first delay = %v, want %v", d, retry.DefaultBackoffInitial)
	}
	var last time.Duration
	for range 100 {
		last = b.NextBackOff()
	}
	if last != retry.DefaultBackoffMax {
		t.Errorf("NewBackOff(0, 0) settles at %v, want %v", last, retry.DefaultBackoffMax)
	}
	if d := NewBackOff(2*time.Second, time.Second).NextBackOff(); d != time.Second {
		t.Errorf("NewBackOff(2s, 1s) first delay = %v, want 1s", d)
	}
}

// stepPolicy is a user-supplied policy returning canned values in order.
type stepPolicy struct{ vals []time.Duration }

func (p *stepPolicy) NextBackOff() time.Duration {
	if len(p.vals) == 0 {
		return backoff.Stop
	}
	d := p.vals[0]
	p.vals = p.vals[1:]
	return d
}

func (p *stepPolicy) Reset() {}

// TestRetryWaitPluggedPolicies checks that backoff.Stop from any policy
// means stop, and that a policy's zero, negative or huge values are brought
// into [floor, cap].
func TestRetryWaitPluggedPolicies(t *testing.T) {
	const floor, cap = 50 * time.Millisecond, 20 * time.Second
	p := &stepPolicy{vals: []time.Duration{0, -5, math.MaxInt64, time.Second}}
	want := []time.Duration{floor, floor, cap, time.Second}
	for i, w := range want {
		got, ok := Wait(p, retry.NoJitter, 0, floor, cap, nil)
		if !ok || got != w {
			t.Errorf("retryWait on value %d = %v, %v; want %v, true", i, got, ok, w)
		}
	}
	if got, ok := Wait(p, retry.NoJitter, 0, floor, cap, nil); ok || got != 0 {
		t.Errorf("retryWait after Stop = %v, %v; want 0, false", got, ok)
	}
	if _, ok := Wait(nil, retry.FullJitter, 0, floor, cap, nil); ok {
		t.Error("Wait(nil policy) ok = true, want false")
	}
	if _, ok := Wait(&backoff.StopBackOff{}, retry.FullJitter, 0, floor, cap, nil); ok {
		t.Error("Wait(StopBackOff) ok = true, want false")
	}
	limited := backoff.WithMaxRetries(NewBackOff(0, 0), 2)
	for i, wantOK := range []bool{true, true, false} {
		if _, ok := Wait(limited, retry.FullJitter, 0, floor, cap, nil); ok != wantOK {
			t.Errorf("Wait(WithMaxRetries(2)) call %d ok = %v, want %v", i+1, ok, wantOK)
		}
	}
}

func TestBackoffFloor(t *testing.T) {
	tests := []struct {
		initial   time.Duration
		throttled bool
		want      time.Duration
	}{
		{retry.DefaultBackoffInitial, false, retry.DefaultBackoffInitial / 2},
		{retry.DefaultThrottleBackoffInitial, true, retry.DefaultThrottleBackoffInitial},
		{1, false, 1},
		{0, true, 1},
	}
	for _, tt := range tests {
		if got := BackoffFloor(tt.initial, tt.throttled); got != tt.want {
			t.Errorf("BackoffFloor(%v, %v) = %v, want %v", tt.initial, tt.throttled, got, tt.want)
		}
	}
}

// TestThrottleWaitNeverUnderBase checks the rule behind env0/terraform-provider-env0#1127: after a
// throttle, with the throttle schedule and floor, no jitter kind ever waits
// less than retry.DefaultThrottleBackoffInitial.
func TestThrottleWaitNeverUnderBase(t *testing.T) {
	floor := BackoffFloor(retry.DefaultThrottleBackoffInitial, true)
	for _, j := range allJitters {
		rng := rand.New(rand.NewPCG(3, uint64(j)))
		b := NewBackOff(retry.DefaultThrottleBackoffInitial, retry.DefaultBackoffMax)
		var prev time.Duration
		for attempt := 1; attempt <= 1000; attempt++ {
			w, _ := Wait(b, j, prev, floor, retry.DefaultBackoffMax, rng.Int64N)
			if w < retry.DefaultThrottleBackoffInitial || w > retry.DefaultBackoffMax {
				t.Fatalf("%v attempt %d: throttle wait %v, want in [%v, %v]", j, attempt, w, retry.DefaultThrottleBackoffInitial, retry.DefaultBackoffMax)
			}
			prev = w
		}
	}
}

func TestJitterStringAndValidate(t *testing.T) {
	for _, j := range allJitters {
		if err := Validate(&retry.Policy{Jitter: j}); err != nil {
			t.Errorf("Validate(Jitter %v) = %v, want nil", j, err)
		}
	}
	for _, j := range []retry.Jitter{-1, retry.NoJitter + 1} {
		err := Validate(&retry.Policy{Jitter: j})
		if err == nil || err.Field != "Jitter" || err.Value != j {
			t.Errorf("Validate(Jitter(%d)) = %v, want a *FieldError for field Jitter", int(j), err)
		}
	}
	names := map[string]bool{}
	for _, j := range append(allJitters, retry.Jitter(9)) {
		names[j.String()] = true
	}
	if len(names) != len(allJitters)+1 || retry.Jitter(9).String() != "Jitter(9)" || retry.FullJitter.String() != "full jitter" {
		t.Errorf("Jitter names not distinct or unexpected: %v", names)
	}
	var zero retry.Jitter
	if zero != retry.FullJitter {
		t.Errorf("zero Jitter = %v, want FullJitter", zero)
	}
}

func BenchmarkRetryWait(b *testing.B) {
	p := NewBackOff(0, 0)
	floor := BackoffFloor(retry.DefaultBackoffInitial, false)
	b.ReportAllocs()
	for b.Loop() {
		Wait(p, retry.FullJitter, 0, floor, retry.DefaultBackoffMax, nil)
	}
}

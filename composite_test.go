package pace

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// partState is a deep copy of one part's cell, for comparisons.
type partState struct {
	A, B int64
	Log  []int64
}

// compositeSnapshot copies the parts' cells of a composite limiter.
func compositeSnapshot(l *Shaper) []partState {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c.x == nil {
		return nil
	}
	var s []partState
	for _, c := range l.c.x.parts {
		p := partState{A: c.a, B: c.b}
		if c.x != nil {
			for i := range c.x.count {
				p.Log = append(p.Log, logAt(c.x, i))
			}
		}
		s = append(s, p)
	}
	return s
}

func mustComposite(t *testing.T, limits ...Limit) *Shaper {
	t.Helper()
	l, err := NewShaper(All(limits...))
	if err != nil {
		t.Fatalf("NewShaper(All(...)): %v", err)
	}
	return l
}

// TestCompositeBothLimits: 10 a second and 500 a minute, asked every 10ms
// for 130s. Both hold: 10 go at the start of each second (s.00 … s.09) for
// 50 seconds, then nothing until the minute's first units leave the window
// (or the clock minute ends) at 60s, and again from 120s.
func TestCompositeBothLimits(t *testing.T) {
	for _, minute := range []Limit{SlidingLog(PerMinute(500)), FixedWindow(PerMinute(500))} {
		t.Run(minute.String(), func(t *testing.T) {
			l := mustComposite(t, SlidingLog(PerSecond(10)), minute)
			var got, want []int64
			for i := range int64(13_000) {
				d := time.Duration(i) * 10 * time.Millisecond
				if l.AllowAt(winAt(d), 1) {
					got = append(got, int64(d))
				}
				if s := i / 100; i%100 < 10 && (s < 50 || (s >= 60 && s < 110) || s >= 120) {
					want = append(want, int64(d))
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("admitted %d calls, want %d; first difference at %v", len(got), len(want), winFirstDiff(got, want))
			}
			if most, _ := winTrailing(got, int64(time.Second), 0, int64(131*time.Second)); most > 10 {
				t.Errorf("%d calls in one second, want <= 10", most)
			}
			if most, _ := winTrailing(got, int64(time.Minute), 0, int64(131*time.Second)); most > 500 {
				t.Errorf("%d calls in one minute, want <= 500", most)
			}
		})
	}
}

func winFirstDiff(a, b []int64) time.Duration {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return time.Duration(min(a[i], b[i]))
		}
	}
	if len(a) < len(b) {
		return time.Duration(b[len(a)])
	}
	if len(b) < len(a) {
		return time.Duration(a[len(b)])
	}
	return -1
}

// TestCompositeAllOrNothing: when one part refuses, the others book nothing.
func TestCompositeAllOrNothing(t *testing.T) {
	t.Run("AllowAt", func(t *testing.T) {
		l := mustComposite(t, SlidingLog(PerSecond(2)), FixedWindow(PerMinute(3)), SlidingCounter(PerMinute(3)))
		runWinAllow(t, l, []winAllow{{0, 2, true}})
		before := compositeSnapshot(l)
		runWinAllow(t, l, []winAllow{{0, 1, false}}) // the per-second part refuses
		if after := compositeSnapshot(l); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused AllowAt changed the parts: %+v → %+v", before, after)
		}
		// The minute parts still have exactly one unit left.
		runWinAllow(t, l, []winAllow{{time.Second, 1, true}, {2 * time.Second, 1, false}})
	})
	t.Run("ReserveAt error", func(t *testing.T) {
		// With the longest period a Rate may have, the fixed part can book
		// the window at 0, the next one and the one starting at
		// 2·maxPer = MaxInt64−1 ns, and no later one.
		huge := FixedWindow(Rate{N: 2, Per: maxPer})
		for _, order := range [][]Limit{{SlidingLog(PerSecond(5)), huge}, {huge, SlidingLog(PerSecond(5))}} {
			l := mustComposite(t, order...)
			runWinAllow(t, l, []winAllow{{0, 2, true}})
			if _, err := l.ReserveAt(winAt(0), 1, 0); err != nil {
				t.Fatalf("%v: ReserveAt in the next window: %v", l, err)
			}
			if _, err := l.ReserveAt(winAt(0), 2, 0); err != nil {
				t.Fatalf("%v: ReserveAt in the last window: %v", l, err)
			}
			before := compositeSnapshot(l)
			if _, err := l.ReserveAt(winAt(0), 1, 0); !errors.Is(err, ErrWaitTooLong) {
				t.Fatalf("%v: ReserveAt past the end of time = %v, want ErrWaitTooLong", l, err)
			}
			if after := compositeSnapshot(l); !reflect.DeepEqual(before, after) {
				t.Errorf("%v: a refused ReserveAt changed the parts: %+v → %+v", l, before, after)
			}
		}
	})
	t.Run("maxWait", func(t *testing.T) {
		l := mustComposite(t, SlidingLog(PerSecond(1)), SlidingLog(PerMinute(2)))
		runWinAllow(t, l, []winAllow{{0, 1, true}})
		before := compositeSnapshot(l)
		now := sinceEpoch(l.epoch, winAt(0))
		if r, err := reserveCell(l.alg, &l.c, now, 1, 500*time.Millisecond); !errors.Is(err, ErrWaitTooLong) || r.Delay != time.Second {
			t.Fatalf("reserveCell with maxWait 500ms = %v, %v; want 1s, ErrWaitTooLong", r.Delay, err)
		}
		if after := compositeSnapshot(l); !reflect.DeepEqual(before, after) {
			t.Errorf("a refusal for maxWait changed the parts: %+v → %+v", before, after)
		}
	})
	t.Run("CancelAt", func(t *testing.T) {
		l := mustComposite(t, SlidingLog(PerSecond(2)), SlidingLog(PerMinute(5)))
		runWinAllow(t, l, []winAllow{{0, 1, true}})
		before := compositeSnapshot(l)
		rs := runWinReserve(t, l, []winReserve{
			{0, 1, 0, nil},
			{0, 2, time.Second, nil},
			{0, 1, 2 * time.Second, nil},
		})
		for i := len(rs) - 1; i >= 0; i-- {
			l.CancelAt(winAt(0), rs[i])
		}
		if after := compositeSnapshot(l); !reflect.DeepEqual(before, after) {
			t.Errorf("reserve then cancel changed the parts: %+v → %+v", before, after)
		}
	})
}

// TestCompositeSameInstant: every part books at the instant the call will
// really go, the latest of the parts' own earliest instants, found again
// for each part at that instant.
func TestCompositeSameInstant(t *testing.T) {
	ms := time.Millisecond
	l := mustComposite(t, SlidingLog(Rate{N: 1, Per: 700 * ms}), FixedWindow(PerSecond(1)))
	runWinAllow(t, l, []winAllow{{500 * ms, 1, true}})
	runWinReserve(t, l, []winReserve{
		{500 * ms, 1, 700 * ms, nil},  // log: 1.2s; fixed: window [1s, 2s) is free
		{500 * ms, 1, 1500 * ms, nil}, // log: 1.9s; fixed: [1s, 2s) full → 2s; log: 2s fits
	})
	ns := func(d time.Duration) int64 { return sinceEpoch(l.epoch, winAt(d)) }
	want := []partState{
		{A: ns(500 * ms), Log: []int64{ns(500 * ms), ns(1200 * ms), ns(2000 * ms)}},
		{A: ns(2000*ms) / int64(time.Second), B: 1},
	}
	if got := compositeSnapshot(l); !reflect.DeepEqual(got, want) {
		t.Errorf("parts = %+v, want %+v", got, want)
	}
}

// TestAllErrors: a part's error is reported once, the part numbered as the
// caller wrote it (from 1, zero Limits counted).
func TestAllErrors(t *testing.T) {
	tests := []struct {
		name   string
		limits []Limit
		field  string
		part   string
	}{
		{"none", nil, "limits", ""},
		{"only zero limits", []Limit{{}, {}}, "limits", ""},
		{"bad first part", []Limit{FixedWindow(Rate{}), SlidingLog(PerSecond(1))}, "Rate.N", "pace: part 1 of All: invalid Rate.N 0: must be positive"},
		{"bad later part", []Limit{SlidingLog(PerSecond(1)), {}, SlidingCounter(Rate{N: 1})}, "Rate.Per", "pace: part 3 of All: invalid Rate.Per 0s: must be positive"},
		{"bad nested part", []Limit{SlidingLog(PerSecond(1)), All(FixedWindow(Rate{N: -1}))}, "Rate.N", "pace: part 2 of All: part 1 of All: invalid Rate.N -1: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := All(tt.limits...).Err()
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("All(%v).Err() = %v, want a *ConfigError for %s", tt.limits, err, tt.field)
			}
			if tt.part != "" && err.Error() != tt.part {
				t.Errorf("error %q, want %q", err, tt.part)
			}
			if l, err := NewShaper(All(tt.limits...)); l != nil || err == nil {
				t.Errorf("NewShaper(All(%v)) = %v, %v; want nil and an error", tt.limits, l, err)
			}
		})
	}
}

// TestAllParts: zero limits are skipped, nested composites flattened, and
// the composite's maxN and span are the parts' min and max.
func TestAllParts(t *testing.T) {
	inner := All(SlidingLog(PerSecond(5)), Limit{})
	l := All(Limit{}, inner, All(FixedWindow(PerMinute(3)), SlidingCounter(PerHour(100))))
	c, ok := l.alg.(*composite)
	if !ok || len(c.list) != 3 {
		t.Fatalf("All(...) = %v, want a flat composite of 3 parts", l)
	}
	for i, p := range c.list {
		if _, nested := p.(*composite); nested {
			t.Errorf("part %d is a composite", i)
		}
	}
	if got, want := c.maxN(), 3; got != want {
		t.Errorf("maxN() = %d, want %d", got, want)
	}
	if got, want := c.span(), int64(2*time.Hour); got != want {
		t.Errorf("span() = %v, want %v", time.Duration(got), time.Duration(want))
	}
	if got, want := l.String(), "all of (sliding log 5/1s; fixed window 3/1m0s; sliding counter 100/1h0m0s)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	cl := mustComposite(t, l)
	runWinReserve(t, cl, []winReserve{{0, 4, 0, ErrBurstExceeded}, {0, 3, 0, nil}})
}

// TestCompositeIdle: a composite is idle when every part is, and an idle
// composite decides like a fresh one.
func TestCompositeIdle(t *testing.T) {
	alg := All(SlidingLog(PerSecond(2)), FixedWindow(PerMinute(5))).alg
	var c cell
	if !alg.idle(&c, 1) {
		t.Errorf("fresh composite not idle")
	}
	now := int64(10 * time.Minute)
	if _, err := reserveCell(alg, &c, now, 2, 0); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		after time.Duration
		idle  bool
	}{
		{0, false},
		{time.Second, false}, // the log is idle, the minute is not over
		{time.Minute, true},
	} {
		if got := alg.idle(&c, now+int64(tt.after)); got != tt.idle {
			t.Errorf("idle(+%v) = %v, want %v", tt.after, got, tt.idle)
		}
	}
}

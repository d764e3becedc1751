package batch

import (
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func TestWindowSteps(t *testing.T) {
	type step struct {
		at   int           // ms after t0
		wait time.Duration // want wait(at)
		add  bool          // then add a start at at
	}
	tests := []struct {
		name  string
		n     int
		per   time.Duration
		steps []step
	}{
		{"burst then window", 2, time.Second, []step{
			{0, 0, true}, {0, 0, true}, {0, time.Second, false},
			{500, 500 * time.Millisecond, false}, {999, time.Millisecond, false},
			{1000, 0, true}, {1000, 0, true}, {1000, time.Second, false},
		}},
		{"even spacing", 1, 200 * time.Millisecond, []step{
			{0, 0, true}, {100, 100 * time.Millisecond, false}, {200, 0, true},
			{250, 150 * time.Millisecond, false}, {1000, 0, true}, {1000, 200 * time.Millisecond, false},
		}},
		{"only the last n count", 3, time.Second, []step{
			{0, 0, true}, {100, 0, true}, {900, 0, true}, {950, 50 * time.Millisecond, false},
			{1000, 0, true}, {1050, 50 * time.Millisecond, false}, {1100, 0, true}, {1100, 800 * time.Millisecond, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &window{n: tt.n, per: tt.per}
			for i, s := range tt.steps {
				if got := w.wait(ms(s.at)); got != s.wait {
					t.Errorf("step %d: wait(%dms) = %v, want %v", i, s.at, got, s.wait)
				}
				if s.add {
					w.add(ms(s.at))
				}
			}
		})
	}
}

// TestWindowProperty drives windows with random schedules: a start is made
// whenever wait allows it. No half-open window of length per ever holds
// more than n starts, and wait refuses only when n starts fill the last
// per (the log is exact, never stricter than promised).
func TestWindowProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		n := 1 + rng.IntN(6)
		per := time.Duration(1+rng.IntN(1000)) * time.Millisecond
		w := &window{n: n, per: per}
		var starts []time.Time
		now := t0
		for range 60 {
			now = now.Add(time.Duration(rng.IntN(int(per) / n * 2)))
			recent := 0
			for _, s := range starts {
				if now.Sub(s) < per {
					recent++
				}
			}
			d := w.wait(now)
			if (d > 0) != (recent >= n) {
				t.Fatalf("n=%d per=%v: wait = %v with %d starts in the last per", n, per, d, recent)
			}
			if d == 0 {
				w.add(now)
				starts = append(starts, now)
			} else if w.wait(now.Add(d)) != 0 {
				t.Fatalf("n=%d per=%v: wait(now+%v) still > 0", n, per, d)
			}
		}
		if got := maxInWindow(starts, per); got > n {
			t.Fatalf("n=%d per=%v: %d starts in one window", n, per, got)
		}
	}
}

func TestLearner(t *testing.T) {
	var l learner
	if l.wait(t0) != 0 || !l.rate().IsZero() {
		t.Fatal("a learner with no limit waits")
	}
	for i := range 5 {
		l.accepted(t0.Add(time.Duration(4-i) * time.Second)) // out of order
	}
	// Five accepted in 0..4s, throttled, probe at 9s came back fine at 10s:
	// at most 5 starts in any 10s; the probe counts in the new log.
	l.resume(t0.Add(10*time.Second), t0.Add(9*time.Second))
	if got := l.rate(); got != (Rate{N: 5, Per: 10 * time.Second}) {
		t.Fatalf("learned %v, want 5/10s", got)
	}
	if d := l.wait(t0.Add(10 * time.Second)); d != time.Second {
		t.Errorf("wait at 10s = %v, want 1s (the start at 1s leaves the window at 11s)", d)
	}
	l.started(t0.Add(11 * time.Second))
	if d := l.wait(t0.Add(11 * time.Second)); d != time.Second {
		t.Errorf("wait at 11s = %v, want 1s", d)
	}
	// A quiet window later the limit has grown by one (5/8 rounds to 0).
	if l.wait(t0.Add(20 * time.Second)); l.rate().N != 6 {
		t.Errorf("after a quiet window: %v, want 6/10s", l.rate())
	}
	// Much later it has grown past any use and is forgotten.
	if d := l.wait(t0.Add(24 * time.Hour)); d != 0 || !l.rate().IsZero() {
		t.Errorf("a day later: wait %v, limit %v; want none", d, l.rate())
	}
	if len(l.streak) != 1 {
		t.Errorf("the probe should open the next streak, streak = %v", l.streak)
	}
}

func TestLearnerStreakBounded(t *testing.T) {
	var l learner
	for i := range maxStreak + 10 {
		l.accepted(t0.Add(time.Duration(i)))
	}
	if got, want := len(l.streak), maxStreak-maxStreak/4+10; got != want {
		t.Errorf("streak holds %d, want %d", got, want)
	}
}

func TestRateIdeal(t *testing.T) {
	tests := []struct {
		r    Rate
		m    int
		want time.Duration
	}{
		{Rate{}, 100, 0},
		{Rate{5, time.Second}, 0, 0},
		{Rate{5, time.Second}, 1, 0},
		{Rate{5, time.Second}, 5, 0},
		{Rate{5, time.Second}, 6, time.Second},
		{Rate{5, time.Second}, 300, 59 * time.Second},
		{Rate{1, 10 * time.Millisecond}, 300, 2990 * time.Millisecond},
		{Rate{1, time.Duration(1 << 62)}, 3, maxDuration},
	}
	for _, tt := range tests {
		if got := tt.r.ideal(tt.m); got != tt.want {
			t.Errorf("%v.ideal(%d) = %v, want %v", tt.r, tt.m, got, tt.want)
		}
	}
}

func BenchmarkWindow(b *testing.B) {
	w := &window{n: 100, per: time.Second}
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(10 * time.Millisecond)
		if w.wait(now) == 0 {
			w.add(now)
		}
	}
}

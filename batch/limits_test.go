package batch

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pacehttp/pace"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// TestLogProperty drives delayAt and bookAt on sliding logs with random
// schedules: a start is made whenever delayAt allows it. delayAt refuses
// exactly when n starts fill the last per (asking books nothing, or the log
// would fill up with asks), its delay is exact (the start may happen then),
// and no half-open window of length per ever holds more than n starts.
func TestLogProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		n := 1 + rng.IntN(6)
		per := time.Duration(1+rng.IntN(1000)) * time.Millisecond
		l, err := pace.NewShaper(pace.SlidingLog(pace.Rate{N: n, Per: per}))
		if err != nil {
			t.Fatal(err)
		}
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
			d := delayAt(l, now)
			if (d > 0) != (recent >= n) {
				t.Fatalf("n=%d per=%v: delay = %v with %d starts in the last per", n, per, d, recent)
			}
			if d == 0 {
				bookAt(l, now)
				starts = append(starts, now)
			} else if delayAt(l, now.Add(d)) != 0 {
				t.Fatalf("n=%d per=%v: delay at now+%v still > 0", n, per, d)
			}
		}
		if got := maxInWindow(starts, per); got > n {
			t.Fatalf("n=%d per=%v: %d starts in one window", n, per, got)
		}
	}
}

func TestLearner(t *testing.T) {
	var l learner
	if l.wait(t0) != 0 || l.rate() != (pace.Rate{}) {
		t.Fatal("a learner with no limit waits")
	}
	for i := range 5 {
		l.accepted(t0.Add(time.Duration(4-i) * time.Second)) // out of order
	}
	// Five accepted in 0..4s, throttled, probe at 9s came back fine at 10s:
	// at most 5 starts in any 10s; the probe counts in the new log.
	l.resume(t0.Add(10*time.Second), t0.Add(9*time.Second))
	if got := l.rate(); got != (pace.Rate{N: 5, Per: 10 * time.Second}) {
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
	if d := l.wait(t0.Add(24 * time.Hour)); d != 0 || l.rate() != (pace.Rate{}) {
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

// TestLearnerGrowthKeepsHistory checks that a limit grown after a quiet
// window still counts the starts of that window: 2 per 10s grows to 3 at
// 20s, and a start at 19s leaves room for two more at 20s, not three.
func TestLearnerGrowthKeepsHistory(t *testing.T) {
	var l learner
	l.accepted(t0)
	l.accepted(t0)
	l.resume(t0.Add(10*time.Second), t0.Add(10*time.Second))
	if got := l.rate(); got != (pace.Rate{N: 2, Per: 10 * time.Second}) {
		t.Fatalf("learned %v, want 2/10s", got)
	}
	if d := l.wait(t0.Add(19 * time.Second)); d != 0 {
		t.Fatalf("wait at 19s = %v, want 0 (only the probe at 10s in the window)", d)
	}
	l.started(t0.Add(19 * time.Second))
	at20 := t0.Add(20 * time.Second)
	for i := range 2 {
		if d := l.wait(at20); d != 0 {
			t.Fatalf("start %d at 20s: wait %v, want 0", i+1, d)
		}
		l.started(at20)
	}
	if got := l.rate(); got != (pace.Rate{N: 3, Per: 10 * time.Second}) {
		t.Errorf("at 20s: learned %v, want 3/10s", got)
	}
	if d := l.wait(at20); d != 9*time.Second {
		t.Errorf("third start at 20s: wait %v, want 9s (the start at 19s counts until 29s)", d)
	}
}

// BenchmarkCeiling measures what Options.Rate costs Run per start: asking
// the sliding log for the delay, then booking the start.
func BenchmarkCeiling(b *testing.B) {
	l, err := pace.NewShaper(pace.SlidingLog(pace.Rate{N: 100, Per: time.Second}))
	if err != nil {
		b.Fatal(err)
	}
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(10 * time.Millisecond)
		if delayAt(l, now) == 0 {
			bookAt(l, now)
		}
	}
}

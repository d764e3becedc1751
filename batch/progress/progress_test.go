package progress

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/batch"
)

func items(n int) []int { return make([]int, n) }

// TestLines runs a real batch through a line-mode Printer in fake time: a
// line per tenth of the items, one per Every in between, lines for a pause
// and the resume, and the summary. Item 14 is throttled at 1.5s, so the
// run pauses 1s and resumes when its probe comes back at 2.6s.
func TestLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		pr := &Printer{Out: &buf, Mode: Lines, Title: "jobs", Every: 300 * time.Millisecond}
		start, throttled := time.Now(), false
		fn := func(_ context.Context, i int) error {
			time.Sleep(100 * time.Millisecond)
			if !throttled && time.Since(start) >= 1500*time.Millisecond {
				throttled = true
				return batch.ErrThrottled
			}
			return nil
		}
		rep, err := batch.Run(t.Context(), items(20), fn, batch.Options{Concurrency: 1, OnProgress: pr.Update})
		if err != nil {
			t.Fatal(err)
		}
		pr.Finish(rep.Summary)
		want := `jobs: 2/20 done (10%): 2 succeeded, 0 failed, 0 throttled; elapsed 200ms
jobs: 4/20 done (20%): 4 succeeded, 0 failed, 0 throttled; elapsed 400ms
jobs: 6/20 done (30%): 6 succeeded, 0 failed, 0 throttled; elapsed 600ms
jobs: 8/20 done (40%): 8 succeeded, 0 failed, 0 throttled; elapsed 800ms
jobs: 10/20 done (50%): 10 succeeded, 0 failed, 0 throttled; elapsed 1s
jobs: 12/20 done (60%): 12 succeeded, 0 failed, 0 throttled; elapsed 1.2s
jobs: 14/20 done (70%): 14 succeeded, 0 failed, 0 throttled; elapsed 1.4s
jobs: 14/20 done (70%): 14 succeeded, 0 failed, 1 throttled; elapsed 1.5s; throttled, paused for 1s
jobs: 15/20 done (75%): 15 succeeded, 0 failed, 1 throttled; elapsed 2.6s; resumed
jobs: 16/20 done (80%): 16 succeeded, 0 failed, 1 throttled; elapsed 2.8s
jobs: 18/20 done (90%): 18 succeeded, 0 failed, 1 throttled; elapsed 3s
jobs: 20/20 done (100%): 20 succeeded, 0 failed, 1 throttled; elapsed 3.2s
jobs done: 20 items: 20 succeeded, 0 failed, 0 not started; 1 throttled, 1 retry, 1 pause; elapsed 3.2s
`
		if got := buf.String(); got != want {
			t.Errorf("output:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestLinesEvery: with few items a tenth is rare, so lines come every Every.
func TestLinesEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		pr := &Printer{Out: &buf, Mode: Lines}
		fn := func(context.Context, int) error { time.Sleep(250 * time.Millisecond); return nil }
		rep, _ := batch.Run(t.Context(), items(100), fn, batch.Options{Concurrency: 1, OnProgress: pr.Update})
		pr.Finish(rep.Summary)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		// 25 s of work, 4 items a second: a line at least every 4 items,
		// one at each tenth, and the summary.
		prev, tenths := 0, 0
		for _, l := range lines[:len(lines)-1] {
			var done int
			if _, err := fmt.Sscanf(l, "%d/100 done", &done); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			if done-prev > 4 || done <= prev {
				t.Errorf("line %q comes %d items after the last one, want 1 to 4", l, done-prev)
			}
			if done%10 == 0 {
				tenths++
			}
			prev = done
		}
		if tenths != 10 || !strings.HasPrefix(lines[0], "4/100 done (4%)") || !strings.HasPrefix(lines[len(lines)-1], "done: 100 items") {
			t.Errorf("%d tenths in:\n%s", tenths, buf.String())
		}
	})
}

func TestBar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		pr := &Printer{Out: &buf, Mode: Bar, Title: "jobs"}
		fn := func(context.Context, int) error { time.Sleep(time.Second); return nil }
		rep, _ := batch.Run(t.Context(), items(10), fn, batch.Options{Concurrency: 1, OnProgress: pr.Update})
		pr.Finish(rep.Summary)
		out := buf.String()
		if !strings.Contains(out, "\r") || !strings.Contains(out, "100%") || !strings.Contains(out, "(10/10") {
			t.Errorf("bar output lacks redraws or the full bar:\n%q", out)
		}
		if !strings.HasSuffix(out, "\njobs done: 10 items: 10 succeeded, 0 failed, 0 not started; 0 throttled, 0 retries, 0 pauses; elapsed 10s\n") {
			t.Errorf("bar output does not end with the summary:\n%q", out)
		}
	})
}

func TestBarCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		pr := &Printer{Out: &buf, Mode: Bar}
		ctx, cancel := context.WithTimeout(t.Context(), 3500*time.Millisecond)
		defer cancel()
		fn := func(context.Context, int) error { time.Sleep(time.Second); return nil }
		rep, _ := batch.Run(ctx, items(10), fn, batch.Options{Concurrency: 1, OnProgress: pr.Update})
		pr.Finish(rep.Summary)
		if out := buf.String(); strings.Contains(out, "100%") || !strings.Contains(out, "6 not started") {
			t.Errorf("a cancelled run's bar was filled, or the summary is missing:\n%q", out)
		}
	})
}

// TestAuto: a buffer or a plain file is not a terminal, so Auto prints lines.
func TestAuto(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []interface {
		Write([]byte) (int, error)
	}{&bytes.Buffer{}, f} {
		pr := &Printer{Out: w}
		pr.Update(batch.Progress{Summary: batch.Summary{Items: 1, Succeeded: 1}, Index: 0})
		if !pr.lines || pr.bar != nil {
			t.Errorf("%T: Auto chose a bar", w)
		}
	}
}

func TestFinishOnly(t *testing.T) {
	var buf bytes.Buffer
	pr := &Printer{Out: &buf, Mode: Bar}
	pr.Finish(batch.Summary{})
	if got, want := buf.String(), "done: 0 items: 0 succeeded, 0 failed, 0 not started; 0 throttled, 0 retries, 0 pauses; elapsed 0s\n"; got != want {
		t.Errorf("Finish = %q, want %q", got, want)
	}
}

// TestLinePauseNeverNegative: a pause that has ended by the time its line
// is printed (Until in the past) is shown as resuming, never as a negative
// pause; one still running shows what is left.
func TestLinePauseNeverNegative(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	pr := &Printer{}
	for _, tt := range []struct {
		until time.Time
		want  string
	}{
		{now.Add(-3 * time.Second), "; throttled, resuming"},
		{now.Add(-10 * time.Millisecond), "; throttled, resuming"},
		{now, "; throttled, resuming"},
		{now.Add(1500 * time.Millisecond), "; throttled, paused for 1.5s"},
	} {
		line := pr.line(batch.Progress{Summary: batch.Summary{Items: 1}, Index: -1, Paused: true, Until: tt.until}, now)
		if !strings.HasSuffix(line, tt.want) || strings.Contains(line, "-") {
			t.Errorf("Until %v: line %q, want it to end in %q", tt.until.Sub(now), line, tt.want)
		}
	}
}

// TestLineInDoubt: items in doubt count as finished, and a line names them.
func TestLineInDoubt(t *testing.T) {
	pr := &Printer{Title: "t"}
	s := batch.Summary{Items: 10, Succeeded: 8, InDoubt: 2}
	line := pr.line(batch.Progress{Summary: s, Index: 3}, time.Now())
	if !strings.HasPrefix(line, "t: 10/10 done (100%): 8 succeeded, 0 failed, 2 in doubt, 0 throttled;") {
		t.Errorf("line %q", line)
	}
	if got := pr.describe(batch.Progress{Summary: s}); got != "t, 2 in doubt" {
		t.Errorf("describe = %q", got)
	}
}

package batch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
)

func ints(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// gauge tracks how many calls are in flight and the most seen at once.
type gauge struct {
	mu        sync.Mutex
	now, most int
}

func (g *gauge) enter() {
	g.mu.Lock()
	g.now++
	g.most = max(g.most, g.now)
	g.mu.Unlock()
}

func (g *gauge) leave() {
	g.mu.Lock()
	g.now--
	g.mu.Unlock()
}

var errBad = errors.New("bad item")

func TestRunAccountsForEveryItem(t *testing.T) {
	tests := []struct {
		name        string
		concurrency int
		want        int // most calls in flight
	}{
		{"one at a time", 1, 1},
		{"three", 3, 3},
		{"default", 0, DefaultConcurrency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g gauge
				fn := func(ctx context.Context, i int) error {
					g.enter()
					defer g.leave()
					time.Sleep(time.Duration(i%5+1) * 10 * time.Millisecond)
					if i%10 == 3 {
						RecordStatus(ctx, 500)
						return fmt.Errorf("item %d: %w", i, errBad)
					}
					RecordStatus(ctx, 200)
					return nil
				}
				rep, err := Run(t.Context(), ints(50), fn, Options{Concurrency: tt.concurrency})
				if g.most != tt.want {
					t.Errorf("most in flight = %d, want %d", g.most, tt.want)
				}
				for i, res := range rep.Results {
					wantOutcome, wantStatus := Succeeded, 200
					if i%10 == 3 {
						wantOutcome, wantStatus = Failed, 500
					}
					want := Result{Index: i, ID: strconv.Itoa(i), Outcome: wantOutcome, Status: wantStatus,
						Attempts: 1, Duration: time.Duration(i%5+1) * 10 * time.Millisecond}
					got := res
					got.Err = nil
					if got != want {
						t.Errorf("Results[%d] = %+v, want %+v", i, got, want)
					}
					if (res.Err != nil) != (wantOutcome == Failed) || (res.Err != nil && !errors.Is(res.Err, errBad)) {
						t.Errorf("Results[%d].Err = %v", i, res.Err)
					}
				}
				s := rep.Summary
				if s.Items != 50 || s.Succeeded != 45 || s.Failed != 5 || s.NotStarted != 0 || s.Running != 0 || s.Retries != 0 {
					t.Errorf("Summary = %+v", s)
				}
				var e *Error
				if !errors.As(err, &e) || e.Failed != 5 || e.Stop != nil || e.First == nil || e.First.Index != 3 {
					t.Fatalf("Run error = %v, want *Error with 5 failed, first item 3", err)
				}
				var ie *ItemError
				if !errors.As(err, &ie) || ie.Status != 500 || !errors.Is(err, errBad) {
					t.Errorf("errors.As(err, *ItemError) = %v, want item 3 with status 500 wrapping errBad", ie)
				}
			})
		})
	}
}

func TestRunAllSucceed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, err := Run(t.Context(), ints(20), func(context.Context, int) error { return nil }, Options{})
		if err != nil || rep.Summary.Succeeded != 20 {
			t.Fatalf("Run = %+v, %v; want 20 succeeded, nil", rep.Summary, err)
		}
		rep, err = Run(t.Context(), []int(nil), func(context.Context, int) error { return nil }, Options{})
		if err != nil || len(rep.Results) != 0 || rep.Summary.Items != 0 {
			t.Fatalf("Run(no items) = %+v, %v; want an empty report, nil", rep, err)
		}
	})
}

// TestRunHugeConcurrency: Concurrency far beyond the number of items is
// taken as the number of items; nothing is sized by the raw value (1<<40
// once ran out of memory).
func TestRunHugeConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g gauge
		fn := func(context.Context, int) error {
			g.enter()
			defer g.leave()
			time.Sleep(time.Second)
			return nil
		}
		rep, err := Run(t.Context(), ints(5), fn, Options{Concurrency: 1 << 40})
		if err != nil || rep.Summary.Succeeded != 5 || g.most != 5 {
			t.Errorf("Run = %v, %v with %d in flight at most; want 5 succeeded, all 5 at once", rep.Summary, err, g.most)
		}
		if _, err := Run(t.Context(), []int(nil), fn, Options{Concurrency: 1 << 40}); err != nil {
			t.Errorf("Run(no items) = %v", err)
		}
	})
}

// TestRunAllSucceedAfterDeadline: calls that ignore the context and finish
// after its deadline still succeed, and when every item did, Run's error is
// nil, as documented, although the context ended.
func TestRunAllSucceedAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		fn := func(context.Context, int) error { time.Sleep(2 * time.Second); return nil }
		rep, err := Run(ctx, ints(3), fn, Options{})
		if err != nil || rep.Summary.Succeeded != 3 {
			t.Errorf("Run = %v, %v; want 3 succeeded and a nil error", rep.Summary, err)
		}
	})
}

func TestRunStopOnError(t *testing.T) {
	tests := []struct {
		name string
		stop bool
		want []Outcome
	}{
		// Item i takes (i+1)*10ms, two at a time, item 2 fails at 40ms:
		// item 3, started at 20ms, runs to its end; 4 to 9 never start.
		{"stop", true, []Outcome{Succeeded, Succeeded, Failed, Succeeded,
			NotStarted, NotStarted, NotStarted, NotStarted, NotStarted, NotStarted}},
		{"carry on", false, []Outcome{Succeeded, Succeeded, Failed, Succeeded,
			Succeeded, Succeeded, Succeeded, Succeeded, Succeeded, Succeeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fn := func(ctx context.Context, i int) error {
					select {
					case <-time.After(time.Duration(i+1) * 10 * time.Millisecond):
					case <-ctx.Done():
						return ctx.Err()
					}
					if i == 2 {
						return errBad
					}
					return nil
				}
				rep, err := Run(t.Context(), ints(10), fn, Options{Concurrency: 2, StopOnError: tt.stop})
				for i, res := range rep.Results {
					if res.Outcome != tt.want[i] {
						t.Errorf("Results[%d].Outcome = %v, want %v", i, res.Outcome, tt.want[i])
					}
				}
				var e *Error
				if !errors.As(err, &e) || e.First == nil || e.First.Index != 2 {
					t.Fatalf("Run error = %v, want *Error with item 2 first", err)
				}
				if stopped := e.Stop != nil; stopped != tt.stop {
					t.Errorf("Error.Stop = %v, want set: %v", e.Stop, tt.stop)
				}
				if tt.stop && e.Stop != e.First {
					t.Errorf("Error.Stop = %v, want the first failure %v", e.Stop, e.First)
				}
			})
		})
	}
}

// TestRunCancel cancels a run in the middle: nothing starts after the
// cancel, calls that ignore the context finish and count, calls that heed it
// are interrupted, and Run returns once the last call has returned.
func TestRunCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		var starts []time.Time
		fn := func(ctx context.Context, i int) error {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			if i%2 == 0 { // ignores ctx
				time.Sleep(time.Second)
				return nil
			}
			select {
			case <-time.After(time.Second):
				return nil
			case <-ctx.Done():
				return fmt.Errorf("call: %w", ctx.Err())
			}
		}
		t0 := time.Now()
		time.AfterFunc(2500*time.Millisecond, cancel)
		rep, err := Run(ctx, ints(100), fn, Options{Concurrency: 4})
		if d := time.Since(t0); d != 3*time.Second {
			t.Errorf("Run returned after %v, want 3s (items 8 and 10 run to their end)", d)
		}
		for _, s := range starts {
			if s.Sub(t0) > 2500*time.Millisecond {
				t.Errorf("an item started at %v, after the cancel at 2.5s", s.Sub(t0))
			}
		}
		for i, res := range rep.Results {
			want := NotStarted
			switch {
			case i < 8:
				want = Succeeded
			case i < 12 && i%2 == 0:
				want = Succeeded
			case i < 12:
				want = Interrupted
			}
			if res.Outcome != want {
				t.Errorf("Results[%d].Outcome = %v, want %v", i, res.Outcome, want)
			}
		}
		s := rep.Summary
		if s.Succeeded != 10 || s.Interrupted != 2 || s.NotStarted != 88 || s.Failed != 0 {
			t.Errorf("Summary = %v", s)
		}
		var e *Error
		if !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.NotStarted != 88 || e.Interrupted != 2 {
			t.Errorf("Run error = %v, want *Error matching context.Canceled", err)
		}
	})
}

func TestRunCancelledBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var calls atomic.Int32
		rep, err := Run(ctx, ints(10), func(context.Context, int) error { calls.Add(1); return nil }, Options{})
		if calls.Load() != 0 || !errors.Is(err, context.Canceled) || rep.Summary.NotStarted != 10 {
			t.Errorf("calls = %d, err = %v, summary %v; want 0 calls, context.Canceled, 10 not started", calls.Load(), err, rep.Summary)
		}
	})
}

func TestRunRateCeiling(t *testing.T) {
	tests := []struct {
		name      string
		rate      pace.Rate
		wantIdeal time.Duration
	}{
		{"5 in any second", pace.Rate{N: 5, Per: time.Second}, 9 * time.Second},
		{"even spacing", pace.Rate{N: 1, Per: 200 * time.Millisecond}, 49 * 200 * time.Millisecond},
		{"3 per 2s", pace.Rate{N: 3, Per: 2 * time.Second}, 16 * 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var starts []time.Time
				t0 := time.Now()
				fn := func(context.Context, int) error {
					mu.Lock()
					starts = append(starts, time.Now())
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					return nil
				}
				rep, err := Run(t.Context(), ints(50), fn, Options{Concurrency: 10, Rate: tt.rate})
				if err != nil {
					t.Fatal(err)
				}
				if got := maxInWindow(starts, tt.rate.Per); got > tt.rate.N {
					t.Errorf("%d starts in one window of %v, want <= %d", got, tt.rate.Per, tt.rate.N)
				}
				last := starts[len(starts)-1].Sub(t0)
				if rep.Summary.Ideal != tt.wantIdeal || last != tt.wantIdeal {
					t.Errorf("Ideal = %v, last start at %v; want both %v", rep.Summary.Ideal, last, tt.wantIdeal)
				}
			})
		})
	}
}

func TestRunInvalidOptions(t *testing.T) {
	tests := []struct {
		opts  Options
		field string
	}{
		{Options{Concurrency: -1}, "Concurrency"},
		{Options{Rate: pace.Rate{N: 0, Per: time.Second}}, "Rate.N"},
		{Options{Rate: pace.Rate{N: 5}}, "Rate.Per"},
		{Options{Rate: pace.Rate{N: -5, Per: -time.Second}}, "Rate.N"},
		{Options{Backoff: -time.Second}, "Backoff"},
		{Options{MaxBackoff: -time.Second}, "MaxBackoff"},
		{Options{Backoff: time.Minute, MaxBackoff: time.Second}, "MaxBackoff"},
	}
	for _, tt := range tests {
		var calls atomic.Int32
		rep, err := Run(context.Background(), ints(3), func(context.Context, int) error { calls.Add(1); return nil }, tt.opts)
		var ce *pace.ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field || !errors.Is(err, pace.ErrInvalidConfig) || rep != nil || calls.Load() != 0 {
			t.Errorf("Run(%+v) = %v, %v after %d calls; want nil and a *ConfigError for %s", tt.opts, rep, err, calls.Load(), tt.field)
		}
	}
}

func TestRunDefaults(t *testing.T) {
	o, err := Options{Backoff: 10 * time.Minute}.withDefaults()
	if err != nil || o.MaxBackoff != 10*time.Minute || o.Concurrency != DefaultConcurrency {
		t.Errorf("withDefaults = %+v, %v; want MaxBackoff raised to Backoff", o, err)
	}
	o, err = Options{}.withDefaults()
	if err != nil || o.Backoff != DefaultBackoff || o.MaxBackoff != DefaultMaxBackoff {
		t.Errorf("withDefaults = %+v, %v", o, err)
	}
}

func TestRunCustomID(t *testing.T) {
	names := []string{"a", "b", "c"}
	rep, err := Run(context.Background(), names, func(context.Context, string) error { return nil },
		Options{ID: func(i int) string { return "user-" + names[i] }})
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range rep.Results {
		if want := "user-" + names[i]; res.ID != want {
			t.Errorf("Results[%d].ID = %q, want %q", i, res.ID, want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{NotStarted: "not started", Succeeded: "succeeded",
		Failed: "failed", Interrupted: "interrupted", Outcome(9): "Outcome(9)", Outcome(-1): "Outcome(-1)"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}

func TestSummaryString(t *testing.T) {
	tests := []struct {
		s    Summary
		want string
	}{
		{Summary{Items: 300, Succeeded: 300, Throttled: 10, Retries: 10, Pauses: 1, Elapsed: 185 * time.Second, Ideal: 59 * time.Second},
			"300 items: 300 succeeded, 0 failed, 0 not started; 10 throttled, 10 retries, 1 pause; elapsed 3m5s, ideal 59s"},
		{Summary{Items: 10, Succeeded: 4, Failed: 1, Interrupted: 2, Running: 1, NotStarted: 2, Resumed: 3, Retries: 1, Elapsed: 1500 * time.Microsecond},
			"10 items: 4 succeeded, 1 failed, 2 interrupted, 1 running, 2 not started (3 resumed from the journal); 0 throttled, 1 retry, 0 pauses; elapsed 2ms"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("Summary.String() =\n%s\nwant\n%s", got, tt.want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	first := &ItemError{Index: 3, ID: "c", Status: 500, Err: errBad}
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Failed: 1, First: first},
			`batch: 1 failed, 0 interrupted, 0 not started; first failure: item 3 (id "c", status 500): bad item`},
		{&Error{Failed: 1, NotStarted: 5, Stop: first, First: first},
			`batch: 1 failed, 0 interrupted, 5 not started: stopped: item 3 (id "c", status 500): bad item`},
		{&Error{NotStarted: 5, Stop: context.Canceled},
			`batch: 0 failed, 0 interrupted, 5 not started: stopped: context canceled`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() =\n%s\nwant\n%s", got, tt.want)
		}
		if n := len(tt.err.Unwrap()); n != 1 {
			t.Errorf("len(Unwrap()) = %d, want 1 (no duplicate)", n)
		}
	}
	if got := (&ItemError{Index: 1, ID: "b", Err: errBad}).Error(); got != `item 1 (id "b"): bad item` {
		t.Errorf("ItemError without status = %q", got)
	}
}

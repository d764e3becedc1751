//go:build unix && !aix && !(solaris && !illumos)

package batch

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestJournalLocked runs two batches on one journal at once, in one
// process (flock locks belong to the open file, so two opens conflict even
// here): the second fails at once with ErrJournalLocked and calls nothing,
// the first is untouched, and once it returns the lock is free again.
func TestJournalLocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.jsonl")
		var calls atomic.Int32
		fn := func(context.Context, int) error {
			calls.Add(1)
			time.Sleep(time.Second)
			return nil
		}
		type result struct {
			rep *Report
			err error
		}
		first := make(chan result)
		go func() {
			rep, err := Run(t.Context(), ints(10), fn, Options{Concurrency: 1, Journal: path})
			first <- result{rep, err}
		}()
		time.Sleep(1500 * time.Millisecond) // the first run is on its second item

		t0 := time.Now()
		before := calls.Load()
		rep, err := Run(t.Context(), ints(10), fn, Options{Journal: path})
		var je *JournalError
		if !errors.Is(err, ErrJournalLocked) || !errors.As(err, &je) || je.Path != path || rep != nil {
			t.Errorf("second run = %v, %v; want a *JournalError matching ErrJournalLocked", rep, err)
		}
		if d := time.Since(t0); d != 0 || calls.Load() != before {
			t.Errorf("second run took %v and made %d calls; want an error at once, no call", d, calls.Load()-before)
		}

		r := <-first
		if r.err != nil || r.rep.Summary.Succeeded != 10 {
			t.Fatalf("first run = %v, %v; want 10 succeeded", r.rep.Summary, r.err)
		}
		rep, err = Run(t.Context(), ints(10), fn, Options{Journal: path})
		if err != nil || rep.Summary.Resumed != 10 {
			t.Errorf("run after the first returned = %v, %v; want the lock free and 10 resumed", rep.Summary, err)
		}
	})
}

// TestJournalLockReleasedOnError: a run that locks the journal and then
// finds it corrupt releases the lock; the next run sees the corruption
// again, not a lock.
func TestJournalLockReleasedOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	writeFile(t, path, "not json\n"+journalLines("0"))
	for range 2 {
		_, err := Run(context.Background(), ints(2), func(context.Context, int) error { return nil }, Options{Journal: path})
		if !errors.Is(err, errCorrupt) || errors.Is(err, ErrJournalLocked) {
			t.Fatalf("Run = %v, want the corrupt journal's error", err)
		}
	}
}

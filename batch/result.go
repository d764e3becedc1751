package batch

import (
	"fmt"
	"strings"
	"time"
)

// Outcome is what became of one item.
type Outcome int

const (
	// NotStarted means the item was never sent: its function was never
	// called (the context ended, StopOnError stopped the run, or the journal
	// failed first), or its key's pause held back each of its attempts
	// before it was sent (see [Result].Attempts) until the run ended. It is
	// the zero Outcome.
	NotStarted Outcome = iota
	// Succeeded means the item's last attempt returned nil.
	Succeeded
	// Failed means the item's last attempt returned an error that was not
	// a throttle, while the run's context was still live.
	Failed
	// Interrupted means the item was started but the run ended before it
	// finished. Its attempt returned an error after the context ended. Or it
	// was throttled and waiting for another attempt, a throttle that ran out
	// of time included. Or its attempt met a configuration error (matching
	// pace.ErrInvalidConfig), which ends the run. It is not written to the
	// journal, so a resumed run does it again. If it was started, it is then
	// in doubt, unless HTTP had not sent it yet.
	Interrupted
	// InDoubt means an earlier run with the same journal started the item and
	// ended before recording its end. So the upstream may or may not have
	// applied it. This run did not send it again: it was not declared
	// idempotent and carried no idempotency key (see [Options.Journal]). Its
	// Err matches [ErrInDoubt]. Check it with the upstream, or run again with
	// [Options.ResendInDoubt]. It is not written to the journal, so it stays
	// in doubt.
	InDoubt
)

var outcomeNames = [...]string{"not started", "succeeded", "failed", "interrupted", "in doubt"}

// String returns "not started", "succeeded", "failed", "interrupted" or
// "in doubt".
func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomeNames) {
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
	return outcomeNames[o]
}

// Result is the account of one item.
type Result struct {
	Index   int     // position of the item in the input
	ID      string  // the item's key: Options.ID(Index), or the index in decimal
	Outcome Outcome // what became of the item
	// Err is the error of the item's last attempt: nil when it succeeded,
	// the failure when it failed, and the throttle or context error when it
	// was interrupted. For an item restored from the journal it is a plain
	// error with the recorded message.
	Err error
	// Status is the last HTTP status code the item's attempts reported
	// (through [HTTP], [RecordStatus], or a [*StatusError] or
	// [*ThrottledError] they returned), or 0 if none did.
	Status int
	// Attempts is how many times the item's function was called, throttled
	// attempts included. A call of [HTTP] that its key's pause held back,
	// nothing sent, is not counted.
	Attempts int
	// Duration is the time spent in the item's function, all attempts
	// together; pauses between attempts are not included.
	Duration time.Duration
	// Resumed means the result was restored from the journal of an earlier
	// run and the function was not called in this one.
	Resumed bool
}

// Summary counts the items of a run. In the summary of a finished run,
// Items == Succeeded + Failed + Interrupted + InDoubt + NotStarted. In a
// [Progress] report, the items started and not yet finished are counted in
// Running. NotStarted counts those not yet reached.
type Summary struct {
	Items       int // items given to Run
	Succeeded   int // including those restored from the journal
	Failed      int // including those restored from the journal
	Interrupted int // started, cut off when the run ended
	InDoubt     int // started by an earlier run that ended first, not sent again (see InDoubt)
	NotStarted  int // never started
	Running     int // in flight or waiting for a retry; 0 once Run returns
	Resumed     int // restored from the journal, not run again (in-doubt items left alone included)
	Redone      int // in doubt after an earlier run, and done again as safe to repeat

	Throttled int // attempts that came back throttled (HTTP 429 and the like) or refused by a client-side limit, nothing sent; not those the key's pause held back (see Result.Attempts)
	Requeued  int // items put back in line at least once after a retryable failure (see Options.MaxRequeues)
	Retries   int // attempts beyond each item's first (throttled and requeued items')
	Pauses    int // times a throttle paused an open key; its probes' throttles extend that pause and count once

	Elapsed time.Duration // time since Run started
	// Ideal is the least time Options.Rate allows for the items this run
	// had to do (restored ones excluded): the instant the last of them
	// could start at the earliest. Zero when there is no Rate.
	Ideal time.Duration
}

// String formats s on one line, for example
//
//	300 items: 300 succeeded, 0 failed, 0 not started; 10 throttled, 10 retries, 1 pause; elapsed 3m6s, ideal 59s
//
// Interrupted, in-doubt, running, resumed and redone items, and the ideal
// time, appear only when there are some.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d items: %d succeeded, %d failed", s.Items, s.Succeeded, s.Failed)
	if s.Interrupted > 0 {
		fmt.Fprintf(&b, ", %d interrupted", s.Interrupted)
	}
	if s.InDoubt > 0 {
		fmt.Fprintf(&b, ", %d in doubt", s.InDoubt)
	}
	if s.Running > 0 {
		fmt.Fprintf(&b, ", %d running", s.Running)
	}
	fmt.Fprintf(&b, ", %d not started", s.NotStarted)
	if s.Resumed > 0 {
		fmt.Fprintf(&b, " (%d resumed from the journal)", s.Resumed)
	}
	if s.Redone > 0 {
		fmt.Fprintf(&b, " (%d in doubt redone)", s.Redone)
	}
	fmt.Fprintf(&b, "; %d throttled", s.Throttled)
	if s.Requeued > 0 {
		fmt.Fprintf(&b, ", %d requeued", s.Requeued)
	}
	fmt.Fprintf(&b, ", %d %s, %d %s",
		s.Retries, plural(s.Retries, "retry", "retries"), s.Pauses, plural(s.Pauses, "pause", "pauses"))
	fmt.Fprintf(&b, "; elapsed %v", s.Elapsed.Round(time.Millisecond))
	if s.Ideal > 0 {
		fmt.Fprintf(&b, ", ideal %v", s.Ideal)
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Progress is passed to Options.OnProgress: the counts so far, and what
// happened.
type Progress struct {
	Summary // counts so far; Elapsed is the time since Run started

	// Index is the item whose attempt just ended, or -1 when the call
	// reports a pause or a resume.
	Index int

	// Paused reports that a key of the run is paused after a throttle.
	Paused bool

	// Until is when the latest pause of the run's keys ends while Paused,
	// the zero Time otherwise.
	Until time.Time
}

// Report is what [Run] returns: one Result per item, in input order, and
// their Summary. [Report.WriteHTML] draws the run over time.
type Report struct {
	Results []Result // Results[i] is the account of items[i]
	Summary Summary  // the counts of the whole run

	tl *timeline // what the run did over time (see WriteHTML), or nil
}

// ItemError is the error of one failed item, as found in an [*Error] (as
// First, or as Stop with StopOnError). Its message carries no "batch:"
// prefix because it is always read inside an Error's, which has one.
type ItemError struct {
	Index  int    // position of the item in the input
	ID     string // the item's key
	Status int    // last HTTP status reported, or 0
	Err    error  // the item's error
}

// Error returns "item <Index> (id <ID>, status <Status>): <Err>", leaving
// out the status when it is 0.
func (e *ItemError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("item %d (id %q, status %d): %v", e.Index, e.ID, e.Status, e.Err)
	}
	return fmt.Sprintf("item %d (id %q): %v", e.Index, e.ID, e.Err)
}

// Unwrap returns e.Err.
func (e *ItemError) Unwrap() error { return e.Err }

// Error is the error [Run] returns when not every item succeeded, or the
// journal could not be written. The [Report] has the details; Error says
// how many and why.
//
// errors.Is and errors.As see through it to Stop and First: a cancelled
// run matches context.Canceled, and errors.As(err, &itemErr) finds the first
// failed item.
type Error struct {
	Failed      int // items that failed
	Interrupted int // items started but not finished
	InDoubt     int // items in doubt, not sent again
	NotStarted  int // items never started

	// Stop is why the run ended before every item was done. It is one of
	// these:
	//
	//   - the context's cause;
	//   - the first failure when StopOnError is set (an *ItemError);
	//   - the first item error matching pace.ErrInvalidConfig (an *ItemError);
	//   - a journal error;
	//   - the first wait that would outlast the context's deadline: a
	//     throttle's pause, or a client-side limit's. It ends the items of its
	//     key, not always the run (docs/batch.md). It matches ErrThrottled and
	//     context.DeadlineExceeded.
	//
	// It is nil when nothing cut an item short.
	Stop error

	// First is the first failed item in input order, or nil.
	First *ItemError
}

// Error returns "batch: <Failed> failed, <Interrupted> interrupted,
// <NotStarted> not started". When there are some, ", <InDoubt> in doubt"
// comes before "not started". ": stopped: <Stop>" and "; first failure:
// <First>" follow when they are set (First only when it is not Stop).
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch: %d failed, %d interrupted", e.Failed, e.Interrupted)
	if e.InDoubt > 0 {
		fmt.Fprintf(&b, ", %d in doubt", e.InDoubt)
	}
	fmt.Fprintf(&b, ", %d not started", e.NotStarted)
	if e.Stop != nil {
		fmt.Fprintf(&b, ": stopped: %v", e.Stop)
	}
	if e.First != nil && e.First != e.Stop {
		fmt.Fprintf(&b, "; first failure: %v", e.First)
	}
	return b.String()
}

// Unwrap returns Stop and First, those that are not nil.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Stop != nil {
		errs = append(errs, e.Stop)
	}
	if e.First != nil && e.First != e.Stop {
		errs = append(errs, e.First)
	}
	return errs
}

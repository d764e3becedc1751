package main

import (
	"fmt"
	"io"
	"time"

	"github.com/pacehttp/pace/batch"
)

// tally is what one run did, as the batch, the client and the API saw it.
type tally struct {
	batch.Summary // the batch's counts; Ideal is set by this program

	rate    int    // the API's limit, requests in any second
	err     error  // batch.Run's error, nil when every item succeeded
	journal string // -journal, or empty
	report  string // -report, once written, or empty

	// At the API; only when it is the local one.
	local             bool
	admitted, refused int64

	// At the client, through Transport.OnEvent.
	client429, pauses, transportRetries int64

	retriedItems int // items sent more than once, by the Transport or the batch

	// With -faults, at the local API.
	faults                           bool
	unavailable, resets, resetsAfter int64
	chargedTwice                     int
}

// notDone returns the items that neither succeeded nor failed nor are in
// doubt: interrupted or never started (a cancelled run, say). Nothing is
// recorded for them, so a run with the same -journal does them.
func (t tally) notDone() int { return t.Items - t.Succeeded - t.Failed - t.InDoubt }

// ok reports whether every item succeeded.
func (t tally) ok() bool { return t.Failed == 0 && t.InDoubt == 0 && t.notDone() == 0 }

// resume says what becomes of the items not done.
func (t tally) resume() string {
	if t.journal != "" {
		return "a run with the same -journal does them; it skips the items done"
	}
	return "not recorded anywhere: with -journal, a run started again would do only them"
}

// throttledNote says how many throttled attempts reached the batch and
// why that count differs from the 429s the client saw: the Transport
// retries a 429 itself while it has attempts left, so only the 429s it gave
// back reach the batch, and the batch also counts the calls pace's limiter
// refused before anything was sent (an error matching pace.ErrRateLimited,
// such as a full queue), which no server saw.
func (t tally) throttledNote() string {
	note := fmt.Sprintf("%d %s reached the batch (batch-level Throttled: 429s the Transport gave back after its own attempts, plus calls pace's limiter refused before sending)",
		t.Throttled, plural(int64(t.Throttled), "attempt", "attempts"))
	if t.client429 > 0 && t.Throttled == 0 {
		note += fmt.Sprintf("; the Transport retried all %d 429s itself", t.client429)
	}
	return note
}

// print writes the summary.
func (t tally) print(w io.Writer) {
	row := func(name, format string, args ...any) {
		fmt.Fprintf(w, "  %-10s %s\n", name, fmt.Sprintf(format, args...))
	}
	fmt.Fprintln(w, "summary")
	row("items", "%d", t.Items)
	if t.Resumed > 0 {
		row("succeeded", "%d (%d of them done by an earlier run, from the journal)", t.Succeeded, t.Resumed)
	} else {
		row("succeeded", "%d", t.Succeeded)
	}
	row("failed", "%d", t.Failed)
	row("in doubt", "%d%s", t.InDoubt, t.inDoubtNote())
	if n := t.notDone(); n > 0 {
		row("not done", "%d (interrupted or not started; %s)", n, t.resume())
	} else {
		row("not done", "0")
	}
	if t.local {
		row("429s", "%d refused by the API (it admitted %d); %d seen by the client, %d host %s",
			t.refused, t.admitted, t.client429, t.pauses, plural(t.pauses, "pause", "pauses"))
	} else {
		row("429s", "%d seen by the client, %d host %s (the remote API's own count is unknown)",
			t.client429, t.pauses, plural(t.pauses, "pause", "pauses"))
	}
	row("throttled", "%s", t.throttledNote())
	row("retried", "%d %s sent more than once; %d retries (%d by the Transport, %d by the batch, %d of them requeued after the Transport gave up)",
		t.retriedItems, plural(int64(t.retriedItems), "item", "items"), t.transportRetries+int64(t.Retries), t.transportRetries, t.Retries, t.requeueAttempts())
	if t.faults {
		row("faults", "%d answered 503, %d connections reset (%d after the charge was applied); charged twice: %d (the API's count)",
			t.unavailable, t.resets, t.resetsAfter, t.chargedTwice)
	}
	row("elapsed", "%v", t.Elapsed.Round(time.Millisecond))
	if t.Ideal > 0 {
		ratio := "" // meaningless when the run stopped early
		if t.notDone() == 0 {
			ratio = fmt.Sprintf("; elapsed is %.1f%% of it", 100*float64(t.Elapsed)/float64(t.Ideal))
		}
		row("ideal", "%v = %d gaps of 1/%d s between %d calls spaced evenly at the API's limit%s",
			t.Ideal.Round(time.Millisecond), t.Items-t.Resumed-1, t.rate, t.Items-t.Resumed, ratio)
	}
	if t.client429 > 0 {
		fmt.Fprintln(w, "Each 429 paused the whole host for the API's Retry-After; the call was then sent again (by the batch, or by the Transport when it retried), and the pacer resumed.")
	}
	if t.report != "" {
		fmt.Fprintf(w, "report  %s (open it in a browser)\n", t.report)
	}
	if t.ok() {
		fmt.Fprintf(w, "OK: all %d calls succeeded, none lost\n", t.Items)
	} else {
		hint := ""
		if t.notDone() > 0 && t.journal != "" {
			hint = " (run again with the same -journal to do them)"
		}
		fmt.Fprintf(w, "NOT OK: %d failed, %d in doubt, %d not done%s\n", t.Failed, t.InDoubt, t.notDone(), hint)
	}
}

// inDoubtNote explains the in-doubt count: items a killed run left started
// that this one did not send again.
func (t tally) inDoubtNote() string {
	switch {
	case t.InDoubt > 0:
		return " (started by a killed run and not sent again: no Idempotency-Key; check them with the API, or resume with batch.Options.ResendInDoubt)"
	case t.Redone > 0:
		return fmt.Sprintf(" (%d started by a killed run were sent again, as safe to repeat)", t.Redone)
	case t.journal == "":
		return " (only a run resumed from a -journal can have some)"
	}
	return ""
}

// requeueAttempts returns the batch's attempts of items that went back in
// line after a retryable failure: its retries that were not throttles.
func (t tally) requeueAttempts() int { return max(t.Retries-t.Throttled, 0) }

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

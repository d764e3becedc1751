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

	rate int   // the API's limit, requests in any second
	err  error // batch.Run's error, nil when every item succeeded

	// At the API; only when it is the local one.
	local             bool
	admitted, refused int64

	// At the client, through Transport.OnEvent.
	client429, pauses, transportRetries int64
}

// lost returns the items that neither succeeded nor failed: interrupted or
// never started.
func (t tally) lost() int { return t.Items - t.Succeeded - t.Failed }

// ok reports whether every item succeeded.
func (t tally) ok() bool { return t.Failed == 0 && t.lost() == 0 }

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
	row("lost", "%d", t.lost())
	if t.local {
		row("429s", "%d refused by the API (it admitted %d); %d seen by the client, %d host %s; %d reached the batch",
			t.refused, t.admitted, t.client429, t.pauses, plural(t.pauses, "pause", "pauses"), t.Throttled)
	} else {
		row("429s", "%d seen by the client, %d host %s, %d reached the batch (the remote API's own count is unknown)",
			t.client429, t.pauses, plural(t.pauses, "pause", "pauses"), t.Throttled)
	}
	row("retries", "%d (%d by the Transport, %d by the batch)", t.transportRetries+int64(t.Retries), t.transportRetries, t.Retries)
	row("elapsed", "%v", t.Elapsed.Round(time.Millisecond))
	if t.Ideal > 0 {
		ratio := "" // meaningless when the run stopped early
		if t.lost() == 0 {
			ratio = fmt.Sprintf("; elapsed is %.1f%% of it", 100*float64(t.Elapsed)/float64(t.Ideal))
		}
		row("ideal", "%v = %d gaps of 1/%d s between %d calls spaced evenly at the API's limit%s",
			t.Ideal.Round(time.Millisecond), t.Items-t.Resumed-1, t.rate, t.Items-t.Resumed, ratio)
	}
	if t.client429 > 0 {
		fmt.Fprintln(w, "Each 429 paused the whole host for the API's Retry-After; the Transport then sent the call again, and the pacer resumed.")
	}
	if t.ok() {
		fmt.Fprintf(w, "OK: all %d calls succeeded, none lost\n", t.Items)
	} else {
		fmt.Fprintf(w, "NOT OK: %d failed, %d lost (interrupted or not started)\n", t.Failed, t.lost())
	}
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Package batch runs many items through one function, or one [http.Client],
// with bounded concurrency, and accounts for every item.
//
// [Run] calls a function once per item, at most [Options.Concurrency] at a
// time, and returns a [Report]: one [Result] per item in input order
// (succeeded, failed with its error and last HTTP status, interrupted, or
// not started), and a [Summary]. [HTTP] turns a request builder and an
// *http.Client into such a function.
//
// # Throttling
//
// An attempt that comes back throttled (an HTTP 429 through [HTTP], any
// error matching [ErrThrottled], or a client-side refusal matching
// [pace.ErrRateLimited], such as pace.ErrWaitExceedsDeadline, where the
// client's own limit sent nothing) never fails its item. Run pauses dispatch
// of every new item, waits for the delay the server asked for (a
// [*ThrottledError] carries it) or, without one, a backoff that starts at
// [Options.Backoff] and doubles up to [Options.MaxBackoff], then sends that
// one item again as a probe. Only when the probe comes back unthrottled does
// full concurrency resume. A throttled item is retried until it is done or
// the run ends; it is never lost and never run again after it succeeded. A
// throttle that runs out of time is not a failure: when the pause would
// outlast the context's deadline the run ends there, and the item is
// Interrupted, not journaled, so that a resumed run does it.
//
// After such a pause Run also keeps to the allowance the server showed: no
// more starts in any window than the server accepted (answered without a
// throttle) between the previous resume and the throttle, where the window
// is as long as the time from the first of those starts to the successful
// probe. Like the ceiling below, it is counted exactly, by a sliding log
// ([pace.SlidingLog]). This learned limit grows by an eighth each time a
// whole window passes, and the next pause replaces it; [Summary.Learned]
// shows it. It is what keeps a batch that meets a quota of N requests per
// rolling window from throttling again on every window (case C25 in the
// project's case list, from GSA/sam_api#51).
//
// # Rate
//
// Pacing belongs first to the client: an http.Client whose Transport paces
// per host (for example pace.Transport) spaces the requests of every caller,
// the batch included. [Options.Rate] adds a ceiling of Run's own, counted on
// every attempt Run starts, retries and probes included: at most N starts in
// any window of length Per. It is exact (a sliding log, [pace.Sliding]), so
// pace.PerSecond(5) never puts more than 5 starts in any 1 s, and it also gives
// [Summary.Ideal], the least time the ceiling allows for the run.
//
// # Resuming
//
// With [Options.Journal] set, Run appends one JSON line per finished item to
// that file and, on a later run with the same file, skips the items it
// already holds and restores their results, so a job killed half-way and
// started again does each item once and ends with the same results. See
// [Options.ID] for the choice of key. One run at a time may use a journal:
// Run locks the file, and a second run fails at once with
// [ErrJournalLocked] (see [Options.Journal] for the caveats).
//
// # Concurrency
//
// Run calls the item function from several goroutines at once, and
// [Options.OnProgress] from Run's own goroutine, one call at a time. Run
// returns only after every call it started has returned, so no goroutine of
// its own outlives it.
package batch

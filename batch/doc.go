// Package batch runs many items through one function, or one [http.Client],
// with bounded concurrency, and accounts for every item.
//
// [Run] calls a function once per item, at most [Options.Concurrency] at a
// time, and returns a [Report]: one [Result] per item in input order
// (succeeded, failed with its error and last HTTP status, interrupted, in
// doubt, or not started), and a [Summary]. [HTTP] turns a request builder and an
// *http.Client into such a function.
//
// # Throttling
//
// An attempt the server throttled (through [HTTP], a throttle as
// [pace.Throttled] defines it, also when a pace.Transport
// with ErrorOnGiveUp returns that answer inside a *pace.AttemptsError; any
// error matching [ErrThrottled], or pace.ErrThrottled, the Transport's word
// for a wait behind a probe that was throttled again) never fails its item:
// the item goes back in line, and the throttle pauses its key. Run uses
// pace's throttle engine, the one pace.Transport uses ([pace.Keyed]). An
// attempt of [HTTP] has the key its client's pace.Transport gives the
// request: what Transport.Key returns, or else the request's host as
// pace.Hosts matches it. So each tenant's API key is a key of its own.
// Any other item function has one key for the whole run. While a key is
// paused none of its attempts is sent; when the
// pause ends one attempt goes first as a probe and the key's others wait
// for its answer: another throttle pauses the key again, anything else
// lets them go. A throttle pauses only its own key: the other keys of a
// run go on.
//
// The pause is the delay the server asked for (a [*ThrottledError] carries
// it), never under retry.MinThrottlePause, or without one [Options.Backoff]
// doubled for each consecutive throttle of the key; either way at most
// [Options.MaxBackoff], the cap pace.Transport applies as MaxRetryAfter
// (five minutes by default), so a Retry-After of a day, or of 9999999999
// seconds, pauses a key for five minutes, not a day: a server cannot make
// the run sleep without bound. ([Options.Backoff] and [Options.MaxBackoff]
// refer to this rule.) Consecutive throttles are those of attempts that left
// after the key's latest pause was set; a throttle of an attempt that left
// before it is the same news again, and once the key is open again it is
// ignored. A throttled item is retried until it is done or the run ends;
// it is never lost and never run again after it succeeded.
//
// An item of [HTTP] whose key is paused waits in Run's line, not in one of
// the [Options.Concurrency] slots, so that a paused key never holds up the
// others. That wait is no attempt: it counts in no [Result].Attempts, and
// not in Summary.Retries or Throttled. HTTP asks a pace.Transport to hand
// back a throttle longer than retry.MinThrottlePause, not to sleep on it:
// the Transport returns the throttled answer unretried, and refuses a
// request of a paused key at once, nothing sent. A Limiter that is no
// [*pace.Keyed] (redislimit's, say) cannot refuse: there a request of a
// paused key waits in the Transport, in its slot. Other waits hold their
// slot too: for a probe's answer, a learned limit, a refusal's wait (see
// below), and every wait of another item function.
//
// A wait that would outlast the context's deadline, a pause or a client-side
// refusal's (see below), is not slept in vain, and it is not a failure: the
// item ends Interrupted at once, not journaled, so that a resumed run does
// it. Under a key of its own (the key of an [HTTP] request) that ends the
// key's items only: their attempts meet the same wait at the gate, before
// anything is sent, and end likewise, while the other keys go on. Under the
// run's key, which every attempt of another item function shares, the run
// ends there, and the items it had not reached are NotStarted. Either way
// the [Error]'s Stop says so, matching ErrThrottled and
// context.DeadlineExceeded. So with the defaults a Retry-After of a day
// pauses its key for five minutes, and a run with 3 s left ends that key's
// items at once, Interrupted: give the run a deadline past MaxBackoff, or a
// shorter MaxBackoff, to wait instead.
//
// After a key's pause Run also keeps to the allowance the server showed for
// that key: no more starts in any window than the server accepted (answered
// without a throttle) between the key's previous resume and the throttle,
// where the window is as long as the time from the first of those starts to
// the successful probe. Like the ceiling below, it is counted exactly, by a
// sliding log ([pace.SlidingLog]), per key. This learned limit grows by an
// eighth each time a whole window passes, and the key's next pause replaces
// it. It is what keeps a batch that meets a quota of N requests per rolling
// window from throttling again on every window (GSA/sam_api#51).
//
// # Client-side refusals
//
// An attempt a client-side limit refused, nothing sent (an error matching
// [pace.ErrRateLimited] that is none of the server throttles above:
// pace.ErrWaitTooLong when a pace.Transport's MaxWait is shorter than its
// limit's wait, pace.ErrQueueFull, pace.ErrWaitExceedsDeadline) does not
// fail its item either, but it is no news of the server's: it pauses no key
// and teaches Run no limit. The item goes back in line, due when the wait
// the refusal named has passed ([*pace.WaitError].Delay; Options.Backoff
// when it names none; at most Options.MaxBackoff), and the key's other
// attempts wait as long at the gate, so that the run keeps the pace of the
// limit that refused, at most Concurrency refusals for each start it
// allows. Refusals count in [Summary].Throttled and Retries, not in Pauses
// or Requeued, nor against Options.MaxRequeues. When a pace.Transport's
// limiter refuses the retry of a failed answer (a *pace.AttemptsError), the
// failure is that answer's (see Failures).
//
// # Failures
//
// A failure that outlived the client's own retries (an answer of 408, 500,
// 502, 503 or 504, returned or, with pace.Transport's ErrorOnGiveUp, inside
// a *pace.AttemptsError; or a pace.Transport that ran out of attempts, retry
// budget or time, or whose limiter refused the retry) goes back in line when
// the item is safe to send again, and is tried later in the run at a lower
// pace, at most [Options.MaxRequeues] times (3 by default, after 0.5-1 s,
// 1-2 s and 2-4 s); any other failure, and one that outlives the requeues,
// fails its item.
//
// # Rate
//
// Pacing belongs first to the client: an http.Client whose Transport paces
// per host (for example pace.Transport) spaces the requests of every caller,
// the batch included. [Options.Rate] adds a ceiling of Run's own, counted on
// every attempt Run starts, retries and probes included, at the moment it
// leaves (after any wait for its key): at most N starts in any window of
// length Per. It is exact (a sliding log, [pace.SlidingLog]), so
// pace.PerSecond(5) never puts more than 5 starts in any 1 s, and it also gives
// [Summary.Ideal], the least time the ceiling allows for the run.
//
// # Resuming
//
// With [Options.Journal] set, Run appends JSON lines to that file, a
// write-ahead journal: an item's start (for [HTTP], its request's method
// and idempotency key) before it can have any effect, and its end. A later
// run with the same file skips the items it holds as finished and restores
// their results. An item of [HTTP] whose request was never recorded is
// done again. One started and not finished is in doubt, and is done
// again only when that is safe (an idempotent request, the same
// idempotency key, or [Options.Idempotent]); otherwise it ends [InDoubt].
// So a job killed half-way and started again applies no item twice, given
// a server that deduplicates requests by their idempotency key (as Stripe,
// Adyen and PayPal do); an item in doubt is left for you to check. See
// [Options.ID] for the choice of key. A journal belongs to one job
// ([Options.Job], and each item's fingerprint): Run refuses another job's
// with [ErrOtherJob], and a path that is no regular file. One run at a
// time may use a journal: Run locks the file, and a second run fails at
// once with [ErrJournalLocked] (see [Options.Journal] for the caveats).
//
// # Concurrency
//
// Run calls the item function from several goroutines at once, and
// [Options.OnProgress] from Run's own goroutine, one call at a time. Run
// returns only after every call it started has returned, so no goroutine of
// its own outlives it.
package batch

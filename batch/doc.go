// Package batch runs many items through one function, or one [http.Client],
// with bounded concurrency, and accounts for every item.
//
// [Run] calls a function once per item, at most [Options.Concurrency] at a
// time. It returns a [Report]: one [Result] per item in input order, and a
// [Summary]. An item succeeds, fails, is interrupted, is in doubt, or is not
// started. [HTTP] turns a request builder and an *http.Client into such a
// function.
//
// A throttled attempt (see [ErrThrottled]) never fails its item. The item
// goes back in line, and the throttle pauses its key. An [HTTP] attempt's
// key is the one its client's pace.Transport gives the request. Any other
// item function has one key for the whole run. The pause is the server's
// delay, or [Options.Backoff] doubled per consecutive throttle. It is at
// most [Options.MaxBackoff], so a server cannot make the run sleep without
// bound. After a pause Run keeps to the rate the server accepted before it.
// A paused key's items wait in Run's line, not in a Concurrency slot.
//
// A client-side refusal ([pace.ErrRateLimited]) sends the item back in line
// too. It pauses no key. A failure that outlived the client's retries goes
// back in line when the item is safe to send again, at most
// [Options.MaxRequeues] times. Any other failure fails its item. A wait
// that would outlast the context's deadline ends the item Interrupted.
//
// [Options.Rate] caps the starts of the run, retries included, exactly.
//
// With [Options.Journal] set, Run writes a write-ahead journal. A later run
// with the same file skips the items it holds as finished. An item started
// and not finished is in doubt. It is done again only when that is safe;
// otherwise it ends [InDoubt]. A journal belongs to one job ([ErrOtherJob])
// and one run at a time ([ErrJournalLocked]).
//
// Run calls the item function from several goroutines at once.
// [Options.OnProgress] is called from Run's own goroutine, one call at a
// time. Run returns only after every call it started has returned.
//
// docs/batch.md states each rule in full.
package batch

package batch

import (
	"fmt"
	"time"

	"github.com/pacehttp/pace"
)

// Defaults for the zero fields of [Options].
const (
	// DefaultConcurrency is the number of items in flight at once when
	// Options.Concurrency is zero. Raise it when one call takes longer than
	// Concurrency divided by the rate the server allows, or the batch will
	// run slower than the limit.
	DefaultConcurrency = 8

	// DefaultBackoff is the first pause after a throttled attempt that
	// carries no server delay.
	DefaultBackoff = time.Second

	// DefaultMaxBackoff caps a key's pause, the server's delay included (see
	// Options.MaxBackoff). It is long enough that a quota counted per minute
	// costs a handful of probes. It is short enough that a batch loses at most
	// five minutes after a quota counted per hour or per day resets.
	DefaultMaxBackoff = 5 * time.Minute
)

// ideal returns the least time the ceiling r (Options.Rate) allows for m
// starts: the first r.N go at once, the next r.N one window later, and so
// on. It is 0 for the zero Rate, and saturates rather than overflowing.
func ideal(r pace.Rate, m int) time.Duration {
	if r == (pace.Rate{}) || m <= 1 {
		return 0
	}
	windows := int64((m - 1) / r.N)
	if windows > int64(maxDuration/r.Per) {
		return maxDuration
	}
	return time.Duration(windows) * r.Per
}

const maxDuration = time.Duration(1<<63 - 1)

// Options configures [Run]. The zero value runs every item with
// DefaultConcurrency, no rate ceiling, no journal, and carries on past
// failures.
type Options struct {
	// Concurrency is the largest number of attempts in flight at once.
	// Zero means DefaultConcurrency. It must not be negative. A value above
	// the number of items is taken as the number of items, since no more
	// can be in flight; any larger value costs nothing.
	Concurrency int

	// Rate, if not zero, is a ceiling on how often Run starts attempts,
	// retries and probes included. It allows at most Rate.N starts in any
	// window of length Rate.Per. An exact sliding log ([pace.SlidingLog])
	// counts them, so the bound holds for every window, not only for aligned
	// ones. pace.PerSecond(5) allows 5 starts at once and never more than 5 in
	// any second. pace.Every(200 * time.Millisecond) spaces starts evenly, as
	// a leaky-bucket pacer at 5/s does. The zero Rate means no ceiling. Any
	// other must have N and Per positive, and N at most 1<<20 (the sliding
	// log's cap). It also sets [Summary.Ideal].
	Rate pace.Rate

	// StopOnError stops dispatch at the first failed item. No new item
	// starts, and the attempts in flight run to their end (they are not
	// cancelled). The items never started are reported as NotStarted. A
	// throttled attempt is not a failure. By default Run carries on.
	StopOnError bool

	// OnProgress, if non-nil, is called from Run's goroutine after every
	// attempt ends and whenever dispatch pauses or resumes; see [Progress].
	// Calls never overlap. It should return quickly: dispatch waits for it.
	OnProgress func(Progress)

	// Backoff is the first pause after a throttled attempt whose error
	// carries no server delay; each failed probe doubles it up to
	// MaxBackoff, and a successful probe resets it. A delay the server
	// gave replaces it, capped at MaxBackoff too (the package
	// documentation, Throttling, has the rule). It is also the wait after
	// a client-side refusal that names none, and the first of the requeue
	// waits (see MaxRequeues). Zero means DefaultBackoff.
	Backoff time.Duration

	// MaxBackoff caps every pause of a key: the doubling one and the server's
	// delay alike (docs/batch.md, "The rules in full"). It also caps the wait
	// after a client-side refusal, and the requeue waits. Zero means
	// DefaultMaxBackoff. It must not be below Backoff. When [HTTP]'s client
	// is a *pace.Transport, the pause the Transport sets on a key after a
	// throttle of one of Run's requests follows Backoff and MaxBackoff too,
	// within the Transport's own MaxRetryAfter.
	MaxBackoff time.Duration

	// MaxRequeues bounds how many times an item goes back in line after a
	// retryable failure that outlived the client's own retries. Such a
	// failure is one of these:
	//
	//   - an answer with a status the client's pace.Transport retries for the
	//     request (its Retry.Statuses, or its Hosts entry's), else one of
	//     retry.DefaultStatuses, but never a 429, which is a throttle. It may
	//     be returned, or be the Response of a *pace.AttemptsError
	//     (Transport.ErrorOnGiveUp).
	//   - a *pace.AttemptsError whose Transport ran out of attempts, retry
	//     budget, backoff or time before the call's deadline. Its Reason is
	//     retry.ReasonAttempts, ReasonBudget, ReasonBackoffStop or
	//     ReasonDeadline.
	//   - a *pace.AttemptsError whose limiter refused the wait for a retry.
	//   - the call's own timeout (context.DeadlineExceeded while the run's
	//     context is live).
	//
	// Only an item safe to send again is requeued. For [HTTP] that is a
	// request with an idempotent method or an idempotency key, which it gives
	// POSTs by default. Another item function's item is safe when Idempotent
	// declares it.
	//
	// A requeued item is tried again later in the run, at a lower pace. It
	// waits Backoff doubled for each earlier requeue of the item (at most
	// MaxBackoff). The wait is jittered to a random point of its second half
	// (0.5-1 s, 1-2 s, 2-4 s with the defaults). At most half of Concurrency
	// (at least 1) of the requeued attempts are in flight at once. An item is
	// never requeued when the wait would outlast the context's deadline.
	//
	// So an item makes at most 1 + MaxRequeues attempts at the batch level
	// (throttled ones apart). The Transport may retry each within its own
	// MaxAttempts and budget. Zero means DefaultMaxRequeues (3). A negative
	// value turns requeueing off, and the item fails at once.
	MaxRequeues int

	// Journal, if not empty, is the path of a JSON Lines file, a write-ahead
	// journal (created if missing). It makes the run resumable. Items the file
	// records as finished are skipped and their results restored. Every item
	// that finishes is appended as one line. Before an item's function is
	// first called, Run appends a record of its start. [HTTP] instead records
	// its request just before sending it, with its method and idempotency key.
	//
	// Lines reach the operating system before the call, each in one write(2).
	// So a killed process loses none (SIGKILL included: the page cache
	// outlives it). They are synced to disk (fsync) every 64 records, at least
	// once a second while records are pending, and at the end. So a machine
	// that loses power may lose up to a second of them. A torn last line (one
	// without its newline: a crash mid-write) is dropped and its item run
	// again. Any other line that is not a valid record makes Run fail at once
	// with a [*JournalError] naming the line. It fails before doing any item,
	// and leaves the file as it is. The format is versioned (see below).
	//
	// An item whose start is recorded and whose end is not is in doubt: the
	// upstream may have applied it. With HTTP, only a recorded request counts.
	// An item whose run ended before HTTP recorded its request is done again,
	// whatever its method. (An item function that calls HTTP's should have no
	// effect of its own.) A resumed run does an item in doubt again when that
	// is safe. It is safe when Idempotent declares it so. It is also safe when
	// its recorded request was idempotent (RFC 9110 section 9.2.2: GET, HEAD,
	// OPTIONS, TRACE, PUT, DELETE) or carried an Idempotency-Key, and HTTP
	// builds the same method, or the same key, again. The key HTTP derives
	// (see [IdempotencyKey]) is the same in every run of the journal. Any
	// other in-doubt item is not called. It ends [InDoubt], counted in
	// Summary.InDoubt, unless ResendInDoubt is set.
	//
	// A journal that cannot be written during a run (a full disk) stops it.
	// Run starts no more items, and returns the Report with an [*Error]
	// whose Stop is the [*JournalError]. An item whose end could not be
	// recorded keeps its outcome in that Report, yet is in doubt to a
	// resumed run.
	//
	// Only one run may use a journal at a time. Run takes an exclusive
	// advisory lock on the file (flock(2)) before reading it, and holds it
	// until it returns. The operating system releases it if the process dies.
	// A second run on the same file, in another process or in this one, fails
	// at once, before doing any item. Its error is a [*JournalError] matching
	// [ErrJournalLocked]. Caveats:
	//
	//   - the lock binds only runs of this package: a process that ignores
	//     flock can still write the file;
	//   - on NFS, Linux emulates flock with byte-range locks, which do not
	//     conflict within one process;
	//   - on systems without flock (Windows, AIX, Solaris, Plan 9, js/wasm,
	//     WASI) there is no lock at all.
	//
	// A journal belongs to one job (see Job), and is at most 1 GiB. Run
	// refuses a journal of another job (a [*JobError], matching
	// [ErrOtherJob]), before doing any item. It refuses a path that is not a
	// regular file (a FIFO, a device), and a larger file, each with a
	// [*JournalError]. It writes format version 3 and resumes no earlier
	// version: those record no job.
	//
	// The file holds a header (format, version, run ID, job). Per item it holds
	// its ID and fingerprint, its outcome, status, attempts and duration. It
	// holds the method and idempotency key HTTP sent. For a failed item it
	// holds its error's text. Every URL of a [*url.Error] in that text is cut
	// to scheme://host/path, without the path with HidePath. The user
	// information and the query are cut, as they often carry credentials
	// (user:password@, ?api_key=). It never holds a request's headers or body.
	// An item function's own error text is written as it is, apart from those
	// URLs: keep secrets out of it. Run creates a missing file with mode 0600
	// (read and write for its owner only, before the umask). An existing file
	// keeps its mode.
	Journal string

	// Job names the job that a journal belongs to. Run writes it in a new
	// journal's header, and refuses a journal that names another job. It also
	// records each item's fingerprint: 16 hex digits of SHA-256 over its JSON
	// encoding, none when it has no encoding. It refuses a journal that holds
	// another item under one of this run's IDs. A field that changes between
	// runs (a time stamp) makes another item: keep it out of the encoding
	// (json:"-"). So a job on the same items as another needs a name of its
	// own. A nightly job needs the date in its name, or a journal per night.
	// The empty name is the unnamed job's. An item of few possible values can
	// be guessed from its fingerprint: keep secrets out of items. With a
	// journal, Job and every item's ID must be valid UTF-8 (JSON holds nothing
	// else). Job must be at most 256 bytes. Run refuses others with a
	// *pace.ConfigError.
	Job string

	// ID returns the journal key of items[i]: a string that names the item
	// across runs. If nil, the key is the index i itself. That is right only if
	// a restarted run is given the same items in the same order. The list may
	// change between runs (items added, removed or sorted differently). Then
	// give an ID derived from the item, such as its database key. Keys must be
	// unique within the batch (Run checks, with a journal or without).
	// Result.ID holds the key either way. The key HTTP derives for a POST comes
	// from it (see [IdempotencyKey]).
	ID func(i int) string

	// RedoFailed makes a resumed run start again the items the journal
	// records as failed. By default every finished item is skipped, so
	// that a restart never repeats a call.
	RedoFailed bool

	// Idempotent, if non-nil, reports whether items[i] may be done twice with
	// no harm. Such an item function reads, or sets a value, or passes an
	// idempotency key of its own (such as [IdempotencyKey]'s). Run asks it
	// only of items in doubt after an earlier run: those it declares
	// idempotent are done again. Nil declares none. The requests of [HTTP]
	// speak for themselves (see Journal).
	Idempotent func(i int) bool

	// ResendInDoubt makes a resumed run do again every item in doubt, as if
	// each were idempotent. Use it when the upstream was checked and did not
	// apply them, or when it tolerates duplicates.
	ResendInDoubt bool

	// HidePath keeps URL paths out of what Run writes: the journal's error
	// text and the errors of [HTTP]'s requests show each URL of a
	// [*url.Error] as scheme://host/[redacted]. Set it for APIs that carry
	// a secret in the path, as pace.Transport's HidePath says. By default
	// the path is kept. Other text in an item function's own errors is
	// written as it is.
	HidePath bool
}

// withDefaults returns o with zero fields replaced by their defaults, or a
// *pace.ConfigError naming the first invalid field.
func (o Options) withDefaults() (Options, error) {
	if o.Concurrency < 0 {
		return o, &pace.ConfigError{Field: "Concurrency", Value: o.Concurrency, Reason: "must not be negative"}
	}
	if o.Rate != (pace.Rate{}) {
		if err := pace.SlidingLog(o.Rate).Err(); err != nil {
			return o, err // names Rate.N or Rate.Per
		}
	}
	switch {
	case o.Backoff < 0:
		return o, &pace.ConfigError{Field: "Backoff", Value: o.Backoff, Reason: "must not be negative"}
	case o.MaxBackoff < 0:
		return o, &pace.ConfigError{Field: "MaxBackoff", Value: o.MaxBackoff, Reason: "must not be negative"}
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	switch {
	case o.MaxRequeues == 0:
		o.MaxRequeues = DefaultMaxRequeues
	case o.MaxRequeues < 0:
		o.MaxRequeues = 0
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = max(DefaultMaxBackoff, o.Backoff)
	}
	if o.MaxBackoff < o.Backoff {
		return o, &pace.ConfigError{Field: "MaxBackoff", Value: o.MaxBackoff, Reason: fmt.Sprintf("must not be below Backoff (%v)", o.Backoff)}
	}
	return o, nil
}

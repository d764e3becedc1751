package batch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace/internal/retryrule"
)

// ErrInDoubt is the Err of an item that is [InDoubt]. An earlier run with
// the same journal started it, and ended before recording its end. It was
// killed, cancelled, or its machine was lost. So the upstream may or may
// not have applied it, and it is not safe to send again. See
// [Options.Journal] for what is sent again and what is not.
var ErrInDoubt = errors.New("batch: in doubt: an earlier run started the item and ended before it finished; not sent again")

// run is what the attempts of one Run share about its journal.
type run struct {
	journal *journal // nil without Options.Journal
	path    string   // Options.Journal
	id      string   // the run ID: the journal's, or a random one per Run without a journal
	// selfJournaled is set once the item function turned out to be HTTP's,
	// which records each item's start itself, just before sending: Run
	// then records no start of its own.
	selfJournaled atomic.Bool
	hidePath      bool // Options.HidePath
}

// item is what the attempts of one item know of its place in the journal.
// The attempts of an item are never in flight together, and Run hands each
// one to a new goroutine, so only one goroutine touches an item at a time.
type item struct {
	run     *run
	id      string
	fp      string  // the item's fingerprint, with a journal
	started bool    // the item's start is recorded; set with no journal too
	doubt   *record // in doubt: the sending record of the earlier run, which HTTP compares the new request with
	resend  bool    // in doubt, and sent again anyway (Options.ResendInDoubt or Options.Idempotent)
	req     record  // the last request HTTP sent: method and key
	sent    record  // the last sending record written
}

// begin records the item's start before its function is first called,
// unless the function records it itself (HTTP) or it is recorded already.
func (it *item) begin(now time.Time) error {
	if it.started || it.run.journal == nil || it.run.selfJournaled.Load() {
		return nil
	}
	if err := it.run.journal.write(record{ID: it.id, Outcome: recStarted, FP: it.fp}, now); err != nil {
		return &JournalError{Path: it.run.path, Err: err}
	}
	it.started = true
	return nil
}

// entered records that HTTP's function was called for the item, before it
// builds the request. From then on Run records no start of its own (HTTP
// records each request). A start Run recorded for this attempt is undone
// with a "not sent" record. HTTP sends nothing before its sending record.
// So a run that ends before it leaves the item to be done again. An item
// in doubt since an earlier run, or with a request recorded, stays as it
// is.
func (it *item) entered() error {
	it.run.selfJournaled.Store(true)
	if !it.started || it.run.journal == nil || it.doubt != nil || it.resend || it.sent != (record{}) {
		return nil
	}
	if err := it.run.journal.write(record{ID: it.id, Outcome: recUnsent}, time.Now()); err != nil {
		return &JournalError{Path: it.run.path, Err: err}
	}
	it.started = false
	return nil
}

// sending prepares req, the item's request, to be sent, and records it:
//
//   - It gives a POST or PATCH without an idempotency key the item's key
//     (see [IdempotencyKey]). The opt-out is the header there with an empty
//     value; the header is then removed.
//   - It refuses a request of an item in doubt that is not as safe to send
//     again as the earlier run's. The error matches ErrInDoubt.
//   - It writes a sending record before the request leaves.
func (it *item) sending(req *http.Request) error {
	key := retryrule.EnsureKey(req, func() string { return derivedKey(it.run.id, it.id) })
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if d := it.doubt; d != nil && !it.resend {
		sameSafe := retryrule.IdempotentMethod(method) && method == d.Method
		sameKey := key != "" && key == d.Key
		if !sameSafe && !sameKey {
			return fmt.Errorf("%w (the earlier run sent %s with key %q; this one would send %s with key %q)",
				ErrInDoubt, d.Method, d.Key, method, key)
		}
	}
	rec := record{ID: it.id, Outcome: recSending, Method: method, Key: key, FP: it.fp}
	it.req = rec
	if it.run.journal == nil || (it.started && it.sent == rec) {
		return nil
	}
	if err := it.run.journal.write(rec, time.Now()); err != nil {
		return &JournalError{Path: it.run.path, Err: err}
	}
	it.started, it.sent = true, rec
	return nil
}

// unsent records that the item's last attempt was not applied: it was
// throttled, or met a configuration error. So the item is not in doubt if
// the run ends before it is done. An item in doubt since an earlier run
// stays so: that run's attempt may have been applied. Only Run's goroutine
// calls it, between attempts.
func (it *item) unsent(now time.Time) error {
	if !it.started || it.run.journal == nil || it.doubt != nil || it.resend {
		return nil
	}
	if err := it.run.journal.write(record{ID: it.id, Outcome: recUnsent}, now); err != nil {
		return &JournalError{Path: it.run.path, Err: err}
	}
	it.started, it.sent = false, record{}
	return nil
}

// derivedKey is the idempotency key of item id in run: see IdempotencyKey.
func derivedKey(run, id string) string { return retryrule.DerivedKey(run, id) }

// IdempotencyKey returns the idempotency key of the item whose attempt ctx
// belongs to, or "" when ctx is not an attempt's context:
//
//	"pace-" + run ID + "-" + the first 24 hex digits of SHA-256(run ID + "\x00" + item ID)
//
// The run ID is 16 hex digits of crypto/rand. It is stored in the
// journal's header, so every run resumed from that journal has it. Without
// a journal, it is drawn for each Run. The key is the same on every attempt
// of the item and in every run resumed from the journal. It differs
// between items and between journals. [HTTP] sends it as the
// Idempotency-Key header of a POST or PATCH that has none. An item function
// that calls an API in another way may pass it as that API's idempotency
// key. It is safe for concurrent use.
func IdempotencyKey(ctx context.Context) string {
	a := attemptOf(ctx)
	if a == nil || a.item == nil {
		return ""
	}
	return derivedKey(a.item.run.id, a.item.id)
}

package retrydecide

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace/retry"
)

// The defaults of retry.Budget's fields, Finagle's
// (com.twitter.finagle.service.RetryBudget.apply()).
const (
	defaultBudgetTTL              = 10 * time.Second
	defaultBudgetMinRetriesPerSec = 10
	defaultBudgetPercentCanRetry  = 0.2
)

// budgetSlots is the number of slices of a budget's TTL window, as in
// Finagle's WindowedAdder: a request or retry counts for between 9/10 of
// the TTL and the whole TTL.
const budgetSlots = 10

// Budget is a retry.Budget compiled: the rule, shared by every key. A
// key's counts are its [Window]; the caller keeps one per key. Amounts
// are in thousandths of a retry: a retry withdraws 1000, a request
// deposits PercentCanRetry × 1000. A Budget is read-only, so safe for
// concurrent use.
type Budget struct {
	slot    time.Duration // TTL / budgetSlots
	reserve int64         // MinRetriesPerSec × TTL, in thousandths
	deposit int64         // per request, in thousandths
}

// Window is one key's counts, per slice of its Budget's TTL. The zero
// Window tracks nothing: the key holds its whole reserve. It is safe for
// concurrent use.
type Window struct {
	tracking   atomic.Bool // any count is held; read without the lock on the success path
	mu         sync.Mutex
	epoch      [budgetSlots]int64 // the slice number each slot holds
	deposits   [budgetSlots]int64 // thousandths
	withdrawal [budgetSlots]int64 // thousandths
}

// NewBudget returns the rule of b, or nil when b is disabled. b must be
// valid.
func NewBudget(b retry.Budget) *Budget {
	if b.Disabled {
		return nil
	}
	ttl, perSec, pct := b.TTL, b.MinRetriesPerSec, b.PercentCanRetry
	if ttl == 0 {
		ttl = defaultBudgetTTL
	}
	if perSec == 0 {
		perSec = defaultBudgetMinRetriesPerSec
	}
	if pct == 0 {
		pct = defaultBudgetPercentCanRetry
	}
	return &Budget{
		slot:    ttl / budgetSlots,
		reserve: int64(math.Round(float64(max(perSec, 0)) * ttl.Seconds() * 1000)),
		deposit: int64(math.Round(max(pct, 0) * 1000)),
	}
}

// Tracking reports whether w holds any count. When it holds none, a
// request that did not fail costs nothing and need not read the clock.
func (w *Window) Tracking() bool { return w.tracking.Load() }

// Request counts, in w, a request that ended its first attempt at now;
// failed says whether that attempt failed in a retryable way. A window
// that tracks nothing starts to only on a failure. One whose TTL holds no
// retry is cleared by a request that did not fail.
func (b *Budget) Request(w *Window, failed bool, now time.Time) {
	if !failed && !w.Tracking() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	e := b.epoch(now)
	if !failed && w.withdrawn(e) == 0 {
		w.clearLocked()
		return
	}
	w.tracking.Store(true)
	*w.slotAt(e, &w.deposits) += b.deposit
}

// Withdraw takes one retry from w at now if the budget allows it, and
// reports whether it did. With force it takes the retry anyway (the
// balance may go below zero) and reports whether it was allowed.
func (b *Budget) Withdraw(w *Window, now time.Time, force bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := b.epoch(now)
	ok := b.reserve+w.deposited(e)-w.withdrawn(e) >= 1000
	if ok || force {
		w.tracking.Store(true)
		*w.slotAt(e, &w.withdrawal) += 1000
	}
	return ok
}

// epoch returns the slice number of now.
func (b *Budget) epoch(now time.Time) int64 { return now.UnixNano() / int64(b.slot) }

// clearLocked forgets every count: w holds its whole reserve again.
func (w *Window) clearLocked() {
	w.epoch, w.deposits, w.withdrawal = [budgetSlots]int64{}, [budgetSlots]int64{}, [budgetSlots]int64{}
	w.tracking.Store(false)
}

// slotAt returns the cell of counts for slice e, clearing the slot first
// if it held an older slice.
func (w *Window) slotAt(e int64, counts *[budgetSlots]int64) *int64 {
	i := int(e % budgetSlots)
	if i < 0 {
		i += budgetSlots
	}
	if w.epoch[i] != e {
		w.epoch[i], w.deposits[i], w.withdrawal[i] = e, 0, 0
	}
	return &counts[i]
}

// deposited and withdrawn sum the counts of the slices within the window
// that ends with slice e.
func (w *Window) deposited(e int64) int64 { return w.sum(e, &w.deposits) }
func (w *Window) withdrawn(e int64) int64 { return w.sum(e, &w.withdrawal) }

func (w *Window) sum(e int64, counts *[budgetSlots]int64) int64 {
	var s int64
	for i, ep := range w.epoch {
		if ep > e-budgetSlots && ep <= e {
			s += counts[i]
		}
	}
	return s
}

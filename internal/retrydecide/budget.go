package retrydecide

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace/retry"
)

// The defaults of retry.Budget's fields other than MaxKeys, Finagle's
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

// Budget is the running state of a retry.Budget, safe for concurrent use. Amounts are in thousandths
// of a retry: a retry withdraws 1000, a request deposits PercentCanRetry ×
// 1000. A key absent from the map holds its whole reserve.
type Budget struct {
	slot    time.Duration // TTL / budgetSlots
	reserve int64         // MinRetriesPerSec × TTL, in thousandths
	deposit int64         // per request, in thousandths
	maxKeys int
	n       atomic.Int64 // len(keys), read without the lock on the fast path
	mu      sync.Mutex
	keys    map[string]*budgetWindow
}

// budgetWindow is one key's counts, per slice of the TTL.
type budgetWindow struct {
	epoch      [budgetSlots]int64 // the slice number each slot holds
	deposits   [budgetSlots]int64 // thousandths
	withdrawal [budgetSlots]int64 // thousandths
}

// NewBudget returns the state for b, or nil when b is disabled. b must be
// valid.
func NewBudget(b retry.Budget) *Budget {
	if b.Disabled {
		return nil
	}
	ttl, perSec, pct, keys := b.TTL, b.MinRetriesPerSec, b.PercentCanRetry, b.MaxKeys
	if ttl == 0 {
		ttl = defaultBudgetTTL
	}
	if perSec == 0 {
		perSec = defaultBudgetMinRetriesPerSec
	}
	if pct == 0 {
		pct = defaultBudgetPercentCanRetry
	}
	if keys == 0 {
		keys = retry.DefaultBudgetMaxKeys
	}
	return &Budget{
		slot:    ttl / budgetSlots,
		reserve: int64(math.Round(float64(max(perSec, 0)) * ttl.Seconds() * 1000)),
		deposit: int64(math.Round(max(pct, 0) * 1000)),
		maxKeys: keys,
	}
}

// Tracking reports whether any key is tracked; when none is, a request
// that did not fail costs nothing and need not read the clock.
func (b *Budget) Tracking() bool { return b.n.Load() != 0 }

// Request counts a request of key that ended its first attempt at now;
// failed says whether that attempt failed in a retryable way. A key that
// is not tracked starts to be only on a failure; a tracked key whose
// window holds no retry is forgotten on a request that did not fail.
func (b *Budget) Request(key string, failed bool, now time.Time) {
	if !failed && !b.Tracking() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.keys[key]
	if w == nil && !failed {
		return
	}
	e := b.epoch(now)
	if w == nil {
		w = b.addLocked(key)
	} else if !failed && w.withdrawn(e) == 0 {
		b.forgetLocked(key)
		return
	}
	*w.slotAt(e, &w.deposits) += b.deposit
}

// Withdraw takes one retry from key's budget at now if the budget allows
// it, and reports whether it did. With force it takes the retry anyway
// (the balance may go below zero) and reports whether it was allowed.
func (b *Budget) Withdraw(key string, now time.Time, force bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.keys[key]
	if w == nil {
		w = b.addLocked(key)
	}
	e := b.epoch(now)
	ok := b.reserve+w.deposited(e)-w.withdrawn(e) >= 1000
	if ok || force {
		*w.slotAt(e, &w.withdrawal) += 1000
	}
	return ok
}

// epoch returns the slice number of now.
func (b *Budget) epoch(now time.Time) int64 { return now.UnixNano() / int64(b.slot) }

// addLocked tracks key with an empty window, forgetting another key first
// when MaxKeys are tracked.
func (b *Budget) addLocked(key string) *budgetWindow {
	if b.keys == nil {
		b.keys = make(map[string]*budgetWindow)
	}
	if len(b.keys) >= b.maxKeys {
		b.evictLocked()
	}
	w := new(budgetWindow)
	b.keys[key] = w
	b.n.Store(int64(len(b.keys)))
	return w
}

// forgetLocked stops tracking key.
func (b *Budget) forgetLocked(key string) {
	delete(b.keys, key)
	b.n.Store(int64(len(b.keys)))
}

// evictLocked forgets, of up to 8 tracked keys, the one that withdrew the
// least over all its slots (current or not: an approximation that needs no
// clock).
func (b *Budget) evictLocked() {
	var victim string
	best, seen := int64(math.MaxInt64), 0
	for k, w := range b.keys {
		var sum int64
		for _, v := range w.withdrawal {
			sum += v
		}
		if sum < best {
			victim, best = k, sum
		}
		if seen++; seen == 8 {
			break
		}
	}
	b.forgetLocked(victim)
}

// slotAt returns the cell of counts for slice e, clearing the slot first
// if it held an older slice.
func (w *budgetWindow) slotAt(e int64, counts *[budgetSlots]int64) *int64 {
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
func (w *budgetWindow) deposited(e int64) int64 { return w.sum(e, &w.deposits) }
func (w *budgetWindow) withdrawn(e int64) int64 { return w.sum(e, &w.withdrawal) }

func (w *budgetWindow) sum(e int64, counts *[budgetSlots]int64) int64 {
	var s int64
	for i, ep := range w.epoch {
		if ep > e-budgetSlots && ep <= e {
			s += counts[i]
		}
	}
	return s
}

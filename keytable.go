package pace

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/pacehttp/pace/internal/retrydecide"
	"github.com/pacehttp/pace/throttle"
)

// maxTableKeys is how many keys a Transport keeps an entry for: the key's
// [Stats], its retry budget's counts and its route. The requests of every
// later key share one entry, under the empty key: their Stats are counted
// together and they share one retry budget. So attacker-chosen keys
// cannot grow memory without bound: about 500 bytes a key besides the key
// itself, at most about 2 MB. The limit and the pause of a key are its
// Limiter's to keep.
const maxTableKeys = 4096

// keyEntry is what a Transport keeps of one key: the live form of its
// Stats, the counts of its retry budget, and what the Transport chose for
// the key's first call: the request's host as written (raw), its limiter,
// retry policy and attempts. Without Transport.Key they follow from the
// host, and call.route reuses them.
type keyEntry struct {
	key, host, raw             string
	lim                        throttle.Limiter
	policy                     *retrydecide.Executor
	maxAttempts                int
	requests, admitted, waits  atomic.Int64
	waited, retries, throttles atomic.Int64
	giveUps                    atomic.Int64
	lastThrottle               atomic.Int32 // the status of the key's last throttle; 0: none seen
	budget                     retrydecide.Window
}

// throttleStatus returns the status of the key's last throttle this
// Transport saw (a 429, a 503 or a 403 that named a delay), or 429 when it
// saw none: the probe that throttled may have been another process's.
func (e *keyEntry) throttleStatus() int {
	if s := e.lastThrottle.Load(); s != 0 {
		return int(s)
	}
	return http.StatusTooManyRequests
}

// keyTable holds a Transport's keyEntry values: lock-free lookups of
// known keys; creation under a mutex, at most maxTableKeys.
type keyTable struct {
	m    sync.Map // key -> *keyEntry
	mu   sync.Mutex
	n    int
	keys []*keyEntry // in creation order, for Transport.Stats
	over keyEntry    // shared by the keys past maxTableKeys
}

// of returns the entry of the call's key, whose first request went to
// host, written raw, creating it if the table has room.
func (t *keyTable) of(c *call, host, raw string) *keyEntry {
	key := c.key
	if v, ok := t.m.Load(key); ok {
		return v.(*keyEntry)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m.Load(key); ok {
		return v.(*keyEntry)
	}
	if t.n >= maxTableKeys {
		return &t.over
	}
	e := &keyEntry{key: key, host: host, raw: raw, lim: c.lim, policy: c.policy, maxAttempts: c.maxAttempts}
	t.m.Store(key, e)
	t.keys = append(t.keys, e)
	t.n++
	return e
}

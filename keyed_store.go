package pace

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace/internal/intmath"
	"github.com/pacehttp/pace/throttle"
)

// DefaultMaxKeys is the number of keys a [Keyed] tracks at most when
// [KeyedOptions].MaxKeys is 0. The compact limits ([TokenBucket],
// [LeakyBucket], [FixedWindow], [SlidingCounter]) keep under 64 bytes a
// key, so this bounds the store to about 64 MB however many distinct keys
// it is shown. A [SlidingLog] also keeps its booked instants per key.
const DefaultMaxKeys = 1 << 20

const (
	// maxShards is the number of independently locked parts of a Keyed.
	maxShards = 64
	// minShardKeys is the smallest share of MaxKeys a shard gets; small caps
	// use fewer shards so that rounding stays small.
	minShardKeys = 64
	// minSweepEvery is the least time between two sweeps of one shard, so
	// that a limit with a tiny span does not scan its shard on every call.
	minSweepEvery = int64(time.Second)
	// shrinkMin is the peak size below which a shard's map is not rebuilt
	// after a sweep (a small map costs little even when mostly empty).
	shrinkMin = 256
)

// KeyedOptions configures a [Keyed]. The zero value gives the defaults.
type KeyedOptions struct {
	// MaxKeys caps the number of keys tracked at once (keys with limit state
	// or a pause). 0 means [DefaultMaxKeys]; a negative value is a
	// [*ConfigError]. The cap is split evenly over the store's shards (at
	// most 64), each share rounded up. So the store may hold up to 63 keys
	// more than MaxKeys. A shard may fill up before the whole store holds
	// MaxKeys.
	//
	// When the shard of a new key is full even after a sweep of its idle
	// entries, the store forgets another key to make room (an eviction). It
	// samples 8 keys from the shard. It forgets the one that has used the
	// fewest units of its limit (the largest [Quota].Remaining), of those the
	// one whole again the soonest (the smallest Reset). It never forgets a
	// key that is paused, probing or waited on. The new key gets its own
	// limit, fresh. Only when every key of the shard is paused or waited on
	// does a new key share one overflow limit (and pause) with the others.
	// That lasts until there is room; it is stricter, never unlimited.
	//
	// An attacker who chooses keys (an X-API-Key header, say) cannot grow
	// memory beyond MaxKeys (plus at most 63). A flood of made-up keys cannot
	// lock out a legitimate key: its first request gets a fresh limit. But each
	// made-up key gets a fresh limit of its own. So per-key limits never bound
	// a client that can mint keys. Limit something it cannot vary too: its
	// address, as package middleware does, or one limit for all.
	//
	// An evicted key forgets its history: a partly spent key starts again
	// whole. By flooding, an attacker can hand a key back the units it has
	// used. That is the fewest in the sample. A key the attacker drained by
	// heavy use has used them all. It is evicted last, after the made-up
	// keys, which each booked one unit.
	MaxKeys int
}

// Keyed holds one rate limit per key, for example per host or per API key.
// A key's limit is created lazily on first use and forgotten once idle
// again. An idle key's state behaves like a fresh one: a token bucket idle
// for capacity/rate is full again, a window limiter idle for its window is
// empty. Sweeping it changes nothing. A key whose limit is still in use (a
// drained bucket, a booked slot) is never swept. So sweeping can never
// reset a limit (ELares/IronTraffic#217, didip/tollbooth#32). Only past
// [KeyedOptions].MaxKeys is a key in use forgotten, to make room for a new
// one. It is the one that has used the fewest units, never a paused or
// waited-on key (see MaxKeys for what that lets an attacker do).
//
// Forgetting is lazy. A shard is swept when it is full, or when it is
// accessed after the limit's span (and at least one second) since its last
// sweep. There are no background goroutines and nothing to close. Memory
// is bounded by [KeyedOptions].MaxKeys, as said above.
//
// Keys are not stored. Each is reduced to a 64-bit [maphash] hash with a
// seed chosen at random per Keyed, and the state is filed under the hash.
// Two distinct keys collide with probability about k²/2⁶⁵ for k keys
// (about 3·10⁻⁸ at a million keys). They would then share one limit, which
// is stricter, never looser. The random seed keeps collisions out of an
// attacker's hands.
//
// Besides its limit, each key can be paused ([Keyed.PauseUntil]), for example
// for a server's Retry-After. No request for the key proceeds before the
// pause ends, and a key is never evicted while paused. The zero [Limit]
// means no limit, so that a Keyed only tracks pauses.
//
// Create a Keyed with [NewKeyed]. The zero Keyed is not usable: its
// methods, and those of a nil *Keyed, panic with "pace: Keyed used without
// NewKeyed". All methods are safe for concurrent use by multiple
// goroutines. A Keyed must not be copied. The explicit-time methods
// (ReserveAt, AllowAt, CancelAt) accept a now earlier than one seen before,
// as after a clock step. The limit itself mints nothing then. A now
// earlier than the last sweep of the key's shard is taken as that sweep's
// instant, so that forgetting an idle key cannot mint units either. Wait
// reads the monotonic clock.
type Keyed struct {
	// alg, g and sweepEvery are read under any shard's lock (or the
	// overflow's) and changed by SetLimitAt under all of them at once.
	alg        algorithm // nil: no limit, pauses only
	g          *gcra     // alg's GCRA core for token buckets and pacers, else nil
	limited    bool      // alg != nil; read-only (SetLimitAt neither adds nor removes a limit)
	epoch      time.Time
	seed       maphash.Seed
	shift      uint  // 64 - log2(len(shards)); the shard is hash >> shift
	perShard   int   // a shard's share of MaxKeys
	sweepEvery int64 // nanoseconds between routine sweeps of a shard
	shards     []shard
	// states counts the keyStates held (in shards' keys and the overflow
	// state). So Settle of a plain outcome can tell without a lock that no key
	// has a throttle or a queue. Written only when a keyState is created or
	// swept.
	states atomic.Int64
	_      [64]byte // keep the overflow lock off the fields read on every call
	over   overflow
}

var _ throttle.Limiter = (*Keyed)(nil)

// shard is an independently locked part of a Keyed. Its maps are keyed by
// the key's hash. Limit state is split. The two words every algorithm uses
// live in cells, which holds no pointers. So the garbage collector never
// scans it, and an entry costs 24 bytes of slot. The rare extension
// pointer lives in exts. Keys that are throttled, or have requests waiting
// or on their way, also have a keyState in keys.
type shard struct {
	mu    sync.Mutex
	cells map[uint64]words
	exts  map[uint64]*cellExt  // cell.x of the entries that have one; nil if none
	keys  map[uint64]*keyState // throttle and queue of the keys that have one; nil if none
	tmp   cell                 // scratch cell handed to the algorithm (kept off the stack)
	last  int64                // instant of the last sweep; now never runs earlier than this
	seen  int64                // latest instant decided on; now never runs earlier than this
	peak  int                  // largest len(cells) since the map was last rebuilt
	_     [128 - 80]byte       // keep shards on separate cache lines
}

// words is the compact part of a cell.
type words struct{ a, b int64 }

// overflow is the state shared by new keys whose shard is full.
type overflow struct {
	mu   sync.Mutex
	c    cell
	st   *keyState
	seen int64 // latest instant decided on; now never runs earlier than this
	_    [64]byte
}

// keyState is what a [Keyed] keeps of a key beyond its limit. That is its
// throttle (the pause and probe, see keyThrottle) and its queue, the
// bookings of requests that have not yet left. It exists only while the key
// is throttled, half-open, or has requests waiting or on their way.
type keyState struct {
	th keyThrottle
	// pending holds the bookings not yet answered, in booking order (also the
	// order of their slots). First come requests still waiting for their slot.
	// Then come requests released and on their way to the wire or to their
	// answer, whose departure the store asked to hear of (see Permit.Track).
	pending []*booking
	// wake, when non-nil, is closed (and cleared) to make every request
	// waiting on the key look again: the pause was set, the probe was
	// answered, or waiting bookings moved earlier.
	wake chan struct{}
}

// waitCh returns the channel that the next change of the key closes.
func (st *keyState) waitCh() <-chan struct{} {
	if st.wake == nil {
		st.wake = make(chan struct{})
	}
	return st.wake
}

// broadcast wakes every request waiting on the key.
func (st *keyState) broadcast() {
	if st.wake != nil {
		close(st.wake)
		st.wake = nil
	}
}

// forgettable reports whether st may be dropped at now: nothing is queued
// and its throttle may be forgotten. A wake channel does not keep it. A
// channel whose sleepers woke by their timers (a pause or a pace that
// simply ended) is never closed otherwise. The sweep closes it, so that a
// sleeper still on it looks again and finds the key fresh, as it would be.
func (st *keyState) forgettable(now int64) bool {
	return len(st.pending) == 0 && st.th.forgettable(now)
}

// NewKeyed returns a Keyed that applies l to every key separately. It
// returns l.Err() when l is invalid, and a [*ConfigError] for a negative
// o.MaxKeys. The zero Limit means no limit: the Keyed then only holds pauses.
func NewKeyed(l Limit, o KeyedOptions) (*Keyed, error) {
	if err := l.Err(); err != nil {
		return nil, err
	}
	maxKeys := o.MaxKeys
	switch {
	case maxKeys < 0:
		return nil, configErr("MaxKeys", maxKeys, "must not be negative")
	case maxKeys == 0:
		maxKeys = DefaultMaxKeys
	}
	n := min(maxShards, max(1, maxKeys/minShardKeys))
	n = 1 << (bits.Len(uint(n)) - 1) // round down to a power of two
	k := &Keyed{
		alg:        l.alg,
		limited:    l.alg != nil,
		epoch:      newEpoch(),
		seed:       maphash.MakeSeed(),
		shift:      uint(64 - bits.TrailingZeros(uint(n))),
		perShard:   int(intmath.CeilDiv(int64(maxKeys), int64(n))),
		sweepEvery: minSweepEvery,
		shards:     make([]shard, n),
	}
	if l.alg != nil {
		k.sweepEvery = max(l.alg.span(), minSweepEvery)
		k.g = coreOf(l.alg)
	}
	for i := range k.shards {
		k.shards[i].cells = make(map[uint64]words)
	}
	return k, nil
}

// mustInit panics with a clear message when k was not made by NewKeyed (a
// nil or zero Keyed), instead of a nil dereference or maphash's
// "use of uninitialized Seed". shards is read-only after NewKeyed.
func (k *Keyed) mustInit() {
	if k == nil || k.shards == nil {
		panic("pace: Keyed used without NewKeyed")
	}
}

// String describes the store, e.g. "keyed token bucket 10/1s burst 20".
func (k *Keyed) String() string {
	k.mustInit()
	s := &k.shards[0] // SetLimitAt changes the limit under every shard's lock
	s.mu.Lock()
	defer s.mu.Unlock()
	if k.alg == nil {
		return "keyed no limit"
	}
	return "keyed " + k.alg.String()
}

// ReserveAt books n units for key at the earliest instant at or after now
// that both its pause and its limit allow. It returns the Reservation,
// whose Delay says how long after now the units may be used. It books
// nothing on an error:
//
//   - [ErrBadCount] for n <= 0;
//   - [ErrBurstExceeded] when n can never be granted at once;
//   - [ErrQueueFull] when a pacer's queue is full;
//   - [ErrWaitTooLong] when the delay exceeds maxWait > 0 or cannot be
//     represented.
//
// Zero maxWait sets no bound; a negative maxWait is refused with a
// [*ConfigError]. On a refusal for maxWait or a full queue, the
// Reservation's Delay says how long the wait would have been. With the zero
// Limit only the pause applies and nothing is booked. The explicit-time
// methods honour a key's pause, not its probe (see [Keyed.Wait]). Safe for
// concurrent use.
func (k *Keyed) ReserveAt(now time.Time, key string, n int, maxWait time.Duration) (Reservation, error) {
	k.mustInit()
	if maxWait < 0 {
		return Reservation{}, maxWaitErr(maxWait)
	}
	at := sinceEpoch(k.epoch, now)
	e := k.open(at, key, false)
	r, err := decideCell(k.alg, e.c, e.pause(), e.now, n, maxWait, noDeadline, true)
	e.close(err == nil)
	return r.from(e.now, at), err
}

// AllowAt reports whether n units may be used for key at now, and books them
// if so. It never books units for later use, and returns false while the key
// is paused and for n <= 0. Safe for concurrent use.
func (k *Keyed) AllowAt(now time.Time, key string, n int) bool {
	k.mustInit()
	if n == 1 {
		return k.allow1(sinceEpoch(k.epoch, now), key)
	}
	return k.allow(sinceEpoch(k.epoch, now), key, n)
}

// Allow is AllowAt(time.Now(), key, 1), reading the monotonic clock
// through time.Since, which costs about half of time.Now. Safe for
// concurrent use.
func (k *Keyed) Allow(key string) bool {
	k.mustInit()
	return k.allow1(clampNow(int64(time.Since(k.epoch))), key)
}

// allow is AllowAt on nanoseconds since the epoch.
func (k *Keyed) allow(now int64, key string, n int) bool {
	e := k.open(now, key, false)
	_, err := decideCell(k.alg, e.c, e.pause(), e.now, n, 0, noDeadline, false)
	e.close(err == nil)
	return err == nil
}

// allow1 is allow for one unit. It has a fast path for a GCRA limit (token
// bucket, pacer) on a key with no keyState, in a shard that needs no sweep.
// There it decides in place with gcra.allow1. That is the same decision as
// decideCell's earliest and book for one unit at now, without the interface
// calls or the scratch cell. Every other case takes the general path.
func (k *Keyed) allow1(now int64, key string) bool {
	s, h := k.locate(key)
	s.mu.Lock()
	now = s.advance(now)
	if k.g != nil && len(s.keys) == 0 && now-s.last < k.sweepEvery {
		// No keyState: no pause. GCRA cells have no extension.
		w, tracked := s.cells[h]
		if tracked || !s.full(k) {
			c := cell{a: w.a, b: w.b}
			ok := k.g.allow1(&c, now)
			if ok {
				s.cells[h] = words{c.a, c.b}
				if !tracked && len(s.cells) > s.peak {
					s.peak = len(s.cells)
				}
			}
			s.mu.Unlock()
			return ok
		}
	}
	e := k.openLocked(s, h, now, false)
	_, err := decideCell(k.alg, e.c, e.pause(), e.now, 1, 0, noDeadline, false)
	e.close(err == nil)
	return err == nil
}

// CancelAt gives back the units of r, booked by ReserveAt for key, when the
// caller abandons its wait at now. A reservation whose instant lies before
// now gives nothing back: its units count as used (the rule of
// golang.org/x/time/rate's Reservation.CancelAt). Otherwise the algorithm
// decides how much can be returned. All of it comes back when nothing was
// booked after r, as for [Shaper.CancelAt]. So reservations cancelled latest
// first all come back. A reservation that later ones were booked behind
// gives back only what they do not overlap. It gives back nothing of a
// token bucket's queue while they are held, and its slot is not handed out
// again. (The queue of [Keyed.Wait] is different. Its waiters move up in
// whatever order they give up, since the store knows them all.)
//
// The units go back to the key's own limit if it is tracked. A key
// forgotten since, swept or evicted, gets nothing back. A key on the shared
// overflow limit (see [KeyedOptions].MaxKeys) gives back to it, unless it is
// idle. Cancelling the zero Reservation does nothing. Cancelling twice gives
// units back twice, so avoid it. Safe for concurrent use.
func (k *Keyed) CancelAt(now time.Time, key string, r Reservation) {
	k.mustInit()
	at := sinceEpoch(k.epoch, now)
	if r.n <= 0 || at > r.at { // r.n > 0: booked under a limit, which a store never loses
		return
	}
	s, h := k.locate(key)
	s.mu.Lock()
	if w, ok := s.cells[h]; ok {
		e := entry{k: k, s: s, h: h, now: max(at, s.last), tracked: true}
		e.load(w)
		k.alg.unbook(e.c, e.now, r.at, r.n)
		e.close(true)
		return
	}
	s.mu.Unlock()
	k.over.mu.Lock()
	if !k.alg.idle(&k.over.c, at) {
		k.alg.unbook(&k.over.c, at, r.at, r.n)
	}
	k.over.mu.Unlock()
}

// sweepAt forgets, at now, every key whose limit is idle and which is not
// paused, half-open or waited on. It forgets every pause that has ended. It
// returns how many keys are no longer tracked. Keys are swept lazily as the
// store is used, so the store itself never needs it. Tests call it to sweep
// every shard at a chosen instant. A now earlier than a shard's last sweep
// is taken as that sweep's instant. Safe for concurrent use.
func (k *Keyed) sweepAt(now time.Time) int {
	at := sinceEpoch(k.epoch, now)
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		n += s.sweep(k, max(at, s.last))
		s.mu.Unlock()
	}
	return n
}

// Len returns the number of keys tracked: keys with limit state, a pause or
// waiting requests, not counting keys that share the overflow state. Safe
// for concurrent use.
func (k *Keyed) Len() int {
	k.mustInit()
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		n += len(s.cells)
		for h := range s.keys {
			if _, ok := s.cells[h]; !ok {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}

// locate returns the shard of key and its hash.
func (k *Keyed) locate(key string) (*shard, uint64) {
	h := maphash.String(k.seed, key)
	return &k.shards[h>>k.shift], h
}

// entry is one key's state in a Keyed, opened under the lock that guards
// it: the key's own shard, or the overflow state. close stores it back and
// unlocks.
type entry struct {
	k       *Keyed
	s       *shard // nil: the shared overflow state
	h       uint64
	now     int64     // the instant to decide at: never earlier than the shard's last sweep
	c       *cell     // the key's limit state; nil with the zero Limit
	st      *keyState // the key's throttle and queue; nil if it has none yet
	x       *cellExt  // the extension c had when opened
	tracked bool      // the key has an entry in the shard's cells
	evict   bool      // the key is new to a full shard: close makes room (shard.evict)
}

// open locks key's state and returns it, decided at now (ns since epoch),
// or at the latest instant already decided on if that is later. Callers
// read the clock before taking the lock, so instants reach a shard slightly
// out of order. Deciding each at the latest instant seen keeps every
// algorithm's bookings in time order. A clock stepping back mints nothing.
// A key opens the overflow state when it is new while its shard is full,
// or when it is over (its requests are queued on the overflow state).
func (k *Keyed) open(now int64, key string, over bool) entry {
	s, h := k.locate(key)
	s.mu.Lock()
	return k.openLocked(s, h, s.advance(now), over)
}

// advance returns the instant to decide at for a request at now. It is now,
// or the shard's last sweep or latest decided instant if later. It records
// it as the latest decided on. s.mu must be held.
func (s *shard) advance(now int64) int64 {
	now = max(now, s.last, s.seen)
	s.seen = now
	return now
}

// openLocked is open once s, the shard of the key hashed to h, is locked
// and now has been advanced (shard.advance).
func (k *Keyed) openLocked(s *shard, h uint64, now int64, over bool) entry {
	if now-s.last >= k.sweepEvery {
		s.sweep(k, now)
	}
	var st *keyState
	if len(s.keys) > 0 {
		st = s.keys[h]
	}
	w, tracked := s.cells[h]
	evict := false
	if over || (!tracked && st == nil && s.full(k)) {
		if !over && now-s.last >= minSweepEvery {
			s.sweep(k, now)
		}
		if !over && s.full(k) && s.evictable(k) {
			evict = true // the key gets its own state; close evicts another
		} else if over || s.full(k) {
			s.mu.Unlock()
			k.over.mu.Lock()
			now = max(now, k.over.seen)
			k.over.seen = now
			e := entry{k: k, h: h, now: now, st: k.over.st}
			if k.alg != nil {
				e.c = &k.over.c
			}
			return e
		}
	}
	e := entry{k: k, s: s, h: h, now: now, st: st, tracked: tracked, evict: evict}
	e.load(w)
	return e
}

// load places the compact words w (and the extension, if any) of a shard
// entry in the shard's scratch cell.
func (e *entry) load(w words) {
	if e.k.alg == nil {
		return
	}
	s := e.s
	s.tmp = cell{a: w.a, b: w.b}
	if e.tracked && len(s.exts) > 0 {
		e.x = s.exts[e.h]
		s.tmp.x = e.x
	}
	e.c = &s.tmp
}

// over reports whether e is the shared overflow state.
func (e *entry) over() bool { return e.s == nil }

// state returns the key's keyState, creating it.
func (e *entry) state() *keyState {
	if e.st != nil {
		return e.st
	}
	e.st = &keyState{}
	e.k.states.Add(1)
	if e.over() {
		e.k.over.st = e.st
		return e.st
	}
	if e.s.keys == nil {
		e.s.keys = make(map[uint64]*keyState)
	}
	e.s.keys[e.h] = e.st
	return e.st
}

// pause returns the end of the key's pause, or 0.
func (e *entry) pause() int64 {
	if e.st == nil {
		return 0
	}
	return e.st.th.until
}

// close stores the key's limit state if keep (tracking the key if it was
// new) and unlocks.
func (e *entry) close(keep bool) {
	if e.over() {
		e.k.over.mu.Unlock()
		return
	}
	s := e.s
	if keep && e.c != nil {
		s.store(e.h, e.x)
		if !e.tracked && len(s.cells) > s.peak {
			s.peak = len(s.cells)
		}
	}
	s.tmp = cell{}
	if e.evict && len(s.cells)+len(s.keys) > e.k.perShard {
		s.evict(e.k, e.now, e.h)
	}
	s.mu.Unlock()
}

// withCell calls f with key's limit state at now (ns since epoch), under the
// lock that guards it, with the key's pause and the instant to use. c is nil
// with the zero Limit. When f returns true, c is stored as the key's state
// (tracking the key if it was new); otherwise nothing is kept.
func (k *Keyed) withCell(now int64, key string, f func(c *cell, pause, now int64) (keep bool)) {
	e := k.open(now, key, false)
	e.close(f(e.c, e.pause(), e.now))
}

// store files s.tmp under h; x is the extension the entry had before.
func (s *shard) store(h uint64, x *cellExt) {
	s.cells[h] = words{s.tmp.a, s.tmp.b}
	switch {
	case s.tmp.x == x:
	case s.tmp.x == nil:
		delete(s.exts, h)
	default:
		if s.exts == nil {
			s.exts = make(map[uint64]*cellExt)
		}
		s.exts[h] = s.tmp.x
	}
}

// full reports whether s holds its share of MaxKeys.
func (s *shard) full(k *Keyed) bool { return len(s.cells)+len(s.keys) >= k.perShard }

// evictSample is how many evictable keys evict compares: Redis's
// approximated LRU samples 5 (maxmemory-samples); a few more make the
// victim's reset closer to the shard's smallest.
const evictSample = 8

// evictable reports whether s holds a key evict may forget: limit state of
// a key without a keyState (a key that is paused, probing or waited on is
// never forgotten). s.mu must be held.
func (s *shard) evictable(k *Keyed) bool {
	if k.alg == nil {
		return false // only keyStates: nothing to forget
	}
	if len(s.cells) > len(s.keys) {
		return true // some cell has no keyState
	}
	for h := range s.cells {
		if _, ok := s.keys[h]; !ok {
			return true
		}
	}
	return false
}

// evict makes room in the full shard s at now for a new key (hashed to
// keep, which stays). It samples up to evictSample keys without a
// keyState, from a random place in the shard (Go's map iteration starts at
// a random one). It forgets the one that has used the fewest units of its
// limit now (the largest Quota.Remaining), and of those the one whole
// again the soonest (the smallest Quota.Reset). Forgetting a key hands it
// back the units it has used, so this hands out the fewest: for keys
// booked once (a flood of made-up keys), one. A key drained by heavy use
// is the last to go, whatever the algorithm: a window drained before the
// flood is whole again sooner than the made-up keys, but has used its
// whole limit. It reports whether a key was forgotten. s.mu must be held.
func (s *shard) evict(k *Keyed, now int64, keep uint64) bool {
	var victim uint64
	found, seen := false, 0
	var bestUsed, bestReset int64
	s.eachFree(func(h uint64) bool {
		if h == keep {
			return true
		}
		q := k.alg.standing(&s.tmp, now)
		used, reset := q.limit-max(q.remaining, 0), max(q.reset, 0)
		if !found || used < bestUsed || used == bestUsed && reset < bestReset {
			victim, bestUsed, bestReset, found = h, used, reset, true
		}
		seen++
		return seen < evictSample
	})
	if !found {
		return false
	}
	delete(s.cells, victim)
	if len(s.exts) > 0 {
		delete(s.exts, victim)
	}
	return true
}

// eachFree calls f for each key of s that has limit state and no keyState
// (a key sweep and evict may forget). It loads each key's state into
// s.tmp, and stops when f returns false. f may delete the key. s.mu must be
// held.
func (s *shard) eachFree(f func(h uint64) bool) {
	for h, w := range s.cells {
		if len(s.keys) > 0 {
			if _, ok := s.keys[h]; ok {
				continue
			}
		}
		s.tmp = cell{a: w.a, b: w.b}
		if len(s.exts) > 0 {
			s.tmp.x = s.exts[h]
		}
		if !f(h) {
			break
		}
	}
	s.tmp = cell{}
}

// sweep forgets at now the idle entries of s. These are keyStates whose
// throttle is over and that nobody waits on. They are also the limit state
// of keys without a keyState that behaves like a fresh one. It returns how
// many keys are no longer tracked. It releases the memory of a map that has
// become much smaller than it was.
func (s *shard) sweep(k *Keyed, now int64) int {
	s.last = now
	n := 0
	for h, st := range s.keys {
		if st.forgettable(now) {
			st.broadcast()
			delete(s.keys, h)
			k.states.Add(-1)
			if _, ok := s.cells[h]; !ok {
				n++
			}
		}
	}
	if k.alg != nil {
		s.eachFree(func(h uint64) bool {
			if k.alg.idle(&s.tmp, now) {
				delete(s.cells, h)
				if s.tmp.x != nil {
					delete(s.exts, h)
				}
				n++
			}
			return true
		})
	}
	if len(s.keys) == 0 {
		s.keys = nil
	}
	if len(s.exts) == 0 {
		s.exts = nil
	}
	// Go maps never shrink: rebuild one that has lost most of its entries.
	if s.peak >= shrinkMin && len(s.cells) <= s.peak/4 {
		cells := make(map[uint64]words, len(s.cells))
		for h, w := range s.cells {
			cells[h] = w
		}
		s.cells = cells
		s.peak = len(cells)
		if s.exts != nil {
			exts := make(map[uint64]*cellExt, len(s.exts))
			for h, x := range s.exts {
				exts[h] = x
			}
			s.exts = exts
		}
	}
	return n
}

package pace

import (
	"context"
	"hash/maphash"
	"math/bits"
	"sync"
	"time"
)

// DefaultMaxKeys is the number of keys a [Keyed] tracks at most when
// [KeyedOptions].MaxKeys is 0. At about 56 bytes a key for the compact
// limits ([Bucket], [Leaky], [Fixed], [SlidingApprox]; measured at a million
// keys) that bounds the store to about 60 MB however many distinct keys it
// is shown. A [Sliding] log also keeps its booked instants per key.
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
	// most 64), each share rounded up, so the store may hold up to 63 keys
	// more than MaxKeys, and a shard may fill up before the whole store
	// holds MaxKeys.
	//
	// When the shard of a new key is full even after its idle entries have
	// been swept, the key shares ONE overflow limit (and pause) with every
	// other such key until its shard has room again. That is stricter, never
	// unlimited and never an error: attacker-chosen keys cannot grow memory
	// without bound, at worst they slow each other down.
	MaxKeys int
}

// Keyed holds one rate limit per key, for example per host or per API key,
// created lazily on first use and forgotten once idle again: a key whose
// state behaves like a fresh one (a token bucket idle for capacity/rate is
// full again, a window limiter idle for its window is empty) is evicted,
// because forgetting it changes nothing. A key whose limit is still in use
// (a drained bucket, a booked slot) is never evicted, so eviction can never
// reset a limit (ELares/IronTraffic#217, case C23).
//
// Eviction is lazy: a shard is swept when it is accessed and at least the
// limit's span (and at least one second) has passed since its last sweep,
// or when it is full; [Keyed.SweepAt] sweeps on demand. There are no
// background goroutines and nothing to close. Memory is bounded by
// [KeyedOptions].MaxKeys.
//
// Keys are not stored: each is reduced to a 64-bit [maphash] hash with a
// seed chosen at random per Keyed, and the state is filed under the hash.
// Two distinct keys collide with probability about k²/2⁶⁵ for k keys (about
// 3·10⁻⁸ at a million keys) and would then share one limit, which is
// stricter, never looser; the random seed keeps collisions out of an
// attacker's hands.
//
// Besides its limit, each key can be paused ([Keyed.PauseUntil]), for example
// for a server's Retry-After: no request for the key proceeds before the
// pause ends, and a key is never evicted while paused. The zero [Limit]
// means no limit, so that a Keyed only tracks pauses.
//
// Create a Keyed with [NewKeyed]; the zero Keyed is not usable (its methods
// panic). All methods are safe for concurrent use by multiple goroutines; a
// Keyed must not be copied. The explicit-time methods (ReserveAt, AllowAt,
// CancelAt, SweepAt) accept a now earlier than one seen before, as after a
// clock step: the limit itself mints nothing then, and a now earlier than the
// last sweep of the key's shard is taken as that sweep's instant, so that
// forgetting an idle key cannot mint units either. Wait reads the monotonic
// clock.
type Keyed struct {
	alg        algorithm // nil: no limit, pauses only
	epoch      time.Time
	seed       maphash.Seed
	shift      uint  // 64 - log2(len(shards)); the shard is hash >> shift
	perShard   int   // a shard's share of MaxKeys
	sweepEvery int64 // nanoseconds between routine sweeps of a shard
	shards     []shard
	_          [64]byte // keep the overflow lock off the fields read on every call
	over       overflow
}

var _ Limiter = (*Keyed)(nil)

// shard is an independently locked part of a Keyed. Its maps are keyed by
// the key's hash. Limit state is split: the two words every algorithm uses
// live in cells, which holds no pointers (so the garbage collector never
// scans it and an entry costs 24 bytes of slot), and the rare extension
// pointer lives in exts.
type shard struct {
	mu     sync.Mutex
	cells  map[uint64]words
	exts   map[uint64]*cellExt // cell.x of the entries that have one; nil if none
	pauses map[uint64]int64    // pause end, ns since epoch; nil if none
	tmp    cell                // scratch cell handed to the algorithm (kept off the stack)
	last   int64               // instant of the last sweep; now never runs earlier than this
	seen   int64               // latest instant decided on; now never runs earlier than this
	peak   int                 // largest len(cells) since the map was last rebuilt
	_      [128 - 80]byte      // keep shards on separate cache lines
}

// words is the compact part of a cell.
type words struct{ a, b int64 }

// overflow is the state shared by new keys whose shard is full.
type overflow struct {
	mu    sync.Mutex
	c     cell
	pause int64
	seen  int64 // latest instant decided on; now never runs earlier than this
	_     [64]byte
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
		epoch:      newEpoch(),
		seed:       maphash.MakeSeed(),
		shift:      uint(64 - bits.TrailingZeros(uint(n))),
		perShard:   int(ceilDiv(int64(maxKeys), int64(n))),
		sweepEvery: minSweepEvery,
		shards:     make([]shard, n),
	}
	if l.alg != nil {
		k.sweepEvery = max(l.alg.span(), minSweepEvery)
	}
	for i := range k.shards {
		k.shards[i].cells = make(map[uint64]words)
	}
	return k, nil
}

// String describes the store, e.g. "keyed token bucket 10/1s burst 20".
func (k *Keyed) String() string {
	if k.alg == nil {
		return "keyed no limit"
	}
	return "keyed " + k.alg.String()
}

// Wait blocks until one request for key may proceed, books it, and returns
// nil. It implements [Limiter]: the key's pause is honoured first (no
// request proceeds before it ends, and the time left counts toward maxWait
// and the deadline), then its limit. It fails at once, booking nothing, with
// a [*WaitError] wrapping [ErrWaitTooLong] when the wait would exceed
// maxWait > 0 (maxWait <= 0 sets no bound), [ErrQueueFull] when the limit's
// queue is full, or [ErrWaitExceedsDeadline] (which also matches
// context.DeadlineExceeded) when the wait would not end before ctx's
// deadline. If ctx ends during the wait, the booking is given back and Wait
// returns a *WaitError wrapping ctx.Err(). The clock is read once, from its
// monotonic reading. Safe for concurrent use.
func (k *Keyed) Wait(ctx context.Context, key string, maxWait time.Duration) error {
	if err := ctx.Err(); err != nil {
		return &WaitError{Key: key, Err: err}
	}
	deadline := int64(noDeadline)
	if dl, ok := ctx.Deadline(); ok {
		deadline = sinceEpoch(k.epoch, dl)
	}
	now := clampNow(int64(time.Since(k.epoch)))
	r, over, err := k.reserve(now, key, 1, maxWait, deadline, true)
	if err != nil {
		return &WaitError{Key: key, Delay: r.Delay, Err: err}
	}
	if r.Delay <= 0 {
		return nil
	}
	where := ownCell
	if over {
		where = overflowCell
	}
	return sleepReserved(ctx, key, r.Delay, func() {
		k.cancel(clampNow(int64(time.Since(k.epoch))), key, r, where)
	})
}

// ReserveAt books n units for key at the earliest instant at or after now
// that both its pause and its limit allow, and returns the Reservation,
// whose Delay says how long after now the units may be used. It books
// nothing and returns [ErrBadCount] for n <= 0, [ErrBurstExceeded] when n
// can never be granted at once, [ErrQueueFull] when a pacer's queue is full,
// and [ErrWaitTooLong] when the delay exceeds maxWait > 0 or cannot be
// represented; maxWait <= 0 sets no bound. On a refusal for maxWait or a
// full queue, the Reservation's Delay says how long the wait would have
// been. With the zero Limit only the pause applies and nothing is booked.
// Safe for concurrent use.
func (k *Keyed) ReserveAt(now time.Time, key string, n int, maxWait time.Duration) (Reservation, error) {
	r, _, err := k.reserve(sinceEpoch(k.epoch, now), key, n, maxWait, noDeadline, true)
	return r, err
}

// AllowAt reports whether n units may be used for key at now, and books them
// if so. It never books units for later use, and returns false while the key
// is paused and for n <= 0. Safe for concurrent use.
func (k *Keyed) AllowAt(now time.Time, key string, n int) bool {
	_, _, err := k.reserve(sinceEpoch(k.epoch, now), key, n, 0, noDeadline, false)
	return err == nil
}

// CancelAt gives back the units of r, booked by ReserveAt for key, when the
// caller abandons its wait at now; the algorithm decides how much of a
// booking whose time has passed can be returned. The units go back to the
// key's own limit if it is tracked, and otherwise to the shared overflow
// limit (see [KeyedOptions].MaxKeys) unless that is idle. Cancelling the
// zero Reservation does nothing; cancelling twice gives units back twice, so
// avoid it. Safe for concurrent use.
func (k *Keyed) CancelAt(now time.Time, key string, r Reservation) {
	k.cancel(sinceEpoch(k.epoch, now), key, r, either)
}

// PauseUntil makes requests for key wait until until: Wait and ReserveAt
// book no earlier, AllowAt refuses before it. It only ever extends a pause,
// never shortens one, and a paused key is not evicted before its pause ends.
// If the key is new and its shard is full (see [KeyedOptions].MaxKeys), the
// pause applies to the shared overflow state instead. The zero Time, and
// an until in the past of the store (no later than the latest instant it
// has decided a request of the key's shard at, or read for Wait), are
// ignored: such a pause could hold nothing back. Safe for concurrent use.
func (k *Keyed) PauseUntil(key string, until time.Time) {
	if until.IsZero() || !until.After(k.epoch) {
		return
	}
	at := sinceEpoch(k.epoch, until)
	s, h := k.locate(key)
	s.mu.Lock()
	if at <= max(s.last, s.seen) {
		s.mu.Unlock()
		return
	}
	if p, ok := s.pauses[h]; ok {
		s.pauses[h] = max(p, at)
		s.mu.Unlock()
		return
	}
	if _, ok := s.cells[h]; !ok && s.full(k) {
		s.mu.Unlock()
		k.over.mu.Lock()
		k.over.pause = max(k.over.pause, at)
		k.over.mu.Unlock()
		return
	}
	if s.pauses == nil {
		s.pauses = make(map[uint64]int64)
	}
	s.pauses[h] = at
	s.mu.Unlock()
}

// PausedUntil returns the end of key's pause as set by PauseUntil, or the
// zero Time if it has none. The store keeps no clock of its own: a pause
// ends for it once it has decided a request of the key's shard at or after
// the pause's end, so a pause that has ended by the wall clock may still be
// reported until then. Safe for concurrent use.
func (k *Keyed) PausedUntil(key string) time.Time {
	s, h := k.locate(key)
	s.mu.Lock()
	p, ok := s.pauses[h]
	_, tracked := s.cells[h]
	full := !ok && !tracked && s.full(k)
	past := max(s.last, s.seen)
	s.mu.Unlock()
	if full {
		k.over.mu.Lock()
		p, past = k.over.pause, max(past, k.over.seen)
		k.over.mu.Unlock()
	}
	if p <= past {
		return time.Time{}
	}
	return k.epoch.Add(time.Duration(p))
}

// SweepAt forgets, at now, every key whose limit is idle and which is not
// paused, and every pause that has ended, and returns how many keys are no
// longer tracked. Keys are also swept lazily as the store is used, so
// calling SweepAt is never required. Safe for concurrent use.
func (k *Keyed) SweepAt(now time.Time) int {
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

// Len returns the number of keys tracked: keys with limit state or a pause,
// not counting keys that share the overflow state. Safe for concurrent use.
func (k *Keyed) Len() int {
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		n += len(s.cells)
		for h := range s.pauses {
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

// reserve books n units for key at now (ns since epoch). With wait false it
// refuses any delay. over reports that the key used the overflow state.
func (k *Keyed) reserve(now int64, key string, n int, maxWait time.Duration, deadline int64, wait bool) (r Reservation, over bool, err error) {
	over = k.withCell(now, key, func(c *cell, pause, decided int64) bool {
		r, err = decideCell(k.alg, c, pause, decided, n, maxWait, deadline, wait)
		r = r.from(decided, now)
		return err == nil
	})
	return r, over, err
}

// withCell finds key's limit state at now (ns since epoch) and calls f with
// it under the lock that guards it, with the key's pause
// and the instant to use (never earlier than the last sweep of the key's
// shard). c is nil with the zero Limit. When f returns true, c is stored as
// the key's state (tracking the key if it was new); otherwise nothing is
// kept. over reports that the key used the shared overflow state.
func (k *Keyed) withCell(now int64, key string, f func(c *cell, pause, now int64) (keep bool)) (over bool) {
	s, h := k.locate(key)
	s.mu.Lock()
	// Callers read the clock before taking the lock, so instants reach a
	// shard slightly out of order; deciding each at the latest instant seen
	// keeps every algorithm's bookings in time order (a sliding log would
	// otherwise refuse a request that arrives a microsecond "late").
	now = max(now, s.last, s.seen)
	s.seen = now
	if now-s.last >= k.sweepEvery {
		s.sweep(k, now)
	}
	var pause int64
	if len(s.pauses) > 0 {
		pause = s.pauses[h]
	}
	if k.alg == nil {
		s.mu.Unlock()
		f(nil, pause, now)
		return false
	}
	w, tracked := s.cells[h]
	if !tracked && pause == 0 && s.full(k) {
		if now-s.last >= minSweepEvery {
			s.sweep(k, now)
		}
		if s.full(k) {
			s.mu.Unlock()
			k.over.mu.Lock()
			now = max(now, k.over.seen)
			k.over.seen = now
			f(&k.over.c, k.over.pause, now)
			k.over.mu.Unlock()
			return true
		}
	}
	s.tmp = cell{a: w.a, b: w.b}
	var x *cellExt
	if tracked && len(s.exts) > 0 {
		x = s.exts[h]
		s.tmp.x = x
	}
	if f(&s.tmp, pause, now) {
		s.store(h, x)
		if !tracked && len(s.cells) > s.peak {
			s.peak = len(s.cells)
		}
	}
	s.tmp = cell{}
	s.mu.Unlock()
	return false
}

// Where a cancelled reservation was booked.
const (
	ownCell = iota
	overflowCell
	either // the key's own cell if tracked, else the overflow cell
)

// cancel gives back the units of r for key at now.
func (k *Keyed) cancel(now int64, key string, r Reservation, where int) {
	if r.n <= 0 || k.alg == nil {
		return
	}
	if where != overflowCell {
		s, h := k.locate(key)
		s.mu.Lock()
		if w, ok := s.cells[h]; ok {
			s.tmp = cell{a: w.a, b: w.b}
			var x *cellExt
			if len(s.exts) > 0 {
				x = s.exts[h]
				s.tmp.x = x
			}
			k.alg.unbook(&s.tmp, max(now, s.last), r.at, r.n)
			s.store(h, x)
			s.tmp = cell{}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if where == ownCell {
			return // evicted as idle: nothing left to give back
		}
	}
	k.over.mu.Lock()
	if where == overflowCell || !k.alg.idle(&k.over.c, now) {
		k.alg.unbook(&k.over.c, now, r.at, r.n)
	}
	k.over.mu.Unlock()
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
func (s *shard) full(k *Keyed) bool { return len(s.cells)+len(s.pauses) >= k.perShard }

// sweep forgets at now the idle, unpaused entries of s and the ended pauses,
// returns how many keys are no longer tracked, and releases the memory of
// a map that has become much smaller than it was.
func (s *shard) sweep(k *Keyed, now int64) int {
	s.last = now
	n := 0
	for h, p := range s.pauses {
		if p <= now {
			delete(s.pauses, h)
			if _, ok := s.cells[h]; !ok {
				n++
			}
		}
	}
	if k.alg != nil {
		for h, w := range s.cells {
			if len(s.pauses) > 0 {
				if _, ok := s.pauses[h]; ok {
					continue
				}
			}
			s.tmp = cell{a: w.a, b: w.b}
			if len(s.exts) > 0 {
				s.tmp.x = s.exts[h]
			}
			if k.alg.idle(&s.tmp, now) {
				delete(s.cells, h)
				if s.tmp.x != nil {
					delete(s.exts, h)
				}
				n++
			}
		}
		s.tmp = cell{}
	}
	if len(s.pauses) == 0 {
		s.pauses = nil
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

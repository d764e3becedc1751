package pace

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/pacehttp/pace/internal/intmath"
	"github.com/pacehttp/pace/throttle"
)

// Reservation is n units booked by ReserveAt. Delay is how long after the
// now passed to ReserveAt the caller must wait before using them (0: at
// once). Pass the Reservation to CancelAt to give the units back if the
// caller will not use them. The zero Reservation books nothing.
type Reservation struct {
	Delay time.Duration // how long after ReserveAt's now the units may be used; 0: at once

	at int64 // booked instant, nanoseconds since the limiter's epoch
	n  int
}

// from re-expresses r, decided at instant decided (ns since epoch), as
// seen from the caller's earlier instant at: its Delay counts from at.
func (r Reservation) from(decided, at int64) Reservation {
	if decided > at && (r.n > 0 || r.Delay > 0) {
		r.Delay += time.Duration(decided - at)
	}
	return r
}

// cell is the state of one limit for one key. Its zero value is a fresh,
// unused limit for every algorithm, which lets the keyed store create state
// lazily and forget it once it is idle again. Compact algorithms use only a
// and b, so a keyed entry costs 24 bytes plus the map's own overhead.
type cell struct {
	a, b int64
	x    *cellExt // sliding log and composite limits only
}

// cellExt holds state that does not fit in two words.
type cellExt struct {
	log   []int64     // ring buffer of booked instants (sliding log)
	head  int         // index of the oldest entry in log
	count int         // entries in use in log
	parts []cell      // one cell per part (composite)
	back  []backState // states before bookings that waited (see pushBack)
}

// algorithm is the pure core of one rate-limiting algorithm. Times are
// nanoseconds since the limiter's epoch. Methods are called with the lock
// that guards c held, and never block. now may be earlier than times already
// recorded in c (a clock stepping back): that must mint no units and must not
// panic.
type algorithm interface {
	// earliest returns the earliest instant t >= now at which n units can be
	// taken from c, without changing c. It returns ErrBurstExceeded when n can
	// never be granted. It returns ErrQueueFull when the pacer's queue is full
	// (then with the t it would have granted, or 0). It returns ErrWaitTooLong
	// when t cannot be represented.
	earliest(c *cell, now int64, n int) (t int64, err error)
	// book takes n units at t, an instant earliest returned for c and n.
	book(c *cell, now, t int64, n int)
	// unbook gives back n units booked at t, restoring c exactly when
	// nothing else was booked since.
	unbook(c *cell, now, t int64, n int)
	// relax tells c that nothing still booked in it was booked after latest.
	// So unbook can give back all of a booking at latest. The keyed store's
	// queue knows it when it books its waiters again.
	relax(c *cell, latest int64)
	// resume prepares c for the end of a key's pause at at. The key's next
	// request goes at at, and the ones after it at the limit's steady rate.
	// They go without the burst a token bucket saved up while it waited: the
	// server's window has just been full. Window limits, which count what the
	// server counts, keep their state.
	resume(c *cell, at int64)
	// idle reports whether c at now behaves like the zero cell, so that it
	// can be forgotten.
	idle(c *cell, now int64) bool
	// span is the longest time, in nanoseconds, a cell takes to become idle
	// after its last booking (capacity/rate for a token bucket, the window
	// for window limiters). The keyed store sweeps this often.
	span() int64
	// binds reports whether, in c just booked at t, the instant that booking's
	// request actually leaves matters to the bookings after it. If so, the
	// keyed store should hear of it (Permit.Track). For a token bucket it does
	// when the bucket has no unit left at t. For a window it always does,
	// since every unit counts against the one the window's count later.
	binds(c *cell, t int64) bool
	// interval is the limit's steady spacing in nanoseconds, Rate.Interval
	// (Per/N): the gap between units once any burst is spent. For several
	// limits at once, the widest.
	interval() int64
	// maxN is the largest n a single call may ever be granted.
	maxN() int
	// standing returns c's quota at now, without changing c. now may be
	// earlier than instants recorded in c. quotaAt turns it into a Quota.
	standing(c *cell, now int64) quotaState
	// params describes the limit (not a composite) for [Limit.Params].
	params() (alg throttle.Algorithm, r Rate, burst int, leaky LeakyOptions)
	// String describes the limit, e.g. "token bucket 10/1s burst 20".
	String() string
}

// The methods an algorithm may have beyond [algorithm], each with a
// default for those that do not. They are departOne (had by GCRA, the
// sliding log and composites), coreOf (GCRA: token and leaky buckets) and
// waitBound (leaky buckets).
type (
	departer interface {
		depart(c *cell, now, t, left int64)
	}
	cored   interface{ core() *gcra }
	bounded interface{ waitBound() int64 }
)

// waitBound is the longest delay, in nanoseconds, a limit lets a caller
// queue for. It is the waitBound method of an algorithm that has one (a
// leaky-bucket pacer's queue, see [LeakyOptions]). Else it is
// math.MaxInt64, since only the caller bounds the wait. A composite checks
// each part's bound against the real now. A part's earliest judges it from
// the instant it is given.
func waitBound(a algorithm) int64 {
	if b, ok := a.(bounded); ok {
		return b.waitBound()
	}
	return math.MaxInt64
}

// departOne moves one unit booked at t in c to left (> t), the instant its
// request actually left. The keyed store's queue asks for it when it learns
// of a late departure. (It has given back the bookings made after it and
// books them again.) The limit then counts the unit where the server saw
// it. departOne is the algorithm's depart method when it has one. A token
// bucket's later units move back by as much, left − t, so that every gap
// after a late request keeps its length. Else it is unbook at t and book
// at left.
func departOne(a algorithm, c *cell, now, t, left int64) {
	if d, ok := a.(departer); ok {
		d.depart(c, now, t, left)
		return
	}
	a.unbook(c, now, t, 1)
	a.book(c, now, left, 1)
}

// coreOf returns the limit's GCRA core for the fast paths of Allow (token
// buckets and pacers), or nil.
func coreOf(a algorithm) *gcra {
	if g, ok := a.(cored); ok {
		return g.core()
	}
	return nil
}

// window is what the window algorithms (fixed window, sliding log, sliding
// counter) share: the rate they count and the methods in which they agree.
// They count what the server counts. So a pause keeps their state
// (resume), and their bookings are counted exactly (relax). Every unit
// counts against a later one (binds). A unit that leaves late moves to the
// window it left in (departOne).
type window struct {
	alg throttle.Algorithm // as [Limit.Params] gives it
	r   Rate
	n   int64 // units per window
	per int64 // window length in nanoseconds
}

func newWindow(alg throttle.Algorithm, r Rate) window {
	return window{alg: alg, r: r, n: int64(r.N), per: int64(r.Per)}
}

func (*window) resume(*cell, int64)     {}
func (*window) relax(*cell, int64)      {}
func (*window) binds(*cell, int64) bool { return true }

// span is the window: a window's cell is idle one window after its last
// booking.
func (w *window) span() int64 { return w.per }

// interval is the window over its count.
func (w *window) interval() int64 { return intmath.CeilDiv(w.per, w.n) }

func (w *window) maxN() int { return int(w.n) }

func (w *window) String() string { return w.alg.String() + " " + w.r.String() }

func (w *window) params() (throttle.Algorithm, Rate, int, LeakyOptions) {
	return w.alg, w.r, 0, LeakyOptions{}
}

// epochOffset places a limiter's epoch this far before its creation. Then
// every instant from about 73 years before the limiter's creation to about
// 73 years after it is a positive int64 of nanoseconds. It stays below
// MaxInt64/2 (the clamp of sinceEpoch), and the zero cell lies in the past.
// The clamp's range (about 146 years) is split evenly. With a 146-year
// offset the clock of a limiter would stop advancing about 85 days after
// its creation.
const epochOffset = 73 * 365 * 24 * time.Hour // a whole number of days

// newEpoch returns an epoch for a limiter created now: about 73 years
// earlier, at a midnight UTC. So window limiters can align their windows
// to the clock. Every period that divides 24h starts on a multiple of
// itself since the Unix epoch. It keeps the monotonic clock reading, so
// time.Since(epoch) is cheap and immune to wall-clock steps.
func newEpoch() time.Time {
	now := time.Now()
	day := int64(24 * time.Hour)
	intoDay := ((now.UnixNano() % day) + day) % day
	return now.Add(-epochOffset - time.Duration(intoDay))
}

// sinceEpoch converts t to nanoseconds since epoch, clamped to [1, MaxInt64/2].
func sinceEpoch(epoch, t time.Time) int64 {
	d := int64(t.Sub(epoch))
	return clampNow(d)
}

func clampNow(d int64) int64 {
	if d < 1 {
		return 1
	}
	if d > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return d
}

// reserveCell books n units in c at the earliest possible instant,
// refusing (booking nothing) with ErrWaitTooLong when the delay exceeds
// maxWait > 0. It is decideCell with no pause and no deadline.
func reserveCell(alg algorithm, c *cell, now int64, n int, maxWait time.Duration) (Reservation, error) {
	return decideCell(alg, c, 0, now, n, maxWait, noDeadline, true)
}

// noDeadline is the deadline of a reservation that has none.
const noDeadline = math.MaxInt64

// decideCell books n units of alg in c (nil: no limit, and alg is not
// used) for a request at now that may not start before pause. It refuses,
// booking nothing:
//
//   - n <= 0 (ErrBadCount);
//   - n that can never be granted (ErrBurstExceeded);
//   - the algorithm's own refusals;
//   - a delay beyond maxWait > 0, or with wait false any delay at all
//     (ErrWaitTooLong);
//   - a booking that would not come before deadline (errDeadline;
//     noDeadline means none).
//
// A refusal's Reservation carries the delay that would have been needed,
// when known. This is the one decision shared by [Shaper] and [Keyed].
func decideCell(alg algorithm, c *cell, pause, now int64, n int, maxWait time.Duration, deadline int64, wait bool) (Reservation, error) {
	if n <= 0 {
		return Reservation{}, ErrBadCount
	}
	from := max(now, pause)
	t := from
	if c != nil {
		if n > alg.maxN() {
			return Reservation{}, ErrBurstExceeded
		}
		var err error
		if t, err = alg.earliest(c, from, n); err != nil {
			if t > now { // a pacer's refusal says how long the wait would have been
				return Reservation{Delay: time.Duration(t - now)}, err
			}
			return Reservation{}, err
		}
		t = max(t, from)
	}
	d := time.Duration(t - now)
	switch {
	case !wait && d > 0, maxWait > 0 && d > maxWait:
		return Reservation{Delay: d}, ErrWaitTooLong
	case deadline != noDeadline && d > 0 && t >= deadline:
		return Reservation{Delay: d}, errDeadline
	}
	if c == nil {
		return Reservation{Delay: d}, nil
	}
	alg.book(c, from, t, n)
	return Reservation{Delay: d, at: t, n: n}, nil
}

// Shaper applies one [Limit] to a single stream of requests (one key). It
// is the counterpart of x/time/rate's Limiter for every algorithm pace
// has. Create it with [NewShaper]. The zero Shaper is not usable: its
// methods, and those of a nil *Shaper, panic with "pace: Shaper used
// without NewShaper". Use [Keyed] to apply a Limit to many keys at once.
//
// ReserveAt, AllowAt, CancelAt and QuotaAt take the time as an argument, so
// a Shaper can be driven and tested without a clock; Allow and Wait read the
// clock. Instants passed to its methods may go backwards (a clock stepping
// back). An earlier now never frees units that a later one had used, and
// earlier slots are never handed out. Times count from an epoch
// about 73 years before the Shaper was created; earlier instants count as
// that epoch.
//
// A Shaper is safe for concurrent use by multiple goroutines. One mutex
// guards its state; it is held only while deciding (a few nanoseconds),
// never while waiting.
type Shaper struct {
	// alg and g are read and changed (SetLimitAt) under mu; epoch is
	// read-only after construction.
	alg   algorithm
	epoch time.Time
	g     *gcra // alg's GCRA core for token buckets and pacers, else nil
	_     [64]byte

	mu   sync.Mutex
	c    cell
	seen int64 // latest clock reading decided on, ns since epoch (see clock)
}

// NewShaper returns a Shaper of l in its fresh state (a full token bucket, an
// idle pacer, empty windows). It returns l's error ([Limit.Err], a
// [*ConfigError] matching [ErrInvalidConfig]) when l carries one, and a
// *ConfigError naming "Limit" for the zero Limit, which has nothing to
// apply.
func NewShaper(l Limit) (*Shaper, error) {
	switch {
	case l.err != nil:
		return nil, l.err
	case l.alg == nil:
		return nil, configErr("Limit", "no limit", "a Shaper needs a non-zero Limit")
	}
	return newShaper(l.alg), nil
}

// newShaper returns a fresh Shaper of alg.
func newShaper(alg algorithm) *Shaper {
	return &Shaper{alg: alg, epoch: newEpoch(), g: coreOf(alg)}
}

// mustInit panics with a clear message when s was not made by NewShaper (a
// nil or zero Shaper), instead of a nil dereference. It reads epoch, which
// is read-only after NewShaper and never zero there.
func (s *Shaper) mustInit() {
	if s == nil || s.epoch.IsZero() {
		panic("pace: Shaper used without NewShaper")
	}
}

// lockTries is how many times lock tries s.mu before it waits in Lock.
const lockTries = 32

// lock takes s.mu for a decision. A decision holds it for tens of
// nanoseconds, so a goroutine that finds it held tries again a few times
// before it parks: parking and being woken costs microseconds. sync.Mutex
// spins only while no other goroutine waits to run on its P, so with more
// goroutines than cores it parks at once. Its parked waiters, once one has
// waited a millisecond (a garbage collection can make it so), put the
// mutex in starvation mode, where every Lock parks. Trying first keeps
// decisions off that path.
func (s *Shaper) lock() {
	for range lockTries {
		if s.mu.TryLock() {
			return
		}
	}
	s.mu.Lock()
}

// clock returns at, or the latest instant already read from the clock and
// decided on if that is later, and records it; s.mu must be held. It serves
// the methods that read the clock themselves (Allow, Wait), not those given
// an explicit now. Goroutines read the clock before taking the lock, so
// their instants arrive slightly out of order. Deciding each at the latest
// instant seen keeps bookings in time order. (A sliding log would
// otherwise refuse a request that arrives a microsecond "late".) It also
// means a clock stepping back mints nothing.
func (s *Shaper) clock(at int64) int64 {
	at = max(at, s.seen)
	s.seen = at
	return at
}

// ReserveAt books n units at the earliest instant at or after now and
// returns the Reservation; its Delay says how long after now the units may
// be used. It books nothing on an error:
//
//   - [ErrBadCount] for n <= 0;
//   - [ErrBurstExceeded] when n can never be granted at once: more than a
//     token bucket's burst, a pacer's Slack+1, a window's Rate.N, or the
//     smallest of these for [All];
//   - [ErrQueueFull] when a pacer's queue is full;
//   - [ErrWaitTooLong] when the delay exceeds maxWait > 0 or cannot be
//     represented.
//
// On a refusal for maxWait or a full queue, the Reservation's Delay says
// how long the wait would have been. maxWait means what it means in
// [Keyed.ReserveAt]: zero sets no bound, and a negative maxWait is refused
// with a [*ConfigError]. Safe for concurrent use.
func (s *Shaper) ReserveAt(now time.Time, n int, maxWait time.Duration) (Reservation, error) {
	s.mustInit()
	if maxWait < 0 {
		return Reservation{}, maxWaitErr(maxWait)
	}
	return s.reserve(sinceEpoch(s.epoch, now), n, false, maxWait)
}

// reserve is ReserveAt on nanoseconds since the epoch. With fromClock, at
// was read from the clock before taking the lock, and is decided at the
// latest such instant already seen (see clock).
func (s *Shaper) reserve(at int64, n int, fromClock bool, maxWait time.Duration) (Reservation, error) {
	s.lock()
	from := at
	if fromClock {
		from = s.clock(at)
	}
	r, err := reserveCell(s.alg, &s.c, from, n, maxWait)
	s.mu.Unlock()
	return r.from(from, at), err
}

// AllowAt reports whether n units may be used at now, and books them if so.
// It never books units for later use. Safe for concurrent use.
func (s *Shaper) AllowAt(now time.Time, n int) bool {
	s.mustInit()
	at := sinceEpoch(s.epoch, now)
	s.lock()
	defer s.mu.Unlock()
	return s.allowLocked(at, n)
}

// Allow is AllowAt(time.Now(), 1). It reads the monotonic clock through
// time.Since(epoch), which costs about half of time.Now. Safe for concurrent
// use.
func (s *Shaper) Allow() bool {
	s.mustInit()
	at := clampNow(int64(time.Since(s.epoch)))
	s.lock()
	at = s.clock(at)
	var ok bool
	if s.g != nil {
		ok = s.g.allow1(&s.c, at)
	} else {
		ok = s.allowLocked(at, 1)
	}
	s.mu.Unlock()
	return ok
}

// allowLocked is AllowAt on nanoseconds since the epoch, with s.mu held.
func (s *Shaper) allowLocked(at int64, n int) bool {
	if n <= 0 || n > s.alg.maxN() {
		return false
	}
	t, err := s.alg.earliest(&s.c, at, n)
	if err != nil || t > at {
		return false
	}
	s.alg.book(&s.c, at, at, n)
	return true
}

// CancelAt gives back the units of r when the caller abandons its wait at
// now. When nothing was booked after r, the Shaper is left exactly as if r
// had never been booked. So reservations cancelled latest first are all
// given back exactly, whatever the burst, for a queue. A queue here is
// reservations that each had to wait for their slot, after any taken at
// once at one instant. Of reservations granted at once at different
// instants, only the latest is sure to come back whole: a token bucket's
// state, two instants, does not record where the one before it lies.
// Units that later
// reservations were scheduled behind are not handed out again while those
// are held (as in x/time/rate's Reservation.CancelAt).
// So cancelling never breaks the limit's promise. A Reservation whose
// instant lies before now gives nothing back: its units count as used
// (x/time/rate's rule). Cancelling the zero Reservation, or one returned
// with an error, does nothing. Cancelling the same Reservation twice is a
// caller error that gives units back twice. Safe for concurrent use.
func (s *Shaper) CancelAt(now time.Time, r Reservation) {
	s.mustInit()
	at := sinceEpoch(s.epoch, now)
	if r.n <= 0 || at > r.at {
		return
	}
	s.mu.Lock()
	s.alg.unbook(&s.c, at, r.at, r.n)
	s.mu.Unlock()
}

// Wait blocks until one unit may be used, books it, and returns nil, as
// [Keyed.Wait] does for a key. It
// fails at once with a [*WaitError] wrapping ctx.Err() if ctx has already
// ended. It fails at once with one of the errors of ReserveAt, booking
// nothing (maxWait as there). A nil ctx fails it with a *WaitError
// wrapping a [*ConfigError]. It fails at once with
// [ErrWaitExceedsDeadline] (which also matches context.DeadlineExceeded)
// when the wait would outlast ctx's deadline, giving the unit back. If ctx
// ends while waiting, it gives the unit back and returns a *WaitError
// wrapping ctx.Err(). The WaitError's Key is empty. For n units, use
// ReserveAt. Safe for concurrent use.
func (s *Shaper) Wait(ctx context.Context, maxWait time.Duration) error {
	s.mustInit()
	if ctx == nil {
		return &WaitError{Err: nilContextErr()}
	}
	if err := ctx.Err(); err != nil {
		return &WaitError{Err: err}
	}
	if maxWait < 0 {
		return &WaitError{Err: maxWaitErr(maxWait)}
	}
	r, err := s.reserve(clampNow(int64(time.Since(s.epoch))), 1, true, maxWait)
	if err != nil {
		return &WaitError{Delay: r.Delay, Err: err}
	}
	return sleepReserved(ctx, "", r.Delay, func() { s.CancelAt(time.Now(), r) })
}

// String describes the Shaper's limit, as [Limit.String] does, e.g.
// "token bucket 10/1s burst 20".
func (s *Shaper) String() string {
	s.mustInit()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.alg.String()
}

package redislimit

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
)

// leaseText is the script that renews one process's share of one key
// (see lease.lua for its keys, arguments and reply). It reads the key's
// learned pace as a decision does (luaLearned, luaInterval). The record's
// latest booking and margin play no part in a share: they are read
// within the longest pause.
var leaseText = fill(luaText("lease.lua", "lease"), "$R", strconv.FormatInt(micros(maxLeaseRun), 10),
	"$$learned\n", fill(luaLearned, "$v", "lv", "$H", strconv.FormatInt(maxPause, 10), "$T", strconv.FormatInt(maxPause, 10)),
	"$$interval\n", luaInterval)

var leaseScript = redis.NewScript(leaseText)

// maxLease is the longest Options.Lease.
const maxLease = time.Hour

// maxLeaseRun is the longest a grant of any Limiter lasts: maxLease and
// its lead, 3 × Timeout at most, Timeout a quarter of the Lease at most.
const maxLeaseRun = maxLease + 3*maxLease/4

// maxLeaseKeys bounds the keys one Limiter holds shares of at once, so
// that keys an attacker chooses cannot grow memory without bound.
const maxLeaseKeys = 4096

// minLeaseRetry is the shortest wait before a renewal asks again for a
// share that has not grown to its target.
const minLeaseRetry = 50 * time.Millisecond

// leaseReq is what a renewal tells lease.lua: the demand (units; -1: all
// it can get) and the claim the process holds (grant and claim, units,
// with the rest of their time).
type leaseReq struct {
	want, grant, hold int64
	rest, holdRest    time.Duration
	stop              bool // the process admits nothing more (Close)
	shrunk            bool // the grant is a share shrunk to the demand, its whole claim (see shrinkLocked)
}

// leaseReply is lease.lua's reply. pace is the key's learned pace, an
// interval for the whole fleet (0: none).
type leaseReply struct {
	grant, hold, free                    int64
	lease, holdRest, retry, paused, pace time.Duration
	gen                                  uint64
	halfOpen, fresh                      bool
}

// renewFunc runs one renewal of the share of the key of tag: one round
// trip to Redis.
type renewFunc func(ctx context.Context, tag string, r leaseReq) (leaseReply, error)

// leaser holds this process's shares of each key's limit (Options.Lease):
// decisions are local, on a pace.Shaper per key at the share's limit;
// each key's share is renewed once per lease, in the background.
type leaser struct {
	l      *Limiter     // holds the pauses; its Limit is the zero Limit
	limit  []pace.Limit // the Limit's parts
	units  int64        // U: a share counts units of the smallest Rate.N of the parts
	per    time.Duration
	margin time.Duration
	lease  time.Duration // how often a share is renewed
	lead   time.Duration // how much longer than lease a grant lasts
	logs   bool          // every part is a sliding log (see shrinkLocked and rebook)
	span   time.Duration // the Limit's longest span: how long after it a unit admitted counts
	renew  renewFunc
	epoch  time.Time // see now

	keys   sync.Map // key → *leaseKey
	tags   sync.Map // tag → *leaseKey
	n      atomic.Int64
	mu     sync.Mutex // guards closed
	closed bool
	wg     sync.WaitGroup
}

// leaseKey is one key's share in this process.
type leaseKey struct {
	// Read by every decision.
	key, tag string
	cur      atomic.Pointer[leaseGrant] // nil until the first renewal
	used     atomic.Bool                // a Wait came since the last renewal
	paused   atomic.Bool                // pauses decide in Redis (see wait)
	gen      atomic.Uint64              // the key's pause generation, as last heard

	// Written by every decision: on a cache line of its own, so that
	// decisions on another core keep theirs of the fields above.
	_        [64]byte
	admitted atomic.Int64 // Waits admitted since the last renewal
	_        [56]byte

	wanting atomic.Int64 // Waits that found the share spent
	wanted  atomic.Int64 // when one last did (Unix ns)
	waiting atomic.Int64 // Waits waiting for a unit of the share now

	book   sync.Mutex // held to book a unit ahead, and give it back if it lies beyond the lease, as one step
	booked []*booking // the units Waits sleep for, in the order booked (see unbook); book guards it

	mu       sync.Mutex // guards what follows
	changed  chan struct{}
	renewing bool
	dead     bool
	timer    *time.Timer
	next     time.Time // when timer fires
	since    time.Time // start of the demand counted
	sent     time.Time // when the latest renewal was sent
	halfAt   time.Time // when admitted was read half a lease after since
	halfAdm  int64     // what it read
	want     int64     // the demand last reported
	shaper   *pace.Shaper
	pacer    *pace.Shaper  // the share's part of the key's learned pace; nil: none applies
	pace     time.Duration // the key's learned pace, for the fleet (0: none)
	paceAt   time.Time     // when the reply that told it was sent
	relearn  time.Time     // when a pause was heard that no reply sent since has answered (zero: none; see unpause)
	early    bool          // a renewal is armed for relearn
	pausing  chan struct{} // closed when the key is paused or its sliding log's share grows (rebook), to wake the Waits sleeping for a unit (wakeLocked); nil: none made
}

// leaseGrant is a share as one renewal left it. until is on this
// machine's clock, counted from before the renewal was sent.
type leaseGrant struct {
	share           int64
	until           time.Time
	shaper          *pace.Shaper // nil when the share admits nothing
	pacer           *pace.Shaper // the share's part of the key's learned pace; nil: none applies
	hold            int64
	holdUntil       time.Time
	free            bool  // the share could have grown into what no process claimed: a spent share asks again at once
	err             error // the latest renewal failed with err; the grant is the one before
	fresh, received bool  // fresh: Redis restarted lately; received: some renewal answered
}

// newLeaser returns the leaser of l (not zero, parts converted) for
// Options o, or a *pace.ConfigError for a Lease out of range.
func newLeaser(l pace.Limit, parts []part, o Options, timeout, margin time.Duration) (*leaser, error) {
	switch {
	case l.IsZero():
		return nil, &pace.ConfigError{Field: "Lease", Value: o.Lease, Reason: "needs a Limit to share"}
	case o.Lease < 4*timeout:
		return nil, &pace.ConfigError{Field: "Lease", Value: o.Lease, Reason: fmt.Sprintf("must be at least 4 × Timeout (%v), or zero", 4*timeout)}
	case o.Lease > maxLease:
		return nil, &pace.ConfigError{Field: "Lease", Value: o.Lease, Reason: "exceeds 1h"}
	}
	ls := &leaser{limit: l.Parts(), margin: margin, lease: o.Lease, lead: max(o.Lease/8, 3*timeout), epoch: time.Now()}
	ls.logs = true
	for _, p := range ls.limit { // a unit of the smallest N scales every part to one at least
		alg, r, _, _ := p.Params()
		if ls.units == 0 || int64(r.N) < ls.units {
			ls.units, ls.per = int64(r.N), r.Per
		}
		ls.logs = ls.logs && alg == throttle.SlidingLog
	}
	var span int64
	for _, p := range parts {
		span = max(span, p.span())
	}
	ls.span = time.Duration(span) * time.Microsecond
	id := strconv.FormatUint(rand.Uint64(), 36)
	ls.renew = func(ctx context.Context, tag string, q leaseReq) (leaseReply, error) {
		base := ls.l.prefix + "{" + tag + "}:"
		return runLease(ctx, ls.l.rdb, []string{base + "s", base + "p", base + "l"}, id, q, ls.units,
			micros(ls.lease), micros(ls.lead), span, 0, -1)
	}
	return ls, nil
}

// runLease runs lease.lua once; now and up (µs) stand for Redis's clock
// and uptime when positive (tests), else Redis reads its own.
func runLease(ctx context.Context, rdb redis.Scripter, keys []string, id string, q leaseReq, units, lease, lead, span, now, up int64) (leaseReply, error) {
	flag := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	v, err := leaseScript.Run(ctx, rdb, keys, id, q.want, units, lease, lead, span,
		q.grant, max(micros(q.rest), 0), q.hold, max(micros(q.holdRest), 0), now, up, flag(q.stop), flag(q.shrunk)).Result()
	if err != nil {
		return leaseReply{}, err
	}
	xs, ok := v.([]any)
	if !ok || len(xs) != 11 {
		return leaseReply{}, fmt.Errorf("%w: %T %v", ErrUnexpectedReply, v, v)
	}
	var n [11]int64
	for i, x := range xs {
		if n[i], ok = x.(int64); !ok || n[i] < 0 {
			return leaseReply{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, xs)
		}
	}
	us := func(x int64) time.Duration { return time.Duration(min(x, maxMicros)) * time.Microsecond }
	return leaseReply{grant: min(n[0], units), lease: us(n[1]), hold: min(n[2], units), holdRest: us(n[3]),
		retry: us(n[4]), paused: us(n[5]), gen: uint64(n[6]), halfOpen: n[7] == 1, fresh: n[8] == 1, free: min(n[9], units),
		pace: us(n[10])}, nil
}

// entry returns the key's share, made on its first use.
func (ls *leaser) entry(key string) (*leaseKey, error) {
	if v, ok := ls.keys.Load(key); ok {
		return v.(*leaseKey), nil
	}
	if ls.n.Add(1) > maxLeaseKeys {
		ls.n.Add(-1)
		return nil, fmt.Errorf("%w: redislimit: shares of %d keys held already", pace.ErrQueueFull, maxLeaseKeys)
	}
	k := &leaseKey{key: key, tag: keyTag(key), changed: make(chan struct{})}
	if v, loaded := ls.keys.LoadOrStore(key, k); loaded {
		ls.n.Add(-1)
		return v.(*leaseKey), nil
	}
	ls.tags.Store(k.tag, k)
	return k, nil
}

// pause marks the key of tag paused (a message of another process, or
// this one's Settle, gen 0): its Waits decide the pause in Redis until
// it ends. A throttle may have cut the key's rate as it paused it, so the
// share learns the key's pace again (see unpause): from Settle's reply,
// or else a renewal asked for now. A pause of a generation known already
// taught nothing new.
func (ls *leaser) pause(tag string, gen uint64) {
	if v, ok := ls.tags.Load(tag); ok {
		k := v.(*leaseKey)
		k.mu.Lock()
		switch {
		case gen == 0:
			k.relearn = time.Now()
		case gen > k.gen.Load():
			k.relearn = time.Now()
			ls.askLocked(k)
		}
		k.pausedLocked(gen)
		k.mu.Unlock()
	}
}

// askLocked arms a renewal of the key as soon as minLeaseRetry allows,
// unless one is under way or armed for it; k.mu is held.
func (ls *leaser) askLocked(k *leaseKey) {
	if !k.renewing && !k.early {
		k.early = true
		ls.scheduleLocked(k, max(minLeaseRetry-time.Since(k.sent), 0))
	}
}

// pausedLocked marks the key paused, in generation gen at least; k.mu is
// held.
func (k *leaseKey) pausedLocked(gen uint64) {
	for old := k.gen.Load(); gen > old && !k.gen.CompareAndSwap(old, gen); old = k.gen.Load() {
	}
	k.paused.Store(true)
	k.wakeLocked()
}

// unpause lets the key's Waits decide locally again after a Wait found
// no pause in Redis, once the share has learnt the key's pace from a
// reply sent after the latest pause heard (a renewal's, or Settle's).
// Until then Waits decide in Redis, and a renewal is asked for.
func (ls *leaser) unpause(k *leaseKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.relearn.IsZero() {
		k.paused.Store(false)
		return
	}
	ls.askLocked(k)
}

// settled applies v, the reply of Settle's script sent at sent, to the
// key of tag: its learned pace to this process's share at once (unless a
// reply sent later told it already), and its pause, as a renewal's reply
// does. See settleScript.
func (ls *leaser) settled(tag string, v any, sent time.Time) {
	xs, ok := v.([]any)
	if !ok || len(xs) != 3 {
		return
	}
	var n [3]int64
	for i, x := range xs {
		if n[i], ok = x.(int64); !ok {
			return
		}
	}
	kv, ok := ls.tags.Load(tag)
	if !ok || n[0] < 0 {
		return // not read
	}
	k := kv.(*leaseKey)
	k.mu.Lock()
	defer k.mu.Unlock()
	if n[1] > 0 {
		k.pausedLocked(uint64(max(n[2], 0)))
	}
	if k.toldLocked(time.Duration(min(n[0], maxMicros))*time.Microsecond, sent) {
		if g := k.cur.Load(); g != nil && g.received {
			ng := *g
			ng.shaper, ng.pacer = ls.shareLocked(k, g.share, time.Now())
			k.cur.Store(&ng)
		}
	}
}

// toldLocked records the key's learned pace from a reply sent at sent,
// unless a reply sent later told it already, and reports whether it
// changed; k.mu is held.
func (k *leaseKey) toldLocked(learned time.Duration, sent time.Time) bool {
	if sent.Before(k.paceAt) {
		return false
	}
	if !k.relearn.IsZero() && !sent.Before(k.relearn) {
		k.relearn = time.Time{}
	}
	k.paceAt = sent
	changed := learned != k.pace
	k.pace = learned
	return changed
}

// shareLocked returns the key's Shaper, changed at now to a share of
// units, and its pacer of the key's learned pace (see pacer; nil: none
// applies); nil and nil when the share admits nothing. k.mu is held.
func (ls *leaser) shareLocked(k *leaseKey, units int64, now time.Time) (shaper, pacer *pace.Shaper) {
	lim, ok := ls.share(units)
	pl, paced, ok2 := ls.pacer(units, k.pace)
	if !ok || !ok2 {
		return nil, nil
	}
	if k.shaper == nil {
		k.shaper, _ = pace.NewShaper(lim) // fresh: what a new share grows into, no claim holds
	} else {
		_ = k.shaper.SetLimitAt(now, lim) // keeps what was used
	}
	switch {
	case !paced:
		k.pacer = nil
	case k.pacer == nil:
		// Its first unit at a random phase of its interval, so that the
		// shares' pacers spread out as the fleet's one pace would.
		k.pacer, _ = pace.NewShaper(pl)
		_, r, _, _ := pl.Params()
		_, _ = k.pacer.ReserveAt(now.Add(-rand.N(r.Per)), 1, 0)
	default:
		_ = k.pacer.SetLimitAt(now, pl)
	}
	return k.shaper, k.pacer
}

// now returns the time, from the monotonic clock alone (time.Since:
// about half the cost of time.Now), its wall reading moved with it.
func (ls *leaser) now() time.Time {
	return ls.epoch.Add(time.Since(ls.epoch))
}

// leaseTicket is a decision on a share, in Permit.State: when it was
// admitted (since the leaser's epoch), for Depart.
type leaseTicket struct {
	k  *leaseKey
	at time.Duration
}

// ticket returns the ticket of a decision on k admitted at at.
func (ls *leaser) ticket(k *leaseKey, at time.Time) *leaseTicket {
	return &leaseTicket{k, at.Sub(ls.epoch)}
}

// depart counts a request that left later than its admission by more
// than the starting margin once more in its key's share, where it left:
// the share's window counts it there, as the server does (stricter,
// never looser; per-decision mode moves the booking instead).
func (ls *leaser) depart(t *leaseTicket, at time.Time) {
	if at.Sub(ls.epoch)-t.at <= ls.margin {
		return
	}
	g := t.k.cur.Load()
	if g == nil || g.shaper == nil {
		return
	}
	t.k.book.Lock()
	_, _ = g.shaper.ReserveAt(at, 1, 0)
	if g.pacer != nil {
		_, _ = g.pacer.ReserveAt(at, 1, 0)
	}
	t.k.book.Unlock()
}

// await returns the channel closed at the key's next renewal, starting
// one now when none is under way and g (the grant at now) has ended or is
// missing, or left some of the limit unclaimed and no renewal was sent in
// the last minLeaseRetry; dead when the key was dropped, closed when the
// Limiter was.
func (ls *leaser) await(k *leaseKey, g *leaseGrant, now time.Time) (ch <-chan struct{}, dead, closed bool) {
	ls.mu.Lock()
	closed = ls.closed
	ls.mu.Unlock()
	if closed {
		return nil, false, true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return nil, true, false
	}
	if !k.renewing && (g == nil || g.err == nil && (!now.Before(g.until) || g.free && now.Sub(k.sent) >= minLeaseRetry)) {
		ls.scheduleLocked(k, 0)
	}
	return k.changed, false, false
}

// growable reports whether a Wait that found the share spent may ask
// for more now: no renewal is under way and none was sent in the last
// minLeaseRetry.
func (ls *leaser) growable(k *leaseKey, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.renewing && now.Sub(k.sent) >= minLeaseRetry
}

// untilRenewal returns how long from now until the key's next renewal
// is sent: 0 when one is under way.
func (ls *leaser) untilRenewal(k *leaseKey, now time.Time) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.renewing {
		return 0
	}
	return max(k.next.Sub(now), 0)
}

// scheduleLocked arms the key's renewal d from now; k.mu is held.
func (ls *leaser) scheduleLocked(k *leaseKey, d time.Duration) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return
	}
	if k.timer != nil && k.timer.Stop() {
		ls.wg.Done()
	}
	ls.wg.Add(1)
	k.next = time.Now().Add(d)
	k.timer = time.AfterFunc(d, func() {
		defer ls.wg.Done()
		ls.renewKey(k)
	})
}

// want1 counts a Wait that found the key's share spent, and waits.
func (k *leaseKey) want1() {
	k.wanting.Add(1)
	k.waiting.Add(1)
	k.wanted.Store(time.Now().UnixNano())
}

// demand returns the units the key wants for its next lease, at now:
// what it used over el (the lease's second half), a sixteenth and two
// units more, and at least half the share it holds, held: a share given
// back halves at most each lease, so that a lull does not cost a burst
// after it a round trip. A key whose share was spent (a Wait waits for a
// unit now, or found none more than one time in 32 and one did in the
// last half lease) also counts what it was asked for beyond that (wanting:
// the Waits that found the share spent, since the last renewal), and
// wants at least twice what it holds, up to the limit. Only such a key
// holding nothing, or el not positive, asks for all it can get (-1). A key
// short of a unit or two that asked for all would claim a proportional
// share (lease.lua's fair) as if it wanted the whole limit, and keep it
// from a key that needs it for a lease.
func (ls *leaser) demand(k *leaseKey, admitted, wanting int64, el time.Duration, now time.Time, held int64) int64 {
	if el <= 0 {
		return -1
	}
	recent := now.UnixNano()-k.wanted.Load() < int64(ls.lease/2)
	spent := k.waiting.Load() > 0 || recent && wanting > admitted/32
	asked := admitted
	if spent {
		asked += wanting
	}
	rate := float64(asked) * float64(ls.per) / float64(el)
	d := max(int64(rate*17/16)+2, held/2)
	if spent {
		if held <= 0 {
			return -1
		}
		d = max(d, 2*held)
	}
	return min(d, ls.units)
}

// renewKey renews the key's share: one round trip (lease.lua). A key no
// Wait used during its whole lease is not renewed: its share ends with
// its lease, and it is dropped.
func (ls *leaser) renewKey(k *leaseKey) {
	k.mu.Lock()
	k.early = false
	if k.renewing || k.dead {
		k.mu.Unlock()
		return
	}
	now := time.Now()
	g := k.cur.Load()
	if ls.idleLocked(k, g, now) {
		k.mu.Unlock()
		return
	}
	rn := ls.requestLocked(k, g, now)
	g = ls.shrinkLocked(k, g, &rn, now)
	k.mu.Unlock()

	ctx, cancel := ls.l.dl.bound(context.Background())
	rep, err := ls.renew(ctx, k.tag, rn.q)
	cancel()

	k.mu.Lock()
	k.renewing = false
	if err != nil {
		ls.failedLocked(k, g, rn, err)
		k.mu.Unlock()
		return
	}
	grown := ls.grantLocked(k, rn, rep, now)
	k.mu.Unlock()
	if grown && ls.logs {
		k.rebook(time.Now()) // units booked on the smaller share come sooner on this one
	}
}

// renewal is one renewal's request, and the counts it took from the key.
type renewal struct {
	q                 leaseReq
	admitted, wanting int64
	swapped           bool // the counts were taken: the demand is measured anew
}

// idleLocked reports whether the key is idle (no Wait used it since its
// last renewal), and then looks again later, to renew it if a Wait comes
// before its lease ends, or drops it; k.mu is held.
func (ls *leaser) idleLocked(k *leaseKey, g *leaseGrant, now time.Time) bool {
	idle := g != nil && !k.used.Load() && k.wanting.Load() == 0 && k.waiting.Load() == 0
	if !idle || g.err != nil && now.Before(g.until) { // a key failing to renew and unused is dropped at its lease's end
		return false
	}
	switch rest := g.until.Sub(now); {
	case rest > ls.lead/4:
		ls.scheduleLocked(k, rest/2)
	case rest > 0:
		ls.scheduleLocked(k, rest)
	default:
		ls.dropLocked(k)
	}
	return true
}

// requestLocked starts a renewal of the key at now, g its grant: the
// demand and the claim to send; k.mu is held.
func (ls *leaser) requestLocked(k *leaseKey, g *leaseGrant, now time.Time) renewal {
	k.renewing, k.sent = true, now
	k.used.Store(false)
	el := now.Sub(k.since)
	rn := renewal{q: leaseReq{want: k.want}, swapped: g == nil || el >= ls.lease/2 || !g.received}
	if rn.swapped {
		rn.admitted, rn.wanting = k.admitted.Swap(0), k.wanting.Swap(0)
		if g == nil || !g.received {
			rn.q.want = -1
		} else {
			recent, rel := rn.admitted, el
			if k.halfAt.After(k.since) {
				recent, rel = max(rn.admitted-k.halfAdm, 0), now.Sub(k.halfAt)
			}
			rn.q.want = ls.demand(k, recent, rn.wanting, rel, now, g.share)
		}
	}
	if g != nil {
		if now.Before(g.until) {
			rn.q.grant, rn.q.rest = g.share, g.until.Sub(now)
		}
		if now.Before(g.holdUntil) {
			rn.q.hold, rn.q.holdRest = g.hold, g.holdUntil.Sub(now)
		}
	}
	return rn
}

// shrinkLocked shrinks the share g to rn's demand before rn is sent,
// when the demand is smaller and every part of the Limit is a sliding
// log, and returns the grant in force. The share's Shaper keeps its log,
// so from now on no window of it holds more than the demand: a unit is
// admitted only while its window holds fewer. When the window ending now
// holds fewer too, rn reports the smaller share as the process's whole
// claim (lease.lua's shrunk), so what it gives back is free for the other
// processes at once, not a span after its lease. Otherwise, with one
// part, rn claims the old share until a span after the latest entry.
// With more parts, rn reports the grant it shrank from. k.mu is held.
func (ls *leaser) shrinkLocked(k *leaseKey, g *leaseGrant, rn *renewal, now time.Time) *leaseGrant {
	d := rn.q.want
	if !ls.logs || !rn.swapped || g == nil || !g.received || g.err != nil || g.shaper == nil || d < 0 || d >= g.share || !now.Before(g.until) {
		return g
	}
	ng := *g
	ng.share = d
	if ng.shaper, ng.pacer = ls.shareLocked(k, d, now); ng.shaper == nil {
		return g
	}
	k.cur.Store(&ng)
	switch q := ng.shaper.QuotaAt(now); {
	case q.Remaining > 0: // no entry ahead of now, and fewer than d in the window
		rn.q.grant, rn.q.hold, rn.q.holdRest, rn.q.shrunk = d, 0, 0, true
	case len(ls.limit) == 1: // each entry, the latest Reset − its period from now, counts a span from where it lies
		hold := g.share
		if now.Before(g.holdUntil) {
			hold = max(hold, g.hold)
		}
		_, r, _, _ := ls.limit[0].Params()
		rest := q.Reset - (r.Per + min(ls.margin, r.Per/20)) + ls.span
		rn.q.grant, rn.q.hold, rn.q.holdRest, rn.q.shrunk = d, hold, max(rest, 0), true
	}
	return &ng
}

// failedLocked keeps the grant g after the renewal rn failed with err,
// and tries again after probePoll; k.mu is held.
func (ls *leaser) failedLocked(k *leaseKey, g *leaseGrant, rn renewal, err error) {
	k.admitted.Add(rn.admitted) // counted again at the next try
	k.wanting.Add(rn.wanting)
	ng := &leaseGrant{err: err}
	if g != nil {
		c := *g
		c.err = err
		ng = &c
	}
	k.cur.Store(ng)
	ls.scheduleLocked(k, probePoll)
	k.broadcastLocked()
}

// grantLocked installs the share of rep, the reply to rn sent at now,
// arms the next renewal, and reports whether the share grew; k.mu is
// held.
func (ls *leaser) grantLocked(k *leaseKey, rn renewal, rep leaseReply, now time.Time) (grown bool) {
	if rn.swapped {
		k.since, k.want = now, rn.q.want
		time.AfterFunc(ls.lease/2, func() { // the demand is measured over the lease's second half
			k.mu.Lock()
			if k.since == now {
				k.halfAt, k.halfAdm = time.Now(), k.admitted.Load()
			}
			k.mu.Unlock()
		})
	}
	k.toldLocked(rep.pace, now)
	ng := &leaseGrant{share: rep.grant, until: now.Add(rep.lease), hold: rep.hold,
		holdUntil: now.Add(rep.holdRest), fresh: rep.fresh, received: true, free: rep.free > 0}
	ng.shaper, ng.pacer = ls.shareLocked(k, rep.grant, now)
	old := k.cur.Swap(ng)
	grown = old != nil && rep.grant > old.share
	for old := k.gen.Load(); rep.gen > old && !k.gen.CompareAndSwap(old, rep.gen); old = k.gen.Load() {
	}
	if rep.paused > 0 || rep.halfOpen {
		k.pausedLocked(rep.gen)
	}
	next := ls.lease
	if rep.retry > 0 {
		next = min(next, max(rep.retry, minLeaseRetry))
	}
	if !k.relearn.IsZero() { // a pause heard after this renewal was sent
		next = minLeaseRetry
	}
	ls.scheduleLocked(k, next)
	k.broadcastLocked()
	return grown
}

// broadcastLocked wakes the Waits waiting for the key's renewal; k.mu is
// held.
func (k *leaseKey) broadcastLocked() {
	close(k.changed)
	k.changed = make(chan struct{})
}

// dropLocked forgets the key; k.mu is held.
func (ls *leaser) dropLocked(k *leaseKey) {
	k.dead = true
	ls.keys.CompareAndDelete(k.key, k)
	ls.tags.CompareAndDelete(k.tag, k)
	ls.n.Add(-1)
	k.broadcastLocked()
}

// share returns the Limit of a share of units (0 < units ≤ U) of the
// Limit: each part's Rate.N, burst and slack scaled by units/U, rounded
// down (a burst to at least 1), its period counted the starting margin
// longer (at most a 20th); false when it admits nothing.
func (ls *leaser) share(units int64) (pace.Limit, bool) {
	if units <= 0 {
		return pace.Limit{}, false
	}
	scale := func(x int) int {
		hi, lo := bits.Mul64(uint64(x), uint64(units))
		q, _ := bits.Div64(hi, lo, uint64(ls.units)) // units ≤ U: no overflow
		return int(q)
	}
	out := make([]pace.Limit, 0, len(ls.limit))
	for _, p := range ls.limit {
		alg, r, burst, lo := p.Params()
		n := scale(r.N)
		if n == 0 {
			return pace.Limit{}, false
		}
		rate := pace.Rate{N: n, Per: r.Per + min(ls.margin, r.Per/20)}
		switch alg {
		case throttle.TokenBucket:
			out = append(out, pace.TokenBucket(rate, max(scale(burst), 1)))
		case throttle.LeakyBucket:
			lo.Slack = scale(lo.Slack)
			out = append(out, pace.LeakyBucket(rate, lo))
		case throttle.FixedWindow:
			out = append(out, pace.FixedWindow(rate))
		default:
			out = append(out, pace.SlidingLog(rate))
		}
	}
	if len(out) == 1 {
		return out[0], true
	}
	return pace.All(out...), true
}

// pacer returns the Limit of a share of units' part of the key's learned
// pace (an interval for the whole fleet; 0: none): a pacer of one request
// per U/units intervals, its period the starting margin longer (at most
// a 20th), so that the shares, adding up to U at most, keep to the pace
// together. paced is false when the share's first part is no faster than
// that part of the pace: the share keeps to it alone. ok is false when
// the pacer is slower than the longest pause: the share admits nothing.
func (ls *leaser) pacer(units int64, learned time.Duration) (l pace.Limit, paced, ok bool) {
	if learned <= 0 || units <= 0 {
		return pace.Limit{}, false, true
	}
	iv := float64(learned) * float64(ls.units) / float64(units)
	if iv > float64(maxPause)*float64(time.Microsecond) {
		return pace.Limit{}, false, false
	}
	_, r, _, _ := ls.limit[0].Params()
	per := time.Duration(iv)
	if float64(per)*float64(r.N)*float64(units)/float64(ls.units) <= float64(r.Per) {
		return pace.Limit{}, false, true
	}
	return pace.TokenBucket(pace.Rate{N: 1, Per: per + min(ls.margin, per/20)}, 1), true, true
}

// close stops the renewals and gives back this process's shares, bounded
// together by the Limiter's timeout: from now on it admits nothing on
// them, so each claim ends a span from now, not a span after its lease.
// Waits asleep on a unit they booked give it back and fail with
// ErrClosed: their requests would leave after the claim ended.
func (ls *leaser) close() {
	ls.mu.Lock()
	ls.closed = true
	ls.mu.Unlock()
	var ks []*leaseKey
	ls.keys.Range(func(_, v any) bool {
		k := v.(*leaseKey)
		k.mu.Lock()
		if k.timer != nil && k.timer.Stop() {
			ls.wg.Done()
		}
		k.mu.Unlock()
		ks = append(ks, k)
		return true
	})
	ls.wg.Wait()
	ctx, cancel := ls.l.dl.bound(context.Background())
	defer cancel()
	now := time.Now()
	closed := &leaseGrant{err: ErrClosed}
	for _, k := range ks {
		g := k.cur.Swap(closed) // from now on its Waits find no share
		k.rebook(now)           // and those asleep on a unit of it give it back, refused
		if g == nil || g.share == 0 || !now.Before(g.until) {
			continue
		}
		q := leaseReq{want: 0, grant: g.share, rest: g.until.Sub(now), stop: true}
		if now.Before(g.holdUntil) {
			q.hold, q.holdRest = g.hold, g.holdUntil.Sub(now)
		}
		_, _ = ls.renew(ctx, k.tag, q) // if Redis fails, the share ends with its lease
	}
}

package redislimit

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/intmath"
	"github.com/pacehttp/pace/internal/quickest"
	"github.com/pacehttp/pace/internal/wake"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
)

// Defaults of [Options].
const (
	// DefaultTimeout bounds one decision's round trip to Redis. A limiter
	// adds about this to a request when Redis is slow or gone: the round
	// trip is given up at its deadline, plus the goroutine's scheduling.
	// (Envoy's rate-limit service waits up to its 10 s Redis timeout on
	// every request when Redis is down: envoyproxy/ratelimit#462.)
	DefaultTimeout = 50 * time.Millisecond
	// DefaultPrefix starts the name of every key the Limiter writes.
	DefaultPrefix = "pace:"
	// DefaultMargin is the default [Options].Margin.
	DefaultMargin = 2 * time.Millisecond
	// DefaultProbeLease is the default [Options].ProbeLease.
	DefaultProbeLease = 10 * time.Second
)

// probePoll is how often a request waiting behind a key's probe asks
// Redis again, in case the message that the probe was answered was lost.
const probePoll = 100 * time.Millisecond

// fallbackBit marks the Permits of the Fallback limiter (Permit.Gen is the
// limiter's own): package pace's Keyed keeps Gen below 2^32, and a key's
// generation in Redis (a decision's Permit.Gen) stays below 2^53.
const fallbackBit = 1 << 63

// Options configures a [Limiter]. The zero value is usable: prefix "pace:",
// a 50 ms timeout, failing closed.
type Options struct {
	// Prefix starts the name of every key the Limiter writes; "" means
	// DefaultPrefix. Limiters that share a limit use the same Prefix, the
	// same Limit, and Lease 0 or not alike: Limiters with and without Lease
	// keep their shares under different keys, and do not see each other's.
	// Their Leases may differ in length. If Redis restarts without
	// persistence, keep one length: a restarted Redis waits out only the
	// caller's own claims. Different limits need different prefixes. It
	// must not contain '{' or '}', which would move Redis Cluster's hash
	// tag (see docs/fleet.md, "Keys in Redis").
	Prefix string

	// Timeout bounds each script's round trip to Redis (one per
	// decision). Zero means DefaultTimeout; otherwise it must be from
	// 100 µs to 1 h. It
	// holds on the network only with a client that honours contexts
	// (go-redis's ContextTimeoutEnabled, which [New] requires). When the
	// caller's context cannot be cancelled (context.Background), round
	// trips share one deadline per millisecond, so a round trip may be
	// given up to min(Timeout/20, 1 ms) less than Timeout, never more.
	//
	// Connections are made outside it. The Limiter readies them in the
	// background: the handshake and a SCRIPT LOAD of its scripts, within
	// 8 × Timeout. It does so at New and after a round trip that Redis
	// did not answer. Meanwhile a *redis.Client's decisions wait for it,
	// at most Timeout (8 × Timeout for a new Limiter's first), and make
	// no connection of their own. So a Redis whose round trip fits in
	// Timeout works however far away it is. The subscription to other
	// processes' pauses is bounded by it too (each connection attempt by
	// 8 × Timeout), and so is Close.
	Timeout time.Duration

	// Fallback, if not the zero Limit, is the policy when Redis cannot
	// decide in time: fail open, to a local in-memory pace.Keyed holding
	// Fallback, one per Limiter. Give it this process's share of the
	// limit, in the limit's shape: pace.SlidingLog(pace.PerSecond(50/4))
	// for one of four processes sharing a sliding log of 50/s. The zero
	// Limit fails closed: Wait returns a *pace.WaitError wrapping
	// [ErrUnavailable].
	//
	// The Fallback is stricter than a fresh limiter, so that the
	// processes together stay within the shared limit in every window:
	//   - It starts empty at each switch from Redis: its decisions wait
	//     out its longest span first (a window, or capacity × interval),
	//     as others may have spent the shared limit just before.
	//   - It books every decision Redis makes in this process too.
	//   - For the Limit's longest span after the Fallback's last
	//     decision, admission or departure (Depart of its Permit),
	//     decisions on Redis, and with Lease those of the shares, also
	//     keep to the Fallback. A Redis back from an outage knows nothing
	//     of what the Fallbacks admitted.
	//
	// With a share in the limit's shape, no window exceeds the limit.
	// A looser share (a token bucket for a window) can exceed it by the
	// difference. OnFallback tells when the Fallback decides.
	Fallback pace.Limit

	// Margin is the departure margin a key starts with: how much later
	// than its slot a request may reach the server and still keep within
	// the server's count. Every part's period counts the key's margin
	// longer, up to Per/20 (a leaky bucket's interval, which a pacing
	// server counts one by one, up to interval/20), and a fixed window
	// books nothing in its last margin. The margin learns, per key, for
	// every process (see docs/fleet.md, "What answers
	// teach"); it never narrows below Margin. A request that leaves later
	// than its slot by more than half of Margin has its booking moved to
	// where it left, at the cost of a second round trip (see Depart). Zero means
	// DefaultMargin (2 ms: 0.2 % of a 1 s period); negative means none.
	Margin time.Duration

	// ProbeLease is how long a key's probe holds its role: if its process
	// never reports the probe's answer (it died, or the server never
	// answers), the next request probes after this long. Zero means
	// DefaultProbeLease (10 s); it must not be negative nor longer than
	// 24 h. It is fixed, whatever the pause. (Package pace's Keyed, within
	// one process, needs no lease: its probe holds the role until it ends.)
	ProbeLease time.Duration

	// OnFallback, if non-nil, is called each time a Wait's decision goes
	// to the Fallback limiter because Redis could not decide, with the
	// Wait's key and the cause (matching [ErrUnavailable]), before the
	// Fallback limiter decides: the way to see that a fallback is in use
	// (count it, log it, raise an alert). It is called on the goroutine of
	// the Wait, so it must be safe for concurrent use and must not block.
	// The key may be a secret (an API key): take care where it is written.
	// Without a Fallback it is never called (the Wait's error says so).
	OnFallback func(key string, err error)

	// Lease, if positive, shares the Limit by leases: each process holds
	// a share of each key's limit and decides on it locally, with no
	// round trip. A share is renewed once per Lease, one round trip per
	// key, and grows or shrinks with the process's demand (Doorman's
	// proportional share, github.com/youtube/doorman). The shares of a
	// key never add up to more than the Limit (see the package
	// documentation, "Leased shares"). Zero decides each request in
	// Redis. It must be at least 4 × Timeout and at most 1 h, and needs a
	// non-zero Limit.
	Lease time.Duration
}

// Limiter is a [throttle.Limiter] whose state lives in Redis, so that every
// process using the same Redis, prefix and Limit shares one limit and one
// pause per key. Create it with [New]; call Close when done. It is safe
// for concurrent use by multiple goroutines.
type Limiter struct {
	rdb      redis.UniversalClient
	parts    []part
	decider  *redis.Script // decideScript of parts
	args     []any         // decider's arguments common to every decision (see decideScript)
	sliding  bool          // a part is a sliding log: decisions need a unique id
	cancelKX []any         // cancelScript's kind, x and c per part
	suffixes []string      // of the decision's keys: "p", then the parts' "0", "1", …, then "l"
	limited  bool          // the Limit is not zero: Permit.Limited
	interval int64         // the Limit's slowest spacing (µs; see limitInterval)
	spacing  int64         // what Settle learns against: interval, or the shares' Limit's with Options.Lease
	spaced   bool          // the Limit, decided in Redis, spaces each request by its interval (see spacesEach)
	horizon  int64         // µs; see horizon
	prefix   string
	channel  string
	dl       deadlines // bounds each round trip by timeout
	link     link      // keeps connections ready outside decisions
	lease    int64     // µs
	fallback *pace.Keyed
	// strictFor is the longest span of the Limit's parts (0: no Fallback
	// or no limit), strictUntil until when (Unix ns) decisions on Redis
	// keep to the Fallback's pace too (see shadow).
	strictFor   time.Duration
	strictUntil atomic.Int64
	// holdFor is the Fallback's longest span, holdUntil until when (Unix
	// ns) its decisions wait (see holdOff).
	holdFor   time.Duration
	holdUntil atomic.Int64
	onFall    func(key string, err error) // Options.OnFallback
	ls        *leaser                     // Options.Lease; nil: each decision in Redis

	margin    time.Duration // the starting margin: a departure later than its slot by more is reported (Depart)
	top       int64         // the widest margin of any part (µs; see part)
	warm      time.Duration // how late a departure counts until the key's server is known (see Depart)
	quick     answers       // how quickly each key's server answers (the late-answer rule)
	ws        watches
	psMu      sync.Mutex    // guards ps once New returned, and psClosed
	ps        *redis.PubSub // nil until a Ring with every shard down has one
	psClosed  bool
	closed    atomic.Bool     // by Close: Waits fail with ErrClosed
	stopCtx   context.Context // cancelled by Close (stopNow): listen's calls derive from it
	stopNow   context.CancelFunc
	stop      chan struct{} // closed by Close
	listened  chan struct{} // closed when listen returns
	closeOnce sync.Once
}

var _ throttle.Limiter = (*Limiter)(nil)

// New returns a Limiter holding l in Redis through rdb (a *redis.Client,
// *redis.ClusterClient, *redis.Ring, or a Sentinel failover client). It
// subscribes to the Limiter's channel (prefix + "throttle") to hear of
// other processes' pauses, waiting at most 1.5 × Options.Timeout for
// Redis: if Redis does not answer in time, New returns all the same and a
// goroutine keeps trying, each try bounded as long; Close ends it.
//
// It returns a *pace.ConfigError (matching pace.ErrInvalidConfig) for a
// nil rdb, a client without ContextTimeoutEnabled (Timeout could not bound
// a decision), an invalid Options field, a Limit that carries an error, a sliding counter (pace.SlidingCounter; not held in Redis), and
// numbers the scripts cannot compute exactly: a token bucket's or leaky
// bucket's rate faster than one per microsecond, a fixed window's or
// sliding log's Rate.Per under one microsecond, spans beyond 2^50 µs (about 35 years), a sliding log of
// more than 2^20 requests per window, or more than 32 parts (pace.All). Durations are rounded up to whole
// microseconds, the resolution of Redis's TIME. The zero Limit sets no
// limit: the Limiter holds each key's pause and learned pace alone (see
// docs/fleet.md, "What answers teach").
func New(rdb redis.UniversalClient, l pace.Limit, o Options) (*Limiter, error) {
	if rdb == nil || isNilPointer(rdb) {
		return nil, &pace.ConfigError{Field: "rdb", Reason: "a Redis client is required"}
	}
	if !honoursContext(rdb) {
		return nil, &pace.ConfigError{Field: "rdb", Value: fmt.Sprintf("%T", rdb), Reason: "set ContextTimeoutEnabled in its options, so that Options.Timeout bounds each decision"}
	}
	o, err := o.resolved()
	if err != nil {
		return nil, err
	}
	parts, err := convert(l, o.Margin)
	if err != nil {
		return nil, err
	}
	var ls *leaser
	spacing, span := limitInterval(l), longestSpan(parts)
	if o.Lease != 0 {
		if ls, err = newLeaser(l, parts, o, o.Timeout, o.Margin); err != nil {
			return nil, err
		}
		l, parts = pace.Limit{}, nil // Redis holds the pauses; the shares hold the Limit
	}
	lim := &Limiter{
		rdb: rdb, parts: parts, prefix: o.Prefix, channel: o.Prefix + "throttle",
		lease: micros(o.ProbeLease), margin: o.Margin, decider: decideScript(parts),
		limited: len(parts) > 0, interval: limitInterval(l), spacing: spacing, horizon: horizon(parts),
		spaced: spacesEach(l),
	}
	lim.onFall = o.OnFallback
	lim.quick.seed = maphash.MakeSeed()
	lim.dl.init(o.Timeout)
	if !o.Fallback.IsZero() {
		if lim.fallback, err = pace.NewKeyed(o.Fallback, pace.KeyedOptions{}); err != nil {
			return nil, fallbackErr(err)
		}
		lim.strictFor = span // the Limit's, which the shares hold with Lease
		lim.holdFor = lim.strictFor
		if fparts, err := convert(o.Fallback, 0); err == nil {
			lim.holdFor = longestSpan(fparts)
		}
	}
	lim.setArgs(o.Timeout)
	if ls != nil {
		lim.ls, ls.l = ls, lim
		lim.ws.onPause = ls.pause
	}
	lim.stop, lim.listened = make(chan struct{}), make(chan struct{})
	lim.stopCtx, lim.stopNow = context.WithCancel(context.Background())
	lim.link.init(lim.stopCtx, rdb, o.Timeout, lim.stop, lim.decider, cancelScript, settleScript, departScript)
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout+o.Timeout/2)
	lim.ps = subscribe(ctx, rdb, lim.channel) // if Redis does not answer in time, listen tries again
	cancel()
	go lim.listen(o.Timeout)
	return lim, nil
}

// resolved returns o with its defaults in place of zero values (and no
// negative Margin), or the *pace.ConfigError of an invalid field.
func (o Options) resolved() (Options, error) {
	switch {
	case o.Prefix == "":
		o.Prefix = DefaultPrefix
	case strings.ContainsAny(o.Prefix, "{}"):
		return o, &pace.ConfigError{Field: "Prefix", Value: o.Prefix, Reason: "must not contain '{' or '}' (Redis Cluster's hash tag)"}
	}
	switch {
	case o.Timeout == 0:
		o.Timeout = DefaultTimeout
	case o.Timeout < minTimeout || o.Timeout > maxTimeout:
		return o, &pace.ConfigError{Field: "Timeout", Value: o.Timeout, Reason: "must be 0 (the default) or from 100µs to 1h"}
	}
	switch {
	case o.ProbeLease < 0:
		return o, &pace.ConfigError{Field: "ProbeLease", Value: o.ProbeLease, Reason: "must not be negative"}
	case o.ProbeLease == 0:
		o.ProbeLease = DefaultProbeLease
	case micros(o.ProbeLease) > maxPause:
		return o, &pace.ConfigError{Field: "ProbeLease", Value: o.ProbeLease, Reason: "exceeds 24h, the longest pause a Limiter records"}
	}
	switch {
	case o.Margin == 0:
		o.Margin = DefaultMargin
	case o.Margin < 0:
		o.Margin = 0
	}
	return o, nil
}

// setArgs sets what every decision sends of the Limiter's own (see
// decideScript), and the key suffixes and cancelScript's numbers of its
// parts, for a timeout.
func (l *Limiter) setArgs(timeout time.Duration) {
	l.suffixes = append(l.suffixes, "p")
	for i, p := range l.parts {
		l.top = max(l.top, p.top)
		w := time.Duration(p.per/max(p.n, 1)/20) * time.Microsecond // package pace's maxMargin of the part's interval
		if i == 0 || w < l.warm {
			l.warm = w
		}
	}
	m := micros(l.margin)
	keep := remember(timeout).Milliseconds()
	if !resends(l.rdb) {
		keep = 0
	}
	l.args = append(l.args, l.lease, l.horizon, m, l.marginRun(), l.top, keep)
	for i, p := range l.parts {
		l.suffixes = append(l.suffixes, strconv.Itoa(i))
		l.sliding = l.sliding || p.kind == kindSliding
		switch p.kind {
		case kindGCRA:
			l.args = append(l.args, []any{p.x, p.k * p.x, p.c, p.n, p.top, p.z}[:partArgs(p)]...)
		case kindFixed:
			l.args = append(l.args, p.per, p.n, p.c, min(m, p.top), p.top)
		default:
			l.args = append(l.args, p.x, p.n, p.c, p.top)
		}
		x := p.x // a pacer gives back no more than its interval at the starting margin
		if p.kind == kindSliding {
			x = p.xw // a log's entries matter as long as its widest window
		}
		l.cancelKX = append(l.cancelKX, p.kind, x, p.c)
	}
	l.suffixes = append(l.suffixes, "l")
}

// longestSpan returns the longest span of parts (see part.span), 0 for
// none.
func longestSpan(parts []part) time.Duration {
	var d time.Duration
	for _, p := range parts {
		d = max(d, time.Duration(p.span())*time.Microsecond)
	}
	return d
}

// marginRun returns how long a widened margin lasts before it halves
// (µs): marginRun intervals of the Limit, at most maxPause; 0 without a
// limit.
func (l *Limiter) marginRun() int64 {
	if l.interval > maxPause/marginRun {
		return maxPause
	}
	return marginRun * l.interval
}

// honoursContext reports whether rdb lets a context's deadline bound its
// network I/O, as far as its type tells.
func honoursContext(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true // another implementation: its documentation says
}

// fallbackErr is the error of an invalid Options.Fallback: a
// *pace.ConfigError whose Field names the Fallback ("Fallback.Burst"), or
// the Limit's error wrapped.
func fallbackErr(err error) error {
	if ce, ok := err.(*pace.ConfigError); ok {
		return &pace.ConfigError{Field: "Fallback." + ce.Field, Value: ce.Value, Reason: ce.Reason}
	}
	return fmt.Errorf("redislimit: Fallback: %w", err)
}

// Close stops listening for other processes' pauses, and readying
// connections. It does not close the Redis client. Waits still running
// may miss a pause set afterwards. Whatever Redis does (down, stalled, or
// a server that accepts connections and never answers), Close returns
// within about 9 × Options.Timeout (450 ms by default; it waits for
// go-redis's reconnection or a warm-up in progress, each bounded at 8 ×
// Timeout, and for the listening goroutine's last call), leaving no
// goroutine behind; with Options.Lease, one Timeout more, to give this
// process's shares back. Later calls return nil at once. Waits after
// Close fail with [ErrClosed]; with Options.Lease, so do Waits asleep on
// a unit of a share when Close starts (their requests would leave after
// the share ended).
func (l *Limiter) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		if l.ls != nil {
			l.ls.close()
		}
		close(l.stop)
		l.stopNow() // ends listen's call in progress, so ps's lock is free
		l.psMu.Lock()
		l.psClosed = true
		if l.ps != nil {
			err = l.ps.Close()
		}
		l.psMu.Unlock()
		var wg sync.WaitGroup
		wg.Go(l.link.close) // a warm-up in progress ends while listen's call does
		<-l.listened
		wg.Wait()
	})
	return err
}

// keys returns the Redis keys of one decision for the key of tag (see
// keyTag): its throttle, then one per part, then its learned record
// (see luaLearned), all with the hash tag {tag}
// so that they share a slot. The keys are slices of one string, built in
// one allocation.
func (l *Limiter) keys(tag string) []string {
	base := len(l.prefix) + len(tag) + 3 // prefix{tag}:
	n := 0
	for _, suf := range l.suffixes {
		n += base + len(suf)
	}
	var b strings.Builder
	b.Grow(n)
	for _, suf := range l.suffixes {
		b.WriteString(l.prefix)
		b.WriteByte('{')
		b.WriteString(tag)
		b.WriteString("}:")
		b.WriteString(suf)
	}
	all := b.String()
	ks := make([]string, len(l.suffixes))
	for i, suf := range l.suffixes {
		ks[i], all = all[:base+len(suf)], all[base+len(suf):]
	}
	return ks
}

// decision is decideScript's reply.
type decision struct {
	status, a, gen, b int64 // see decideScript: a the delay or wait, gen the refusal's reason, b strikes or probes
	probe             bool
	lease, at         int64
	members           []string // per part; nil when all are "" (no sliding log)
}

// member returns the i-th of members (see decision), "" when there are none.
func member(members []string, i int) string {
	if members == nil {
		return ""
	}
	return members[i]
}

// minusOne is int64(-1) in an interface, boxed once: decideScript's "none".
var minusOne any = int64(-1)

// boxed returns n in an interface, without allocating for -1 (small
// non-negative ones never allocate).
func boxed(n int64) any {
	if n == -1 {
		return minusOne
	}
	return n
}

// waitBound returns the shortest wait (µs) the caller refuses: beyond
// left (> 0; 0: no bound), or not ending before the deadline (dlLeft µs
// away, >= 0; -1: none); -1 when neither bounds it.
func waitBound(left, dlLeft int64) int64 {
	bound := int64(-1)
	if left > 0 {
		bound = left + 1
	}
	if dlLeft >= 0 && (bound < 0 || dlLeft < bound) {
		bound = dlLeft
	}
	return bound
}

// decide runs decideScript, sent at now: one round trip. bound is
// waitBound's.
func (l *Limiter) decide(ctx context.Context, now time.Time, keys []string, bound, probes int64) (decision, error) {
	return l.decideID(ctx, now, keys, bound, probes, strconv.FormatUint(rand.Uint64(), 36))
}

// decideID is decide with the decision's unique id.
func (l *Limiter) decideID(ctx context.Context, now time.Time, keys []string, bound, probes int64, id string) (decision, error) {
	keys = append(keys[:len(keys):len(keys)], decisionKey(keys[0], id))
	args := l.args // no unique id, no bound, no probes to expect: the Limiter's arguments alone
	if l.sliding || bound != -1 || probes != -1 {
		args = make([]any, len(l.args), len(l.args)+3)
		copy(args, l.args)
		if l.sliding {
			args = append(args, id)
		}
		if bound != -1 || probes != -1 {
			args = append(args, boxed(bound))
		}
		if probes != -1 {
			args = append(args, probes)
		}
	}
	bctx, cancel := l.dl.boundAt(ctx, now)
	l.link.enter()
	v, err := l.decider.Run(bctx, l.rdb, keys, args...).Result()
	cancel()
	l.link.exit(ctx, err)
	if err != nil {
		return decision{}, err
	}
	return parseDecision(v, len(l.parts), l.sliding)
}

// remember is how long a decision's reply is kept in Redis (its key
// decisionKey), so that go-redis's sending it again books nothing more:
// go-redis sends again within the decision's deadline, timeout; a
// script queued in a stalled Redis may run later.
func remember(timeout time.Duration) time.Duration {
	return max(2*time.Second, 2*timeout)
}

// resends reports whether rdb may send a command again after its
// connection broke: a *redis.Client with MaxRetries -1 (0 once the client
// is made) never does; any other client may.
func resends(rdb redis.UniversalClient) bool {
	if c, ok := rdb.(*redis.Client); ok {
		return c.Options().MaxRetries > 0
	}
	return true
}

// decisionKey returns the Redis key that keeps the reply of the decision
// id (see remember), from the key's throttle key p ("prefix{tag}:p"): in
// the same slot.
func decisionKey(p, id string) string {
	return p[:len(p)-1] + "d:" + id
}

// parseDecision checks and reads decideScript's reply v for a limit of
// parts parts; a booking's reply carries their members when sliding.
func parseDecision(v any, parts int, sliding bool) (decision, error) {
	xs, ok := v.([]any)
	if !ok || len(xs) < 3 {
		return decision{}, fmt.Errorf("%w: %T %v", ErrUnexpectedReply, v, v)
	}
	var n [7]int64
	for i := 0; i < len(xs) && i < 7; i++ {
		x, ok := xs[i].(int64)
		if !ok {
			return decision{}, fmt.Errorf("%w: element %d is %T", ErrUnexpectedReply, i, xs[i])
		}
		n[i] = x
	}
	if len(xs) == 3 { // booked at once: {0, instant, gen}
		if n[0] != 0 || sliding {
			return decision{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, xs)
		}
		return decision{at: n[1], gen: n[2]}, nil
	}
	d := decision{status: n[0], a: n[1], gen: n[2], b: n[3]}
	switch {
	case d.status < 0 || d.status > 5 || d.a < 0:
		return decision{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, xs)
	case d.status != 0:
		return d, nil
	case !sliding && len(xs) != 7, sliding && len(xs) != 7+parts:
		return decision{}, fmt.Errorf("%w: %d elements for %d parts", ErrUnexpectedReply, len(xs), parts)
	}
	d.probe, d.lease, d.at = n[4] == 1, n[5], n[6]
	for i, m := range xs[7:] {
		s, ok := m.(string)
		if !ok {
			return decision{}, fmt.Errorf("%w: member is %T", ErrUnexpectedReply, m)
		}
		if s != "" && d.members == nil {
			d.members = make([]string, parts)
		}
		if d.members != nil {
			d.members[i] = s
		}
	}
	return d, nil
}

// waitShared is Wait deciding in Redis.
func (l *Limiter) waitShared(ctx context.Context, key string, maxWait time.Duration) (throttle.Permit, error) {
	p := throttle.Permit{Key: key, Limited: l.limited}
	if err := ctx.Err(); err != nil {
		return p, &pace.WaitError{Key: key, Err: err}
	}
	wt := waiting{key: key, tag: keyTag(key), start: time.Now(), maxWait: maxWait, probes: -1}
	wt.w, wt.seq = l.ws.add(wt.tag)
	defer l.ws.done(wt.tag, wt.w)
	wt.keys = l.keys(wt.tag)
	for sent := wt.start; ; sent = time.Now() { // sent: no later than the decision is sent
		if waited, err := l.link.ready(ctx); err != nil {
			return l.failed(ctx, p, maxWait, wt.start, err)
		} else if waited {
			sent = time.Now()
		}
		wt.bound(ctx, sent)
		d, err := l.decide(ctx, sent, wt.keys, waitBound(wt.left, wt.dlLeft), wt.probes)
		if err != nil {
			return l.failed(ctx, p, maxWait, wt.start, err)
		}
		switch d.status {
		case 3, 4, 5:
			return p, wt.refused(d)
		case 1, 2:
			if err := l.hold(ctx, &p, &wt, d); err != nil {
				return p, err
			}
			continue
		}
		again, err := l.booked(ctx, &p, &wt, d, sent)
		if !again {
			return p, err
		}
		p.Probe, p.Strikes, p.Gen, p.Delay, p.Track, p.State = false, 0, 0, 0, false, nil
	}
}

// waiting is the state of one Wait.
type waiting struct {
	key, tag string
	keys     []string
	start    time.Time
	maxWait  time.Duration
	w        *watch
	seq      uint64
	probes   int64 // expected probes, -1 until the first hold
	// The caller's bounds as of the decision being sent (see bound).
	left, dlLeft int64
	deadline     time.Time
	hasDeadline  bool
}

// bound sets the caller's bounds for a decision sent at sent: left (µs;
// 0: no bound), dlLeft (µs; -1: no deadline).
func (wt *waiting) bound(ctx context.Context, sent time.Time) {
	wt.left = 0
	if wt.maxWait > 0 {
		wt.left = max(int64((wt.maxWait-sent.Sub(wt.start))/time.Microsecond), 1)
	}
	wt.dlLeft = -1
	wt.deadline, wt.hasDeadline = ctx.Deadline()
	if wt.hasDeadline {
		wt.dlLeft = max(int64(wt.deadline.Sub(sent)/time.Microsecond), 0)
	}
}

// refused returns the error of a decision that booked nothing and ends
// the Wait (status 3, 4 or 5).
func (wt *waiting) refused(d decision) error {
	switch d.status {
	case 5:
		return &pace.WaitError{Key: wt.key, Err: badState(wt.keys, d.gen)}
	case 4:
		return &pace.WaitError{Key: wt.key, Err: pace.ErrThrottled}
	}
	reason := d.gen
	if reason == 1 && !(wt.left > 0 && d.a > wt.left) { // beyond waitBound, within maxWait: the deadline's bound
		reason = 3
	}
	return &pace.WaitError{Key: wt.key, Delay: time.Duration(d.a) * time.Microsecond, Err: refusal(reason)}
}

// hold sleeps while the key is paused (status 1) or its probe is in
// flight (2: then a while, within the bounds), or until a message about
// the key comes. It returns the refusal when the caller's bounds do not
// allow it.
func (l *Limiter) hold(ctx context.Context, p *throttle.Permit, wt *waiting, d decision) error {
	if wt.probes < 0 {
		wt.probes = d.b
	}
	wait := time.Duration(d.a) * time.Microsecond
	var err error
	if d.status == 1 {
		err = refusePause(wt.key, wait, wt.left, wt.dlLeft)
	} else {
		wait, err = holdProbe(wt.key, wait, wt.maxWait, wt.start, wt.deadline, wt.hasDeadline)
	}
	if err != nil {
		return err
	}
	wake, cur, _ := l.ws.wakeAfter(wt.w, wt.seq)
	wt.seq = cur
	t0 := time.Now()
	err = sleepWake(ctx, wt.key, wait, wake)
	p.Held += time.Since(t0)
	return err
}

// booked fills p from decision d, which booked a slot, sent at sent, and
// waits for the slot. It returns again when a pause announced meanwhile
// made it give the slot back.
func (l *Limiter) booked(ctx context.Context, p *throttle.Permit, wt *waiting, d decision, sent time.Time) (again bool, err error) {
	wait := time.Duration(d.a) * time.Microsecond
	// The slot on this machine's clock, at the latest: Redis read its
	// clock after the script was sent.
	p.State = &inflight{lease: d.lease, at: d.at, slot: sent.Add(wait), members: d.members}
	p.Probe, p.Strikes, p.Gen, p.Delay, p.Track = d.probe, int(d.b), uint64(d.gen), wait, l.limited
	if l.strictFor > 0 {
		if p.Delay, err = l.shadow(wt.key, sent, wait, wt.left, wt.dlLeft); err != nil {
			l.cancel(context.WithoutCancel(ctx), wt.tag, wt.keys, d)
			p.State, p.Track = nil, false
			return false, err
		}
	}
	if p.Delay == 0 {
		return false, nil
	}
	again, err = l.sleepBooked(ctx, *p, wt.tag, wt.keys, d, wt.w, &wt.seq)
	if !again && err != nil {
		p.State, p.Track = nil, false
	}
	return again, err
}

// shadow books a decision that Redis booked, wait from now, in the
// Fallback too, so that the Fallback starts from this process's use when
// Redis goes. For strictFor after the Fallback last decided, admitted or
// saw a departure (see keepStrict), the decision keeps to the Fallback's
// pace as well: a Redis back from an outage does not know what the
// Fallbacks admitted meanwhile. It returns
// how long to wait, or the refusal when that is beyond left (µs, > 0) or
// the deadline (dlLeft µs, >= 0).
func (l *Limiter) shadow(key string, now time.Time, wait time.Duration, left, dlLeft int64) (time.Duration, error) {
	r, err := l.fallback.ReserveAt(now, key, 1, l.strictFor)
	if now.UnixNano() >= l.strictUntil.Load() {
		return wait, nil
	}
	if err != nil {
		r.Delay = l.strictFor
	}
	hold := max(wait, r.Delay)
	return hold, refusePause(key, hold, left, dlLeft)
}

// refusePause returns the error for a pause whose rest is d when it
// exceeds left (µs, > 0) or does not end before the deadline (dlLeft µs,
// >= 0), or nil.
func refusePause(key string, d time.Duration, left, dlLeft int64) error {
	us := int64(d / time.Microsecond)
	switch {
	case left > 0 && us > left:
		return &pace.WaitError{Key: key, Delay: d, Err: pace.ErrWaitTooLong}
	case dlLeft >= 0 && us >= dlLeft:
		return &pace.WaitError{Key: key, Delay: d, Err: errDeadline}
	}
	return nil
}

// holdProbe returns how long to wait behind a probe whose lease has lease
// left before asking Redis again: at most probePoll, and within maxWait
// (> 0) from start and the deadline. Once either has run out it returns a
// *pace.WaitError wrapping pace.ErrWaitTooLong or the deadline error, with
// no Delay: the probe's end is not known in advance.
func holdProbe(key string, lease, maxWait time.Duration, start, deadline time.Time, hasDeadline bool) (time.Duration, error) {
	d := min(lease, probePoll)
	if maxWait > 0 {
		rest := maxWait - time.Since(start)
		if rest <= 0 {
			return 0, &pace.WaitError{Key: key, Err: pace.ErrWaitTooLong}
		}
		d = min(d, rest)
	}
	if hasDeadline {
		rest := time.Until(deadline)
		if rest <= 0 {
			return 0, &pace.WaitError{Key: key, Err: errDeadline}
		}
		d = min(d, rest)
	}
	return max(d, time.Microsecond), nil
}

// sleepWake waits d, or until wake is closed. If ctx ends first it returns
// a *pace.WaitError wrapping ctx.Err() (the deadline error for a deadline).
func sleepWake(ctx context.Context, key string, d time.Duration, ch <-chan struct{}) error {
	if wake.Sleep(ctx, d, ch) == nil {
		return nil
	}
	return &pace.WaitError{Key: key, Delay: d, Err: ctxErr(ctx)}
}

func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != context.DeadlineExceeded {
		return err
	}
	return errDeadline
}

// sleepBooked waits for the slot of decision d on the key of tag. It
// returns again when a pause announced after the booking made it give the
// slot back, and a *pace.WaitError when ctx ended (the slot given back).
func (l *Limiter) sleepBooked(ctx context.Context, p throttle.Permit, tag string, keys []string, d decision, w *watch, seq *uint64) (again bool, err error) {
	until := time.Now().Add(p.Delay)
	for {
		wake, cur, gen := l.ws.wakeAfter(w, *seq)
		*seq = cur
		if gen > uint64(d.gen) { // the key was paused after this booking
			l.cancel(ctx, tag, keys, d)
			return true, nil
		}
		left := time.Until(until)
		if left <= 0 {
			return false, nil
		}
		if err := sleepWake(ctx, p.Key, left, wake); err != nil {
			l.cancel(context.WithoutCancel(ctx), tag, keys, d)
			return false, err
		}
	}
}

// cancel gives back the booking of d and its probe role (cancelScript),
// on the key of tag. If Redis fails, the booking stays: stricter, never
// looser.
func (l *Limiter) cancel(ctx context.Context, tag string, keys []string, d decision) {
	args := make([]any, 0, 6+4*len(l.parts))
	probe := 0
	if d.probe {
		probe = 1
	}
	args = append(args, d.at, probe, d.lease, l.channel, tag, len(l.parts))
	for i := range l.parts {
		args = append(args, l.cancelKX[3*i:3*i+3]...)
		args = append(args, member(d.members, i))
	}
	_, _ = l.run(ctx, cancelScript, keys, args...)
}

// run runs script s within Options.Timeout once the link is up, as a
// decision does: it waits for the link at most Timeout. It returns the
// script's reply.
func (l *Limiter) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	if _, err := l.link.ready(ctx); err != nil {
		return nil, err
	}
	bctx, stop := l.dl.bound(ctx)
	defer stop()
	l.link.enter()
	v, err := s.Run(bctx, l.rdb, keys, args...).Result()
	l.link.exit(ctx, err)
	return v, err
}

// failed answers a Wait whose decision failed with err, under the failure
// policy.
func (l *Limiter) failed(ctx context.Context, p throttle.Permit, maxWait time.Duration, start time.Time, err error) (throttle.Permit, error) {
	if ctx.Err() != nil {
		return p, &pace.WaitError{Key: p.Key, Err: ctx.Err()}
	}
	if !errors.Is(err, ErrUnavailable) {
		err = fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if l.fallback != nil {
		if l.onFall != nil {
			l.onFall(p.Key, err)
		}
		held, herr := l.holdOff(ctx, p.Key, maxWait, start)
		p.Held += held
		if herr != nil {
			return p, herr
		}
		l.keepStrict(time.Now())
		rest := maxWait
		if maxWait > 0 {
			rest = max(maxWait-time.Since(start), 1)
		}
		fp, ferr := l.fallback.Wait(ctx, p.Key, rest)
		if ferr == nil {
			l.keepStrict(time.Now()) // its slot, which may be long after the decision
		}
		fp.Gen |= fallbackBit
		fp.Held += p.Held
		return fp, ferr
	}
	return p, &pace.WaitError{Key: p.Key, Err: err}
}

// strictAt reports whether decisions at now keep to the Fallback's pace
// too (see keepStrict).
func (l *Limiter) strictAt(now time.Time) bool {
	return l.fallback != nil && now.UnixNano() < l.strictUntil.Load()
}

// keepStrict makes decisions on Redis keep to the Fallback's pace for
// strictFor after at, when the Fallback decides, admits or is told of a
// departure: a Redis back from an outage knows nothing of those. It never
// moves strictUntil back.
func (l *Limiter) keepStrict(at time.Time) {
	until := at.Add(l.strictFor).UnixNano()
	for {
		cur := l.strictUntil.Load()
		if cur >= until || l.strictUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// holdOff starts the Fallback empty: a switch from Redis (the first
// decision of the Fallback since decisions on Redis stopped keeping to
// it, see shadow) holds the Fallback's decisions for its longest span,
// holdFor, as if it had just been spent. It returns how long it held, and
// a refusal when the hold is beyond maxWait (> 0) from start or ctx's
// deadline.
func (l *Limiter) holdOff(ctx context.Context, key string, maxWait time.Duration, start time.Time) (time.Duration, error) {
	now := time.Now()
	if now.UnixNano() >= l.strictUntil.Load() {
		l.holdUntil.Store(now.Add(l.holdFor).UnixNano())
	}
	until := time.Unix(0, l.holdUntil.Load())
	l.keepStrict(until) // from the switch on: decisions on Redis meanwhile share the Fallback's pace
	d := until.Sub(now)
	if d <= 0 {
		return 0, nil
	}
	if maxWait > 0 && now.Add(d).Sub(start) > maxWait {
		return 0, &pace.WaitError{Key: key, Delay: d, Err: pace.ErrWaitTooLong}
	}
	if dl, ok := ctx.Deadline(); ok && !now.Add(d).Before(dl) {
		return 0, &pace.WaitError{Key: key, Delay: d, Err: errDeadline}
	}
	return d, sleepWake(ctx, key, d, nil)
}

// Depart tells the Limiter that the request of p was written at at; see
// [throttle.Limiter]. A request that left later than its slot by more
// than half of Options.Margin has its booking moved in Redis to where it
// left (one more round trip), as package pace's Keyed does, so that the
// limit counts it where the server saw it: a token bucket's or pacer's
// later units move back by the lateness, a window counts the unit where
// it left. Bookings that other requests made in the meantime keep their
// instants, so this holds the server's count when the lateness is known
// before the bookings it matters to are made (for a window, a whole
// period later; for a pacer, only an interval later); a sliding log
// books behind an entry that may not have left one margin later. A
// departure within half the margin costs nothing. Until this process has
// had four answers from the key's server, a departure counts a 20th of
// the Limit's shortest interval (Per/N of its tightest part) later, as
// package pace's widest margin: a server's first answers often come
// late, and show no lateness until a quicker one comes. Settle applies
// the same to an answer that comes late (see Settle). Lateness is
// counted on this machine's clock from the slot as seen when the
// decision was sent, so it is never underestimated. An at in the future
// counts as now. Permits of the Fallback limiter are passed on to it.
// Safe for concurrent use.
func (l *Limiter) Depart(p throttle.Permit, at time.Time) {
	if now := time.Now(); at.After(now) {
		at = now // no request is written later than Depart is told of it
	}
	if t, ok := p.State.(*leaseTicket); ok {
		l.ls.depart(t, at)
		return
	}
	if p.Gen&fallbackBit != 0 {
		if l.fallback != nil {
			p.Gen &^= fallbackBit
			l.fallback.Depart(p, at)
			l.keepStrict(at)
		}
		return
	}
	e, _ := p.State.(*inflight)
	if e == nil || !l.limited {
		return // no part to move
	}
	e.wrote.Store(at.UnixNano())
	late := at.Sub(e.slot)
	if l.warm > l.margin && !l.quick.known(p.Key) {
		late += l.warm - l.margin // decisions count the starting margin already
	}
	l.move(p, e, late)
}

// move moves the booking of p, e, in Redis (departScript) so that it
// counts by after its slot, when that is more than half of
// Options.Margin later than where it counts now: one round trip. Moves
// only ever add (Depart's lateness, then a late answer's), at most once
// for each. If Redis fails, the booking stays where it was.
func (l *Limiter) move(p throttle.Permit, e *inflight, by time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	add := min(micros(by), maxMicros) - e.moved
	if add <= micros(l.margin)/2 {
		return
	}
	args := make([]any, 0, 3+4*len(l.parts))
	args = append(args, e.at, add, len(l.parts))
	for i := range l.parts {
		args = append(args, l.cancelKX[3*i:3*i+3]...)
		args = append(args, member(e.members, i))
	}
	if _, err := l.run(context.Background(), departScript, l.keys(keyTag(p.Key)), args...); err != nil {
		return
	}
	e.at, e.moved = e.at+add, e.moved+add
	for i, m := range e.members {
		if dash := strings.IndexByte(m, '-'); dash >= 0 {
			e.members[i] = strconv.FormatInt(e.at, 10) + m[dash:] // as departScript renames it
		}
	}
}

// answered applies the late-answer rule to the answer at end to a request
// of p, e that Depart saw written, as package pace's Keyed does: an
// answer later than the key's quickest recent ones (in this process) by
// more than Options.Margin says the server got to the request late, and
// may have counted it late; its booking counts that much after it left,
// at most twice the widest margin (quickest.Cap), and the key's later
// slots move back (move: one round trip). A booking Depart moved moves on
// by what the answer adds.
func (l *Limiter) answered(p throttle.Permit, e *inflight, end time.Time) {
	wrote := e.wrote.Load()
	if wrote == 0 {
		return
	}
	if end.IsZero() {
		end = time.Now()
	}
	late := time.Duration(min(l.quick.late(p.Key, end.UnixNano()-wrote), quickest.Cap(l.top)*int64(time.Microsecond)))
	if late <= l.margin {
		return
	}
	l.move(p, e, time.Unix(0, wrote).Add(late).Sub(e.slot))
}

// Settle records how the request of p ended; see [throttle.Limiter]. A
// throttle (o.Pause > 0) pauses the key in Redis for o.Pause from Redis's
// clock, for every process, and wakes their waiters; an answer ends the
// probe's role, closing the key; a probe that ends without one hands its
// role on. What the answer teaches is shared the same way, as package
// pace's Keyed learns it. o.Cut lowers the key's rate (pace's adaptive
// rate) once per strike, unless the throttle widened the key's margin
// instead (see docs/fleet.md, "What answers teach"). o.Quota,
// the server's quota, paces the key: its
// Remaining requests are spread over its Reset; none remaining pauses the
// key until the Reset, without a probe. An answer that contradicts the
// quota already known for the same window is ignored. A quota no faster
// than the Limit's own spacing teaches nothing, and costs no round trip.
// Each decision applies the slower of the two paces on top of the Limit.
// With Options.Lease, this process's share applies it at once, from the
// script's reply; other processes' shares at their next answer or
// renewal.
//
// An answer to a Tracked request that comes later than the key's
// quickest recent answers in this process, by more than Options.Margin,
// counts its request as leaving that much later (at most the widest
// margin), as package pace's Keyed does: its booking moves back, one
// round trip more, as Depart moves a late departure's.
//
// It is one round trip, skipped for a plain answer (no throttle, no quota
// to learn) to a request that was no probe and was admitted while its key
// had no strikes: then it could only reset strikes that another process
// counted meanwhile, which the next answer to a request admitted with
// strikes resets. A request whose slot passed (Wait returns only then)
// has nothing to give back, so o.Sent changes nothing else. A pause or a
// Reset longer than 24 h counts as 24 h, the longest a key's throttle
// holds in Redis. When Redis fails, a throttle or a quota goes to the
// Fallback limiter, if there is one. Safe for concurrent use.
func (l *Limiter) Settle(p throttle.Permit, o throttle.Outcome) {
	if l.ls != nil && o.Pause > 0 {
		l.ls.pause(keyTag(p.Key), 0)
	}
	if p.Gen&fallbackBit != 0 {
		if l.fallback != nil {
			p.Gen &^= fallbackBit
			l.fallback.Settle(p, o)
		}
		return
	}
	var lease int64
	if e, _ := p.State.(*inflight); e != nil {
		lease = e.lease
		if p.Track && o.Response && o.Pause <= 0 {
			l.answered(p, e, o.At)
		}
	}
	left, reset, bucket := l.learnt(o.Quota)
	if o.Pause <= 0 && reset == 0 && !p.Probe && p.Strikes == 0 {
		return
	}
	probe, resp, cut := 0, 0, 0
	if p.Probe {
		probe = 1
	}
	if o.Response {
		resp = 1
	}
	if o.Cut && l.spacing > 0 {
		cut = 1
	}
	pause := int64(0)
	if o.Pause > 0 {
		pause = min(micros(o.Pause), maxPause)
	}
	tag := keyTag(p.Key)
	base := l.prefix + "{" + tag + "}:"
	keys := []string{base + "p", base + "l"}
	track, quoted := 0, 0
	if p.Track {
		track = 1
	}
	if o.Quota.Reset > 0 {
		quoted = 1
	}
	sent := time.Now()
	v, err := l.run(context.Background(), settleScript, keys, int64(p.Gen), lease, probe, pause, resp, l.channel, tag,
		cut, l.spacing, left, reset, bucket, l.horizon, track, p.Strikes, quoted, micros(l.margin), l.marginRun(), l.top)
	if err != nil && (o.Pause > 0 || reset > 0) && l.fallback != nil {
		l.fallback.Settle(throttle.Permit{Key: p.Key}, o)
	}
	if l.ls != nil && err == nil {
		l.ls.settled(tag, v, sent)
	}
}

// learnt returns what Settle's script learns of q: its remaining count,
// its reset (µs, at most 24 h; 0: nothing to learn) and its bucket's hash
// (see bucketHash). A quota with requests left teaches nothing when the
// Limit holds the key to it already, as in package pace's Keyed: its
// pace, reset/(remaining+1), or the quota's own rate (Limit per Window,
// when stated) is no slower than the Limit's spacing, as when the client
// is configured with the server's published limit. A spent quota whose
// reset is within the Limit's spacing rounded up to a whole second
// teaches nothing either, as in Keyed, when the Limit spaces each request
// (a pacer without slack or a token bucket of burst 1, decided in Redis,
// not leased: shares space only their own): it names the Limit's next
// unit, which its decisions wait for already. (Keyed learns it when
// the key already has a pace; here that pace holds until its window
// ends: stricter, never looser, and a round trip less.)
func (l *Limiter) learnt(q throttle.Quota) (left, reset, bucket int64) {
	if q.Reset <= 0 {
		return 0, 0, 0
	}
	left, reset = min(int64(max(q.Remaining, 0)), maxMicros), min(micros(q.Reset), maxPause)
	if l.spacing <= 0 {
		return left, reset, bucketHash(q.Bucket)
	}
	ownRate := q.Limit > 0 && q.Window > 0 && micros(q.Window)/int64(q.Limit) <= l.spacing
	switch {
	case left > 0 && (reset/(left+1) <= l.spacing || ownRate):
		return 0, 0, 0
	case left == 0 && ownRate && l.spaced && reset <= intmath.CeilDiv(l.spacing, 1_000_000)*1_000_000:
		return 0, 0, 0 // the next unit of a limit refilling faster than whole seconds say
	}
	return left, reset, bucketHash(q.Bucket)
}

// bucketHash returns a number (below 2^50, exact in Lua) that names the
// server's bucket b: 0 for none, FNV-1a of b otherwise. Answers of two
// buckets are told apart, short of a collision of 50 bits.
func bucketHash(b string) int64 {
	if b == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(b))
	return max(int64(h.Sum64()&(maxMicros-1)), 1)
}

// spacesEach reports whether l, one part, admits no two requests closer
// than its interval: a token bucket of burst 1 or a pacer without slack.
func spacesEach(l pace.Limit) bool {
	ps := l.Parts()
	if len(ps) != 1 {
		return false
	}
	alg, _, burst, lo := ps[0].Params()
	return alg == throttle.TokenBucket && burst == 1 || alg == throttle.LeakyBucket && lo.Slack == 0
}

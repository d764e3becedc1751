// Package redislimit holds pace limits in Redis, so that every process
// sharing a Redis shares each key's limit and its pause: six processes
// each allowed 100/min no longer hand a key 600/min, and a 429 seen by one
// pauses the key in all of them. [New] returns a [*Limiter], a
// throttle.Limiter (package github.com/pacehttp/pace/throttle): set it as
// pace.Transport's Limiter, or use it directly.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
//	lim, err := redislimit.New(rdb, pace.TokenBucket(pace.PerSecond(50), 50), redislimit.Options{})
//	if err != nil { ... }
//	defer lim.Close()
//	client := &http.Client{Transport: &pace.Transport{Limiter: lim}}
//
// It talks to Redis through go-redis's redis.UniversalClient: a single
// node, Sentinel, or Redis Cluster.
//
// # One script per decision
//
// Each decision is one Lua script (redis.NewScript: EVALSHA, loaded on
// NOSCRIPT), so one round trip: it reads Redis's own clock (TIME, so that
// clock skew between machines cannot loosen a limit), the key's pause and
// probe, and the state of every part of the limit (token bucket and leaky
// bucket as GCRA, fixed window, sliding log as a sorted set, or several of
// them at once, pace.All), and books the earliest instant all parts allow,
// or refuses and books nothing. Every key it writes gets a TTL in the same
// script (SET with PX, or PEXPIRE), so that nothing outlives its use. The
// script is built when the Limiter is made, from one fragment of Lua per
// algorithm, for the kinds of the Limit's parts (at most 32), so that a
// decision on one token bucket runs no dispatch: its commands are TIME,
// one MGET of the pause, the bucket and the learned pace, and one SET, as
// a plain GCRA limiter's are. A request that leaves later than its slot by more than
// Options.Margin has its booking moved to where it left (Limiter.Depart,
// a second round trip), so that the limit counts it where the server saw
// it. The scripts rely on Redis 5's default of replicating a
// script's effects, not the script.
//
// # Keys in Redis
//
// Any key works, of any bytes and length. A key's state lives in
// prefix + "{" + tag + "}:p" (its pause), prefix + "{" + tag + "}:N"
// (part N) and prefix + "{" + tag + "}:l" (its learned pace). The hash tag puts them in one Cluster slot, so no script
// meets CROSSSLOT. A plain key is its own tag: 1 to 128 bytes of visible
// ASCII, without '{' or '}', not starting with '#'. Any other key (empty,
// longer, with braces, spaces, control bytes or non-ASCII) is tagged "#"
// and 32 base64url characters of its SHA-256 (192 bits). No tag is longer
// than 128 bytes. No two keys share one, short of a SHA-256 collision.
// The pause messages on the channel carry the tag, not the key. A plain
// key shows in Redis as it is.
//
// # The shared pause
//
// Settle with a throttle (a 429, or a 503 with a delay, as pace.Transport
// reports it) writes the key's pause to Redis and publishes it on the
// channel prefix + "throttle", so that requests waiting in any process
// wake, give back their booked slots and wait. When the pause ends, the
// first request to ask, in any process, becomes the probe (a lease in the
// key's pause record, Options.ProbeLease long: 10 s by default, whatever
// the pause, where package pace's Keyed holds it until the probe ends);
// every other waits until the probe's answer is
// published, or asks again every 100 ms. After the probe a token bucket
// or pacer resumes at its steady rate, one request per interval, without
// the burst it saved up during the pause (the server's window has just
// been full), as package pace's Keyed does; windows keep their counts. A
// pause is at most 24 h.
//
// # What answers teach
//
// Settle shares what pace.Transport learns from an answer, as package
// pace's Keyed learns it in one process. The server's quota headers
// (throttle.Outcome.Quota) pace the key: its remaining requests are
// spread over the time to its reset, and a spent quota pauses the key
// until the reset, without a probe. A throttle that names no delay on a
// key the Limit paces (Outcome.Cut) lowers the key's rate, pace's
// adaptive rate, which then grows back (CUBIC). Both live in the key's
// learned pace, one string beside its pause. Each decision reads it in
// its one MGET, and books no earlier than the slower of the two paces
// allows, on top of the Limit. The zero Limit configures no limit: the
// Limiter then holds each key's pause and quota pace alone.
//
// The learned record holds the key's departure margin too, as package
// pace's Keyed learns it. A throttle of a request held to its slot
// (Permit.Track, no Strikes, no quota stated, the key's current
// generation) is the server's clock disagreeing with ours: it doubles
// the margin, from 1.5 ms at least, up to each part's widest (a 20th of
// its period), and cuts no rate. A repeated throttle, or one at the
// widest margin, cuts as before. The margin halves after each 128
// intervals of the Limit without such a throttle, down to
// Options.Margin. Keyed counts 128 answers instead; counting time costs
// no round trip, so a plain answer still sends nothing to Redis. Each
// decision adds the margin to the parts' spacing, in the same script.
//
// # State in Redis
//
// Every decision checks the state it reads, in a few comparisons, against
// what a decision could have written: a slot is booked at most the
// limit's horizon ahead (pace.DefaultMaxWait, 5 min; or the longest span
// of one part, capacity × interval or a window at the widest margin,
// when that is longer; or a
// leaky bucket's queue bound when that is shorter; Wait refuses a later
// slot with pace.ErrWaitTooLong), so a part's key holds no instant beyond
// now + horizon + its span. State beyond that (left by a node whose clock
// was ahead, after a failover, or planted) is clamped to the bound:
// strict, never freeing the key before it, and never holding it longer
// than the limit itself can; a value that is no number, or a count out of
// range, counts as the whole limit used at now. The repaired key is
// written back in the same script with a TTL of at most its horizon plus
// its span, so a key recovers by itself; no TTL the scripts set exceeds the part's horizon
// plus its span (the throttle's: twice 24 h; the learned pace's: 24 h).
// The learned pace is checked the same way: an interval or window beyond
// 24 h, a booking beyond the horizon, a margin beyond the widest, or a
// cut or widening after now is clamped, and what is no number reads as
// none. A key of another type under
// the Prefix (a hash, a list: someone else's data) is left alone and Wait
// fails with [ErrBadState]. The type check costs a command only when a
// part's key looks absent (a key's first decision, or its first after it
// idled): a busy key's decision is TIME, one MGET and one SET. So on a busy
// key, whose parts' keys exist, a pause key of another type written while
// it is busy goes unnoticed: decisions read it as no pause, and Settle
// records no throttle in it (its script fails on the type and writes
// nothing), until the parts' keys expire and the next decision reports
// ErrBadState. Keys under the Prefix are the Limiter's: keep other data
// elsewhere.
//
// # Leased shares
//
// With Options.Lease, each process holds a share of each key's limit
// and decides on it in memory, with no round trip. The share is a
// pace.Shaper at the share's limit: each part's Rate.N (and burst or
// slack) times share/N, its period the starting margin longer. One
// script per key per Lease renews it (lua/lease.lua, in the background). It
// reads Redis's clock, the key's shares and its pause. Shares follow
// demand, as Doorman's proportional share does: each process asks for
// what it used in the second half of its lease and a little more, or
// for all it can get when Waits found its share spent. A share given
// back halves at most each lease. A newcomer gets a share once others
// renew and what they gave back is free. A request written later than
// its admission, by more than Options.Margin, counts once more in the
// share, where it left (Depart).
//
// The shares never add up to more than the limit. A share grows only
// into what no other process claims. A claim lasts to the lease's end
// plus the longest span of a part (a window, or capacity × interval):
// what a share admitted counts that long in the server's windows. So a
// share given back, or held by a process that died, frees that long
// after its lease. A process counts its lease from before it sent the
// renewal, so clock skew cannot stretch it.
//
// When renewals fail, a process spends its share until its lease ends.
// Then the failure policy decides, as for a decision: fail closed, or
// the Fallback. A Redis that restarted without persistence forgot the
// claims. While its uptime is shorter than a claim's life, it renews
// only what each process says it still holds, and grants nothing new.
// The pause stays shared: a key known to be paused (a message on the
// channel, Settle's own throttle, or the renewal's reply) decides each
// Wait in Redis, one round trip, until a Wait finds no pause. Quota
// paces and adaptive cuts are not applied in this mode: the shares hold
// the Limit. One Limiter holds shares of at most 4096 keys at once; Wait
// refuses another key with pace.ErrQueueFull. A key no Wait used for a
// lease is dropped when its lease ends. Close gives this process's
// shares back: they free a window later, not a window after the lease.
//
// # When Redis is slow or gone
//
// A decision that Redis does not answer within Options.Timeout (50 ms by
// default) goes to the failure policy: fail closed (the default; Wait
// returns a *pace.WaitError wrapping [ErrUnavailable], which package batch
// tries again after batch.Options.Backoff each time, never failing the
// item), or fail open to a local pace.Keyed holding Options.Fallback, this
// process's share of the limit; Options.OnFallback is called for each
// decision the Fallback makes, to count or log them. While a
// *redis.Client's Redis does not answer, decisions make no connection: a
// prober tries every 10 ms, off their path, so decisions are back on
// Redis as soon as it answers again. Close returns within about 9 ×
// Options.Timeout whatever Redis does.
//
// go-redis retries a command whose connection broke (EOF). If Redis ran
// the script and the reply was lost, the retry finds the first reply, kept
// for a few seconds under the decision's id, and books nothing more. That
// costs Redis one SET per booking; a *redis.Client with MaxRetries -1
// never retries, and its decisions keep no reply.
// A Redis that stalls (SIGSTOP, a long fork) and then resumes
// runs the scripts still queued on its connections, although their
// requests were answered at their timeout, with ErrUnavailable or by the
// Fallback: each books a slot that no request uses (stricter, never
// looser).
// A restarted Redis without persistence has forgotten every booking: the
// limit starts afresh, as after its keys expire. The Fallback makes up
// for it, and starts empty (see Options.Fallback).
//
// # A Cluster master down
//
// On Redis Cluster a key's decision needs the master of its slot. When a
// master dies and no replica takes over, its keys go to the failure
// policy. With cluster-require-full-coverage yes (Redis's default), the
// other masters refuse every key too (CLUSTERDOWN) once they mark it
// failed, about cluster-node-timeout later, until it is back: then every
// decision goes to the failure policy. With it set to no, the other
// masters' keys keep deciding on Redis. Give each master a replica, or
// set it to no. docs/redislimit-cluster.md has the timings.
package redislimit

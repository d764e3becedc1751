package redislimit

import (
	"fmt"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/intmath"
	"github.com/pacehttp/pace/throttle"
)

// Script kinds of a part (see decideScript).
const (
	kindGCRA    = 1 // token bucket, leaky bucket
	kindFixed   = 2 // fixed window
	kindSliding = 3 // sliding log
)

// maxMicros bounds every duration and instant the scripts compute with:
// 2^50 µs, about 35.7 years. Redis's clock (about 2^50.6 µs since 1970
// today) plus two such spans stays below 2^53, where Lua's doubles, and
// the scores of Redis's sorted sets, are exact integers.
const maxMicros = 1 << 50

// maxSlidingN is the largest count of a sliding-log part: the log holds one
// sorted-set entry (about 70 bytes) per request in the window, so a key
// holds at most about 70 MiB.
const maxSlidingN = 1 << 20

// staleMicros is how long after a pause ends its throttle is kept at
// least (µs): pace's DefaultMaxRetryAfter, the longest Retry-After it
// honours, as package pace keeps a key's throttle.
const staleMicros = int64(pace.DefaultMaxRetryAfter / time.Microsecond)

// maxPause is the longest pause a Limiter records (µs), and the longest
// probe lease it accepts: 24 hours. It bounds what the scripts accept in a
// key's throttle (see luaThrottle), so that no throttle, however it was
// written, holds a key longer.
const maxPause = int64(24 * time.Hour / time.Microsecond)

// The adaptive rate's constants, package pace's (CUBIC, as the AWS SDKs'
// adaptive retry mode applies it): a throttle that names no delay drops
// the key's rate to cubicBeta times its rate, which then grows as
// cubicC·(t−K)³ + wMax, t seconds after the cut, never below
// adaptiveFloor requests a second.
const (
	cubicBeta     = 0.7
	cubicC        = 0.4
	adaptiveFloor = 0.5
)

// quotaTolerance is how far a quota's reset may move between two answers
// (µs) and still name the same window, as in package pace: reset headers
// have a resolution of one second.
const quotaTolerance = int64(time.Second / time.Microsecond)

// maxRate bounds the rates the learned record holds (µ-requests a second):
// 10^6 a second, one a microsecond, the fastest limit New accepts.
const maxRate = 1e12

// marginRun is how many intervals of the Limit without a throttle halve a
// widened margin, as that many clean answers do in package pace's Keyed.
const marginRun = 128

// minWiden is the least margin a throttle widens the key's margin to
// (µs): package pace's starting margin, 1.5 ms, for a starting margin of
// none or a small one.
const minWiden = 1500

// part is one part of the limit as the scripts take it. Its spacing
// counts the key's departure margin (see marginText), at most top: a
// GCRA part's interval is ⌈(per + margin)/n⌉ and its tolerance k times
// that; a sliding log's window is per + margin; a fixed window books
// nothing in its last margin.
type part struct {
	kind int
	per  int64 // µs: a token bucket's or window's period, a pacer's interval
	n    int64 // a GCRA part's divisor (a token bucket's N, a pacer's 1); a window's count
	k    int64 // a GCRA part's capacity
	top  int64 // the widest margin (µs): a 20th of per
	// x and y are the interval (or window) and tolerance at the starting
	// margin, and at the widest (xw, yw); z a GCRA part's queue bound
	// (at the widest margin; -1: none).
	x, xw, yw, z int64
	// c is the part's span (µs): the longest its key can matter after
	// Redis's clock, which bounds the state the scripts accept and every
	// TTL they give the part's key (see horizon).
	c int64
}

// at returns the part's interval (or window) with margin m (µs).
func (p part) at(m int64) int64 {
	m = min(m, p.top)
	if p.kind == kindGCRA {
		return intmath.CeilDiv(p.per+m, p.n)
	}
	return p.per + m
}

// horizon returns how far ahead of Redis's clock a decision on parts
// books at most (µs): pace.DefaultMaxWait (the longest a pace.Transport
// waits by default), or the longest span of one part when that is longer
// (a limit of one a day makes its second request wait a day), or a leaky
// bucket's queue bound when that is shorter. It makes the state the
// scripts may find bounded: a part's key can hold no instant beyond now +
// horizon + its own span (a GCRA part's TAT, capacity × interval past the
// latest booking; a window's, its period), so anything beyond is not what
// a decision wrote, and is clamped (see decideScript).
func horizon(parts []part) int64 {
	h := int64(pace.DefaultMaxWait / time.Microsecond)
	for _, p := range parts {
		h = max(h, p.span())
	}
	for _, p := range parts {
		if p.kind == kindGCRA && p.z >= 0 {
			h = min(h, p.z)
		}
	}
	return h
}

// span is how long the part's key matters after its latest booking (µs):
// a GCRA part's capacity × interval, a window's period, at the widest
// margin.
func (p part) span() int64 {
	if p.kind == kindGCRA {
		return p.yw
	}
	return p.xw
}

// micros returns d in whole microseconds, rounded up: a limit is never
// loosened by the conversion.
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++
	}
	return us
}

// convert returns the parts of l for the scripts, with the starting
// margin (see [Options].Margin), or a *pace.ConfigError naming the setting whose
// numbers do not fit the scripts' arithmetic, or an algorithm the scripts
// do not hold. The zero Limit has no parts.
func convert(l pace.Limit, margin time.Duration) ([]part, error) {
	if err := l.Err(); err != nil {
		return nil, err
	}
	ps := l.Parts()
	if len(ps) > maxParts {
		return nil, &pace.ConfigError{Field: "Limit", Value: l.String(), Reason: fmt.Sprintf("has %d parts; a Limit held in Redis has at most %d", len(ps), maxParts)}
	}
	out := make([]part, 0, len(ps))
	for _, p := range ps {
		q, err := convertPart(p, margin)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	h := horizon(out)
	for i := range out {
		out[i].c = h + out[i].span()
	}
	return out, nil
}

func convertPart(l pace.Limit, margin time.Duration) (part, error) {
	m := micros(margin)
	alg, r, burst, leaky := l.Params()
	per := micros(r.Per)
	if per > maxMicros {
		return part{}, &pace.ConfigError{Field: "Rate.Per", Value: r.Per, Reason: fmt.Sprintf("exceeds 2^50 µs (%v), the range Redis's scripts compute exactly", time.Duration(maxMicros)*time.Microsecond)}
	}
	window := alg == throttle.FixedWindow || alg == throttle.SlidingLog
	switch {
	case window && r.Per < time.Microsecond:
		return part{}, &pace.ConfigError{Field: "Rate.Per", Value: r.Per, Reason: "a window shorter than one microsecond, the resolution of Redis's clock and of the scripts"}
	case !window && r.Interval() < time.Microsecond:
		return part{}, &pace.ConfigError{Field: "Rate", Value: r.String(), Reason: "faster than one per microsecond, the resolution of Redis's clock"}
	}
	switch alg {
	case throttle.TokenBucket, throttle.LeakyBucket:
		return gcraPart(alg, r, burst, leaky, m)
	case throttle.FixedWindow:
		if int64(r.N) > maxMicros {
			return part{}, &pace.ConfigError{Field: "Rate.N", Value: r.N, Reason: "exceeds 2^50, the range Redis's scripts count exactly"}
		}
		return part{kind: kindFixed, per: per, n: int64(r.N), top: int64(r.Per / 20 / time.Microsecond), x: per, xw: per}, nil
	case throttle.SlidingLog:
		if r.N > maxSlidingN {
			return part{}, &pace.ConfigError{Field: "Rate.N", Value: r.N, Reason: fmt.Sprintf("exceeds %d, the most entries a sliding log keeps in Redis per key", maxSlidingN)}
		}
		q := part{kind: kindSliding, per: per, n: int64(r.N), top: int64(r.Per / 20 / time.Microsecond)}
		q.x, q.xw = q.at(m), q.at(q.top)
		if q.xw > maxMicros {
			return part{}, &pace.ConfigError{Field: "Rate.Per", Value: r.Per, Reason: "exceeds 2^50 µs, the range Redis's scripts compute exactly"}
		}
		return q, nil
	}
	return part{}, &pace.ConfigError{Field: "Limit", Value: alg.String(), Reason: "not held in Redis: use a token bucket, leaky bucket, fixed window or sliding log"}
}

// gcraPart converts a token bucket or leaky bucket (alg) of rate r,
// burst and leaky's options, at the starting margin m (µs); see
// convertPart.
func gcraPart(alg throttle.Algorithm, r pace.Rate, burst int, leaky pace.LeakyOptions, m int64) (part, error) {
	// A token bucket's period stretches by the margin; a pacer's
	// interval does (a pacer's server spaces requests one by one).
	q := part{kind: kindGCRA, per: micros(r.Per), n: int64(r.N), k: int64(burst), top: int64(r.Per / 20 / time.Microsecond), z: -1}
	if alg == throttle.LeakyBucket {
		iv := r.Interval()
		q.per, q.n, q.k, q.top = micros(iv), 1, int64(leaky.Slack)+1, int64(iv/20/time.Microsecond)
	}
	q.x, q.xw = q.at(m), q.at(q.top)
	if q.xw > maxMicros || q.k > maxMicros/q.xw {
		field := "Burst"
		if alg == throttle.LeakyBucket {
			field = "Slack"
		}
		return part{}, &pace.ConfigError{Field: field, Value: q.k, Reason: "capacity × interval exceeds 2^50 µs, the range Redis's scripts compute exactly"}
	}
	q.yw = q.k * q.xw
	if alg == throttle.LeakyBucket {
		// The queue bound as package pace sets it: Queue intervals (at
		// the widest margin), or MaxDelay when that is shorter; with
		// neither, none (-1): the caller's maxWait and deadline bound
		// the wait. A MaxDelay beyond 2^50 µs (35 years) bounds nothing.
		if leaky.Queue > 0 {
			if int64(leaky.Queue) > maxMicros/q.xw {
				return part{}, &pace.ConfigError{Field: "Queue", Value: leaky.Queue, Reason: "the queue's wait exceeds 2^50 µs, the range Redis's scripts compute exactly"}
			}
			q.z = int64(leaky.Queue) * q.xw
		}
		if d := micros(leaky.MaxDelay); d > 0 && d <= maxMicros && (q.z < 0 || d < q.z) {
			q.z = d
		}
	}
	return q, nil
}

// limitInterval returns the spacing of l's slowest part (µs, rounded up;
// 0 for the zero Limit), as package pace's algorithms state it: the
// ceiling of the key's adaptive rate, and the spacing a server's quota
// must be slower than to pace a limited key. l is valid (convert took it).
func limitInterval(l pace.Limit) int64 {
	var i int64
	for _, p := range l.Parts() {
		_, r, _, _ := p.Params()
		i = max(i, micros(r.Interval()))
	}
	return i
}

package pace

import (
	"math"
	"time"
)

// keyThrottle is the throttle engine of one key: the state machine that the
// Transport, [Keyed] and package batch all use. It works on explicit time
// (nanoseconds since the owner's epoch). It knows nothing of HTTP. Its
// owner tells it of throttles and answers, and asks it whether a request
// may leave.
//
// A throttle pauses the key until an instant. While it is paused nothing of
// the key leaves. When the pause ends the key is half-open, as a circuit
// breaker after its open state. The first request to ask is the probe, and
// every other request holds until the probe has an answer. An answer that
// is not a throttle closes the key; a throttle pauses it again. A probe
// that ends without an answer (not sent, its context ended) hands the role
// to the next request that asks.
//
// The probe holds its role until it ends: with an answer, or without one
// (released). However slow the server, no second probe leaves while the
// first is in flight. The first answer that is not a throttle closes the
// key. A request waiting behind the probe is bounded by its own maxWait
// and context, not by the probe. Probe roles are numbered (lease), so that
// a request that held an earlier role cannot end the current one. Package
// redislimit bounds its probes with Options.ProbeLease instead: a process
// that dies while probing cannot end its role.
//
// Strikes count consecutive throttles. These are throttles of requests that
// left after the key's latest pause was set (their generation is the
// current one), with no answer other than a throttle in between. A
// throttle of a request that left before the latest pause was set is the
// same news again. It may lengthen the pause but is no new strike. Once the
// key has closed again it is ignored. Probes counts the probe answers that
// were throttles. So requests waiting behind a probe can count its attempt
// as theirs (see [Transport]).
//
// The zero keyThrottle is a key that was never throttled. Methods never block
// and must be called with the owner's lock held.
type keyThrottle struct {
	until    int64  // end of the pause; 0: never paused
	length   int64  // length of the latest pause
	gen      uint32 // pauses set so far; a request that left under an older one left before the latest pause
	strikes  uint32 // consecutive throttles, see above
	probes   uint32 // throttled probe answers so far
	halfOpen bool   // a probe's answer is needed before others may leave
	probing  bool   // the probe is in flight
	lease    uint32 // the number of the latest probe role granted; 0 names none

	pace   quotaPace    // the spacing the server's quota headers ask for
	adapt  adaptiveRate // the rate the key slowed to after throttles without a hint
	margin margin       // the departure margin the key learnt (margin.go)
}

// Constants of the adaptive rate, CUBIC (Ha, Rhee, Xu: "CUBIC: a new
// TCP-friendly high-speed TCP variant", 2008). The AWS SDKs' adaptive retry
// mode applies it to a client's request rate (AWS SDKs and Tools Reference
// Guide, "Retry behavior", adaptive mode; aws-sdk-go-v2 aws/retry's
// adaptive rate limit). On a throttle the rate drops to β times the rate it
// had. It then grows again as C·(t−K)³ + Wmax, t seconds after the
// throttle. Wmax is the rate before it, and K = ∛(Wmax·(1−β)/C). So it is
// back at Wmax after K seconds, slowly near it, faster beyond.
const (
	cubicBeta = 0.7
	cubicC    = 0.4
	// adaptiveFloor is the slowest the adaptive rate goes, in requests a
	// second: the AWS SDKs' minimum fill rate, 0.5 a second.
	adaptiveFloor = 0.5
)

// adaptiveRate is a key's rate after throttles that named no delay and no
// quota: pace's adaptive rate, between adaptiveFloor and the key's
// configured limit (its ceiling), per key. It ends once CUBIC has brought
// it back to the ceiling.
type adaptiveRate struct {
	since int64   // instant of the latest cut; 0: not adapting
	ceil  float64 // the configured rate, requests a second
	wMax  float64 // the rate before the latest cut
	k     float64 // seconds from the cut until the rate is wMax again
}

// rate returns the adaptive rate at now, in requests a second, and false
// when the key is not adapting (any more: at the ceiling it stops).
func (a *adaptiveRate) rate(now int64) (float64, bool) {
	if a.since == 0 {
		return 0, false
	}
	t := float64(now-a.since)/1e9 - a.k
	r := cubicC*t*t*t + a.wMax
	if r >= a.ceil {
		a.since = 0
		return 0, false
	}
	return max(r, min(adaptiveFloor, a.ceil)), true
}

// cut lowers the rate at now, after a throttle without a hint. The key's
// configured limit spaces requests interval nanoseconds apart. The rate
// drops to β times its rate now (the configured one if it was not
// adapting).
func (a *adaptiveRate) cut(now, interval int64) {
	ceil := 1e9 / float64(max(interval, 1))
	cur, ok := a.rate(now)
	if !ok {
		cur = ceil
	}
	a.since, a.ceil, a.wMax = max(now, 1), ceil, cur
	a.k = math.Cbrt(cur * (1 - cubicBeta) / cubicC)
}

// interval returns the spacing of the adaptive rate at now, 0 when the key
// is not adapting.
func (a *adaptiveRate) interval(now int64) int64 {
	r, ok := a.rate(now)
	if !ok {
		return 0
	}
	return int64(1e9 / r)
}

// quotaPace is the pace a key keeps after the server's quota headers said
// how many requests remain before the quota resets (see keyThrottle.learn).
// It spreads the remainder over the time to the reset, so that the key
// never runs dry before it. It is the throttle engine's, so that the
// Transport, [Keyed] and every other owner apply it the same way. A key's
// configured limit applies as well, so a pace never lets requests go
// faster than the limit.
type quotaPace struct {
	interval int64  // spacing between requests; 0: no pace
	until    int64  // end of the quota's window: past it the pace is over
	last     int64  // latest instant a request left (was booked) under the pace
	left     int64  // the remaining count the pace was learnt from
	bucket   string // the server's name for the quota (Discord bucket, IETF pk)
}

// quotaTolerance is how far a quota's reset may move, between two answers,
// and still name the same window: reset headers have a resolution of one
// second.
const quotaTolerance = int64(time.Second)

// paceFrom returns the earliest instant at or after now at which the pace
// lets a request of the key leave. It is now when the key has no pace, or
// its window has ended. The quota is whole again then, and the next answer
// tells the new pace.
func (t *keyThrottle) paceFrom(now int64) int64 {
	i, _ := t.paceAt(now)
	if i == 0 {
		return now
	}
	return max(now, satAdd(t.pace.last, i))
}

// paceAt returns the spacing the key keeps at now beyond its limit. It is
// the slower of its quota pace (while its window lasts) and its adaptive
// rate. It also reports whether that is the adaptive rate. It is 0 when
// neither applies.
func (t *keyThrottle) paceAt(now int64) (interval int64, adaptive bool) {
	if p := &t.pace; p.interval > 0 && p.until > now {
		interval = p.interval
	}
	if a := t.adapt.interval(now); a > interval {
		return a, true
	}
	return interval, false
}

// paced records that a request of the key was booked to leave at at.
func (t *keyThrottle) paced(at int64) { t.pace.last = max(t.pace.last, at) }

// learn records, at now, the server's word that remaining requests may go
// in the next reset nanoseconds (reset > 0) of the quota named bucket, of
// limit requests per window nanoseconds (0: not stated). It
// returns the pause the key must take when the quota is spent (remaining
// 0): until the reset. The requests waiting for it then leave at the
// quota's steady rate (Window/Limit, when the server states both) for one
// window, not all at once: the quota need not be whole at its reset
// (draft-ietf-httpapi-ratelimit-headers §4.1.2 says a client must not
// assume it is), and the next answer tells its new pace. Otherwise the
// key's requests are spaced over the time to the reset, remaining+1
// apart, so that the last of them leaves before the reset, never at it;
// the pause is then 0.
//
// Resets within quotaTolerance of the known one name the same window, and
// the earliest is kept. A server that rounds whole seconds up names its
// reset up to a second late. express-rate-limit (source/headers.ts) and
// pace's middleware round up.
//
// An answer is old news, and ignored, when it contradicts the pace learnt
// for the same quota (same bucket) in a window that has not ended. One
// kind is a reset that jumps backwards (more than quotaTolerance before the
// known one). Another is a remaining count that grows within the same
// window (an answer to an earlier request, overtaken). An answer for
// another bucket replaces the pace only when it is slower, since both
// quotas hold.
func (t *keyThrottle) learn(now, remaining, reset int64, bucket string, limit, window int64) (pause int64) {
	p := &t.pace
	until := satAdd(now, reset)
	if p.interval > 0 && p.until > now {
		switch {
		case bucket != p.bucket:
			if remaining > 0 && max(reset/(remaining+1), 1) <= p.interval {
				return 0
			}
		case until < p.until-quotaTolerance:
			return 0 // the reset jumped backwards
		case until <= p.until+quotaTolerance:
			if remaining > p.left {
				return 0 // the same window, more left: an overtaken answer
			}
			until = min(until, p.until)
		}
	}
	if remaining == 0 {
		*p = quotaPace{last: p.last}
		if limit > 0 && window > 0 { // the next window's requests leave at its steady rate
			i := max(window/limit, 1)
			p.interval, p.until, p.left, p.bucket = i, satAdd(until, window), limit, bucket
			p.last = until - i
		}
		return until - now
	}
	// The answered request left before now: counting it at now is slower
	// by its round trip, never faster.
	p.interval, p.until, p.left, p.bucket = max((until-now)/(remaining+1), 1), until, remaining, bucket
	p.last = max(p.last, now)
	return 0
}

// admission is what a request of a key may do now.
type admission uint8

const (
	admitGo        admission = iota // leave (paced by the key's limit)
	admitPaused                     // wait for the pause to end
	admitWaitProbe                  // wait for the probe in flight to be answered
	admitProbe                      // leave as the key's probe; the role is taken
)

// admit tells a request at now what to do; admitProbe gives it the probe
// role (t.lease names it), which its owner must end with answered,
// throttled or released.
func (t *keyThrottle) admit(now int64) admission {
	switch {
	case t.until > now:
		return admitPaused
	case t.probing:
		return admitWaitProbe
	case t.halfOpen:
		t.probing = true
		t.lease++
		if t.lease == 0 { // wrapped: 0 names no role
			t.lease = 1
		}
		return admitProbe
	}
	return admitGo
}

// holds reports whether the request of probe role n (0: none) holds the
// probe role now: it is the latest role and it is not over.
func (t *keyThrottle) holds(n uint32) bool { return n != 0 && t.probing && n == t.lease }

// throttled records, at now, a throttle of a request that left under
// generation gen (probe: the probe role it held, 0 for none). It pauses
// the key for d (> 0; the caller applies the floor and the cap). The pause
// is only ever extended. It reports whether the pause was set or extended.
// If so, bookings held behind the old state must be given back.
func (t *keyThrottle) throttled(now, d int64, gen, probe uint32) (paused bool) {
	if gen == t.gen {
		t.strikes++
	}
	if !t.pause(now, d, gen, probe) {
		return false
	}
	t.length = d
	t.halfOpen = true
	return true
}

// pause pauses the key for d from now without making it half-open, as
// [Keyed.PauseUntil] does; it is forgotten once it ends.
func (t *keyThrottle) pause(now, d int64, gen, probe uint32) bool {
	if t.holds(probe) {
		t.probing = false
		t.probes++
	}
	if gen != t.gen && t.until <= now && !t.halfOpen {
		return false // old news: it left before a pause that has been answered since
	}
	until := satAdd(now, d)
	if until <= t.until {
		return false
	}
	t.until, t.length = until, 0
	t.gen++
	return true
}

// answered records, at now, an answer that was not a throttle to a request
// that left (probe: the probe role it held, 0 for none). It closes the key
// unless the key is paused or another probe holds the role; the strikes are
// over.
func (t *keyThrottle) answered(now int64, probe uint32) {
	if t.holds(probe) {
		t.probing = false
	}
	t.strikes = 0
	if t.until <= now && !t.probing {
		t.halfOpen = false
	}
}

// released gives back the probe role probe of a request that ended
// without an answer, so that the next request to ask probes. It does
// nothing when the role has passed on since.
func (t *keyThrottle) released(probe uint32) {
	if t.holds(probe) {
		t.probing = false
	}
}

// forgettable reports whether t may be dropped at now. It may be dropped
// even when half-open (a waiter would have taken the probe). It needs no
// probe in flight, no adapting, its pace's window ended and a margin that
// may be forgotten. A plain pause may be dropped once it has ended. A
// throttle may be dropped once its pause ended staleAfter ago. So an
// answer to a request sent before the pause, arriving late, is still known
// as old news.
func (t *keyThrottle) forgettable(now int64) bool {
	if _, adapting := t.adapt.rate(now); adapting || t.probing || (t.pace.interval > 0 && t.pace.until > now) || !t.margin.forgettable(now) {
		return false
	}
	if t.length == 0 {
		return now >= t.until
	}
	return now >= satAdd(t.until, max(t.length, staleAfter))
}

// staleAfter is how long after its pause ended a throttle is remembered:
// DefaultMaxRetryAfter, the longest a Transport waits between attempts.
const staleAfter = int64(DefaultMaxRetryAfter)

package throttle

import (
	"context"
	"time"
)

// A Limiter decides when a request for a key may leave, and holds the
// key's throttle. That is the pause after a server's 429, or 503 with a
// delay (see pace.Throttled), and the probe that goes first when it ends.
// It is the interface pace.Transport waits on (its Limiter field). The
// in-memory pace.Keyed store implements it. A limiter whose state is
// shared across processes (in Redis, say) can implement it too.
// Implementations must be safe for concurrent use by multiple goroutines.
//
// A request's life through a Limiter:
//
//   - Wait admits it and returns its Permit.
//   - If the Permit's Track is set, Depart is told the instant the request
//     was written to the wire. The Transport learns it from
//     net/http/httptrace.
//   - Settle is told how it ended, exactly once per Permit that Wait
//     returned with a nil error.
type Limiter interface {
	// Wait blocks until one request for key may leave, books it, and
	// returns its Permit.
	//
	// It fails at once, booking nothing, with a *pace.WaitError in these cases:
	//
	//   - the wait would exceed maxWait (zero sets no bound of the caller's).
	//     A limiter may also refuse a wait beyond a documented bound of its
	//     own, as redislimit's horizon, with pace.ErrWaitTooLong too.
	//   - the limit's queue is full (pace.ErrQueueFull).
	//   - the wait would outlast ctx's deadline (pace.ErrWaitExceedsDeadline,
	//     which also matches context.DeadlineExceeded).
	//
	// All of these match pace.ErrRateLimited. The key's probe may be answered
	// with a throttle while the request waits behind it. Wait then returns a
	// *pace.WaitError wrapping pace.ErrThrottled. The Transport counts the
	// probe's attempt as the request's own, and may call Wait again. If ctx
	// ends while waiting, Wait gives the booking back and returns a
	// *pace.WaitError wrapping ctx.Err().
	//
	// A Permit returned with an error is not settled. Its Held says how long
	// the request waited before the error. The Transport counts it against its
	// MaxWait when it calls Wait again after pace.ErrThrottled. A negative
	// maxWait is refused, booking nothing, as pace.Transport refuses a
	// negative MaxWait. The error is a *pace.WaitError wrapping a
	// *pace.ConfigError. It matches pace.ErrInvalidConfig, not
	// pace.ErrRateLimited. maxWait means the same in pace.Keyed's and
	// pace.Shaper's Wait and ReserveAt. The Transport passes what is left
	// of its MaxWait, never zero.
	Wait(ctx context.Context, key string, maxWait time.Duration) (Permit, error)

	// Depart tells the limiter that the request of p was written at at.
	// A request that left later than its slot pushes the key's later
	// slots back, so that spacing holds where the server counts it.
	Depart(p Permit, at time.Time)

	// Settle tells the limiter how the request of p ended.
	Settle(p Permit, o Outcome)
}

// Permit is a [Limiter]'s admission of one request, returned by Wait and
// passed back, unchanged, to Depart and Settle. The zero Permit admits a
// request with nothing booked.
type Permit struct {
	// Key is the key the request was admitted under.
	Key string
	// Probe reports that the request is its key's probe: the key's pause
	// has just ended, and its other requests hold until Settle reports
	// how this one ended. pace.Keyed holds the role that long, however
	// long; package redislimit at most its Options.ProbeLease, since a
	// process may die while probing. Then the next request to ask probes.
	Probe bool
	// Track asks for Depart: the limit binds, so the instant the request
	// actually leaves matters to the requests booked after it.
	Track bool
	// Limited reports that a configured limit paces the key. A throttle
	// that names no delay then lowers the key's rate (Outcome.Cut) and
	// pauses it only briefly.
	Limited bool
	// Strikes is how many consecutive throttles the key had when the request
	// was admitted. Those are throttles of requests that left after the key's
	// latest pause was set, with no other answer in between.
	Strikes int
	// Gen is the limiter's count of the key's pauses when the request was
	// admitted; a throttle reported for an older generation is no new
	// strike. For the limiter's own use (a caller may compare two Gens of
	// one key from one limiter: a larger one was admitted after a later
	// pause).
	Gen uint64
	// Held is how long the request waited for the key's pause and probe,
	// and Delay how long for its slot of the key's limit.
	Held, Delay time.Duration
	// State is the limiter's own record of the request, or nil. For pace.Keyed
	// it is the request's place in its key's queue and the probe lease it
	// holds. For redislimit's Limiter it is its decision's booking. Callers
	// pass it back unchanged and never read it. A limiter keeps a pointer here
	// (which costs no allocation of its own) or nothing.
	State any
}

// Outcome is how the request of a [Permit] ended, for [Limiter].Settle.
type Outcome struct {
	// At is when it ended; the zero Time means now.
	At time.Time
	// Sent reports that the request was handed to the server (the
	// Transport's Base); false means it never left, and its booking is
	// given back if its instant has not come.
	Sent bool
	// Response reports that a response came back. A probe that ends with
	// none (a transport error) hands its role to the next request.
	Response bool
	// Pause, if positive, reports a throttle: the key pauses this long from
	// At (the caller has applied its floor and cap). Zero means the answer
	// was not a throttle (or there was none, when Sent is false).
	Pause time.Duration
	// Cut reports a throttle that named no delay and no quota, of a key whose
	// Permit was Limited. The limiter lowers the key's rate (pace's adaptive
	// rate, CUBIC), once per strike. pace.Keyed first widens the key's
	// departure margin instead, when the Permit was Tracked and had no
	// Strikes: the request left at its limit's slot.
	Cut bool
	// Quota is the server's quota as the answer stated it. The zero Quota
	// states none.
	Quota Quota
}

// Quota is a server's quota as an answer's headers state it: the IETF
// RateLimit fields, or a vendor's X-RateLimit-* family. Remaining
// requests may go within Reset. A limiter spreads them over Reset, and
// none remaining pauses the key until Reset. The zero Quota states none.
type Quota struct {
	// Remaining is how many requests may still go; never negative.
	Remaining int
	// Reset is how long until the quota is whole again. Zero means the
	// answer stated no quota. The caller has capped it.
	Reset time.Duration
	// Limit and Window are the whole quota and its window, when stated;
	// zero when not.
	Limit  int
	Window time.Duration
	// Bucket is the server's name for the quota, when stated (Discord's
	// bucket, the IETF partition key). Answers of two buckets are two
	// quotas; both hold.
	Bucket string
}

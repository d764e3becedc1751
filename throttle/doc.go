// Package throttle is the interface between a pace.Transport and the
// limiter it waits on, for those who implement a limiter. Such a limiter
// may be a store whose limits are shared across processes (package
// github.com/pacehttp/pace/redislimit holds them in Redis). It may be a
// wrapper that counts or logs a pace.Keyed's decisions. It may be a job
// runner that drives a Keyed's pauses itself (package
// github.com/pacehttp/pace/batch). Users of pace.Transport set its Limiter
// field and never handle a [Permit] or an [Outcome]. The split follows
// database/sql and database/sql/driver.
//
// A [Limiter] admits each request under its key (Wait, which returns the
// request's Permit). It hears when the request was written to the wire
// (Depart, when the Permit asks for it). It hears how it ended (Settle,
// with an Outcome). The key's throttle lives in the Limiter too. A
// server's 429 or 503 with a delay, reported to Settle, pauses the key.
// When the pause ends, one request goes first as the key's probe.
//
// pace's in-memory *pace.Keyed implements Limiter. So it can be shared by
// several Transports (its limits and pauses then hold for all of them), or
// wrapped. A wrapper that passes each call on behaves as the Keyed inside.
// What an answer teaches reaches it in the Outcome: the server's quota, the
// adaptive cut, a late answer (see [Limiter]'s example).
//
// A limiter that holds a pace.Limit's state itself reads the limit with
// pace.Limit's Parts and Params methods. [Algorithm] names each part's
// algorithm.
//
// The errors a Limiter returns are pace's: pace.WaitError,
// pace.ErrRateLimited and the errors it wraps, pace.ErrThrottled. The
// Transport tells them apart with errors.Is and errors.As. This package
// imports nothing of pace's, so that pace can import it.
package throttle

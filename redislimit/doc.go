// Package redislimit holds pace limits in Redis. Every process sharing a
// Redis then shares each key's limit and its pause. Six processes each
// allowed 100/min no longer hand a key 600/min. A 429 seen by one pauses
// the key in all of them. [New] returns a [*Limiter], a throttle.Limiter:
// set it as pace.Transport's Limiter, or use it directly.
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
// Each decision is one Lua script, so one round trip. It reads Redis's own
// clock, so clock skew between machines cannot loosen a limit. It books
// the earliest instant every part of the limit allows, or refuses and
// books nothing. Every key it writes gets a TTL in the same script.
//
// Any key works, of any bytes and length. A key's records share one
// Cluster hash tag, so no script meets CROSSSLOT. Settle with a throttle
// writes the key's pause and publishes it, so that waiters in every
// process wake and wait. When the pause ends, one request in the fleet
// goes first as a probe. Quota headers and throttles without a delay
// teach the key a slower pace, as package pace's Keyed learns it.
//
// State that no decision could have written is repaired, strictly. A key
// of another type under the Prefix fails with [ErrBadState]. With
// Options.Lease each process decides in memory on a leased share of each
// key's limit. The shares follow demand, never above the limit in sum.
// Together they keep to the key's learned pace too.
//
// A decision Redis does not answer within Options.Timeout goes to the
// failure policy. It fails closed with [ErrUnavailable] by default, or
// fails open to a local Options.Fallback, which never admits more than
// its own limit in any window. Close returns within about nine times
// Options.Timeout, whatever Redis does.
//
// docs/fleet.md states each rule in full; docs/redislimit-cluster.md
// covers a Cluster with a master down.
package redislimit

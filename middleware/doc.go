// Package middleware is the server side of pace: an [http.Handler] wrapper
// that limits incoming requests per key with the same limits the client
// side paces by (pace.TokenBucket, pace.LeakyBucket, pace.FixedWindow,
// pace.SlidingLog, pace.SlidingCounter and pace.All), and tells clients
// where they stand.
//
//	m, err := middleware.New(middleware.Options{
//		Limit: pace.SlidingLog(pace.PerSecond(10)), // at most 10 in any second, per client
//	})
//	if err != nil {
//		log.Fatal(err) // a *pace.ConfigError naming the bad setting
//	}
//	http.ListenAndServe(":8080", m.Handler(mux))
//
// # What clients see
//
// A request that its key's limit lets through now goes to the wrapped
// handler untouched. A request that would have to wait is refused at once
// with 429 Too Many Requests (RFC 6585 §4) and Retry-After (RFC 9110
// §10.2.3): the delay until the key may send again, in whole seconds
// rounded up, never 0. Both kinds of response carry the RateLimit-Policy
// and RateLimit fields of the IETF httpapi draft
// (draft-ietf-httpapi-ratelimit-headers-11), unless [Options].OmitHeaders:
//
//	RateLimit-Policy: "default";q=10;w=1
//	RateLimit: "default";r=3;t=1
//
// q and w are the limit's quota and window (w in whole seconds, rounded up
// with q scaled to match, so q/w never exceeds the limit's rate); r is the
// number of requests the key may still send at once, and t the seconds,
// rounded up, until its quota is whole again, or, when r is 0, until the next
// request may pass. As long as nobody else sends under the same key, a client
// that sends at most r requests in the next t seconds is not refused. On a
// refusal no t exceeds Retry-After (draft §6). Every figure is read from the
// key's limit state under the lock that admitted or refused the request
// ([pace.Keyed.AdmitAt]); [pace.Quota] documents what they mean for each kind
// of limit. A limit built by pace.All shows one policy per part. The optional
// partition key parameter (pk) is not sent, so keys are never disclosed.
// pace's client side reads these fields back.
//
// # Keys
//
// By default each client address has its own limit: the IP address of the
// connection's peer, with IPv6 addresses reduced to their /64
// ([Options].IPv6Prefix), since one host can use any address of its block.
// Behind reverse proxies, list them in [Options].TrustedProxies so that the
// client address is read from X-Forwarded-For; it is then the right-most
// address that is not a trusted proxy, never the left-most, which the
// client writes itself and could change on every request to escape its
// limit. [Options].KeyHeader keys requests by a header such as X-API-Key
// (falling back to the client address, or refusing with [Options].RequireKey),
// and [Options].Key by any function of the request.
//
// Keys are hashed, not stored, and idle keys are forgotten (a key whose
// limit is back to fresh loses nothing by being forgotten). At most
// [Options].MaxKeys are tracked; past that, a new key makes the store
// forget the key whose limit would be whole again the soonest. A flood of
// made-up keys therefore costs bounded memory and does not lock out a
// legitimate key. It is not slowed down either: every made-up key has a
// limit of its own, so a client that can make up keys (a header it
// writes) is bounded only by a limit on what it cannot make up, such as
// its address (the default key), which KeyHeader replaces. An evicted key
// forgets its history: a flood can hand a partly spent key the units it
// would have earned back within its reset, but a key drained by heavy use
// has the longest reset and is forgotten after the made-up ones.
//
// # Counting
//
// A refused request costs nothing, as with nginx's limit_req: a client that
// keeps sending while refused gets through as soon as its limit frees a
// unit. Counting refused requests too, as HAProxy's sc_http_req_rate does
// (so that a client must pause to get through again), is not supported. The
// middleware never queues requests; a leaky-bucket limit's queue has no
// effect and its slack is the burst.
package middleware

// Package middleware is the server side of pace: an [http.Handler] wrapper
// that limits incoming requests per key. It uses the same limits the client
// side paces by (pace.TokenBucket, pace.SlidingLog, pace.All, ...), and
// tells clients where they stand.
//
//	m, err := middleware.New(middleware.Options{
//		Limit: pace.SlidingLog(pace.PerSecond(10)), // at most 10 in any second, per client
//	})
//	if err != nil {
//		log.Fatal(err) // a *pace.ConfigError naming the bad setting
//	}
//	http.ListenAndServe(":8080", m.Handler(mux))
//
// A request its key's limit lets through now goes to the wrapped handler
// untouched. A request that would have to wait is refused at once with
// 429 Too Many Requests (RFC 6585 §4). Its Retry-After (RFC 9110 §10.2.3)
// is the delay until the key may send again, in whole seconds rounded up,
// never 0. Both kinds of response carry the IETF RateLimit-Policy and
// RateLimit fields (draft-ietf-httpapi-ratelimit-headers-11), unless
// [Options].OmitHeaders. The figures are read under the lock that admitted
// or refused the request. Keys are never disclosed.
//
// By default each client address has its own limit, an IPv6 address
// reduced to its /64 ([Options].IPv6Prefix). Behind reverse proxies, list
// them in [Options].TrustedProxies: the client address is then the
// right-most untrusted one in X-Forwarded-For. [Options].KeyHeader and
// [Options].Key choose other keys.
//
// Keys are hashed, not stored, and idle keys are forgotten. At most
// [Options].MaxKeys are tracked, so a flood of made-up keys costs bounded
// memory and does not lock out a legitimate key.
//
// A refused request costs nothing, as with nginx's limit_req. The
// middleware never queues requests. docs/server.md states each rule in
// full.
package middleware

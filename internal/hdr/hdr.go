// Package hdr names the HTTP fields that more than one package of pace
// reads or writes, in Go's canonical form
// (textproto.CanonicalMIMEHeaderKey), so that map lookups need no
// canonicalization and allocate nothing.
package hdr

const (
	RetryAfter      = "Retry-After"       // RFC 9110 §10.2.3
	RateLimit       = "Ratelimit"         // RateLimit, draft-ietf-httpapi-ratelimit-headers-10/11 §4
	RateLimitPolicy = "Ratelimit-Policy"  // RateLimit-Policy, same draft §3
	IdempotencyKey  = "Idempotency-Key"   // draft-ietf-httpapi-idempotency-key-header
	XIdempotencyKey = "X-Idempotency-Key" // the older name, which net/http counts too
)

package pace

import (
	"fmt"

	"github.com/pacehttp/pace/throttle"
)

// TokenBucket returns a token-bucket Limit: a bucket holding up to burst tokens,
// refilled at r, where each request takes one token. A full bucket lets burst
// requests through back to back; after that they pass at r. Over any period
// of length t it admits at most burst + r·t requests, the contract of most
// token-bucket APIs (Stripe-style "N per second with bursts of B").
//
// Tokens are refilled lazily, tokens = min(burst, tokens + r·(now−last)),
// computed exactly in integer nanoseconds with the generic cell rate
// algorithm (ITU-T I.371). One token takes r.Interval() to refill: Per/N
// rounded up to a whole nanosecond, so the bucket is never faster than r.
//
// The returned Limit carries a [*ConfigError] (see [Limit.Err]) naming
// "Rate.N" or "Rate.Per" when r is not valid (see [Rate]), and "Burst" when burst < 1
// or when burst·r.Interval() exceeds about 146 years. A burst of 0 is an
// error, never "allow nothing" or "allow everything".
func TokenBucket(r Rate, burst int) Limit {
	alg, err := newBucketAlg(r, burst)
	return newLimit(alg, err)
}

// bucketAlg is the token bucket as an algorithm: GCRA with capacity burst.
type bucketAlg struct {
	gcra
	rate  Rate
	burst int
}

func newBucketAlg(r Rate, burst int) (*bucketAlg, error) {
	if err := r.validate("Rate"); err != nil {
		return nil, err
	}
	if burst < 1 {
		return nil, configErr("Burst", burst, "must be at least 1")
	}
	g, err := newGCRA(r, burst, "Burst", burst)
	if err != nil {
		return nil, err
	}
	return &bucketAlg{gcra: g, rate: r, burst: burst}, nil
}

// span is burst·interval: an untouched bucket is full again this long after
// its last booking at or before now.
func (a *bucketAlg) span() int64 { return a.tau }

func (a *bucketAlg) maxN() int { return a.burst }

func (a *bucketAlg) String() string {
	return fmt.Sprintf("token bucket %v burst %d", a.rate, a.burst)
}

func (a *bucketAlg) params() (throttle.Algorithm, Rate, int, LeakyOptions) {
	return throttle.TokenBucket, a.rate, a.burst, LeakyOptions{}
}

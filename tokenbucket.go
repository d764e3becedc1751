package pace

import (
	"fmt"
	"time"
)

// Bucket returns a token-bucket Limit: a bucket holding up to burst tokens,
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
// "Rate.N" or "Rate.Per" when r is not positive, and "Burst" when burst < 1
// or when burst·r.Interval() exceeds about 146 years. A burst of 0 is an
// error, never "allow nothing" or "allow everything".
func Bucket(r Rate, burst int) Limit {
	alg, err := newBucketAlg(r, burst)
	return newLimit(alg, err)
}

// TokenBucket is a single token bucket (see [Bucket]) used with explicit time
// (ReserveAt, AllowAt, CancelAt, TokensAt) or the clock (Allow, Wait). Create
// it with [NewTokenBucket]; the zero TokenBucket is not usable (its methods
// panic). It is safe for concurrent use by multiple goroutines; a mutex
// guards it for the few nanoseconds of each decision and is never held while
// waiting.
//
// Instants passed to its methods may go backwards (a clock stepping back):
// an earlier now sees fewer tokens, never more. Times are measured from an
// epoch about 73 years before the bucket was created; earlier instants count
// as that epoch.
type TokenBucket struct {
	local
}

// NewTokenBucket returns a full token bucket of capacity burst refilled at r.
// It returns a [*ConfigError] (matching [ErrInvalidConfig]) for the inputs
// [Bucket] rejects, naming "Rate.N", "Rate.Per" or "Burst".
func NewTokenBucket(r Rate, burst int) (*TokenBucket, error) {
	alg, err := newBucketAlg(r, burst)
	if err != nil {
		return nil, err
	}
	return &TokenBucket{local: newLocal(alg)}, nil
}

// TokensAt returns the number of tokens in the bucket at now: burst when
// full, fractional while refilling, and negative when tokens have been
// reserved ahead of now with ReserveAt. It changes nothing. Safe for
// concurrent use.
func (b *TokenBucket) TokensAt(now time.Time) float64 {
	at := sinceEpoch(b.epoch, now)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.alg.(*bucketAlg).tokensAt(&b.c, at)
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

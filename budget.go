package pace

import (
	"math"
	"sync"
	"sync/atomic"
)

// Defaults of [RetryBudget].
const (
	// DefaultBudgetMaxTokens is the default size of a key's retry budget.
	DefaultBudgetMaxTokens = 10
	// DefaultBudgetTokenRatio is the default refund of one success.
	DefaultBudgetTokenRatio = 0.1
	// DefaultBudgetMaxKeys is the default number of keys whose budget is
	// remembered at once.
	DefaultBudgetMaxKeys = 10_000
)

// RetryBudget limits retries per key to a share of recent traffic, so that a
// dead or overloaded upstream receives about one attempt per call rather
// than MaxAttempts of them. The rule is gRPC's retry throttling (gRFC A6,
// "retryThrottling"): each key has a bucket of MaxTokens tokens, full at
// first. Every attempt that fails in a retryable way (a retryable status or
// transport error) takes 1 token; every other answer gives back TokenRatio
// tokens, up to MaxTokens. A retry is allowed only while the key holds more
// than MaxTokens/2 tokens once its failure is counted.
//
// First attempts spend tokens too, so a key that fails every time gets, from
// a full bucket, at most ⌈MaxTokens/2⌉ − 1 retries in all: 4 with the
// defaults (10 and 0.1), whose first four failed attempts leave 9, 8, 7 and
// 6 tokens and the fifth leaves 5, not more than half. MaxAttempts may cut
// that short: with the default of 3, a request's third attempt spends the
// token of a retry it cannot make, and the key gets 3 retries (20 requests
// to a host that always fails cost 23 attempts). Answers that do not fail
// raise the bound: over any stretch of traffic that starts from a full
// bucket, the budget allows fewer than MaxTokens/2 + TokenRatio × (the
// answers that did not fail) retries; with the defaults, fewer than 5 plus
// one for every 10 such answers.
//
// Retries the server scheduled itself with a positive delay (Retry-After and
// the other headers the Transport reads) are not held back by the budget:
// the key's cooldown already paces them. They still take their token.
//
// Tokens are counted in thousandths, as gRFC A6 allows three decimal places
// in TokenRatio. A key at full budget takes no memory; at most MaxKeys
// drained keys are remembered, and when a new one comes the fullest of a few
// sampled entries is forgotten (its budget is full again).
//
// The zero RetryBudget means the defaults. An invalid one makes the
// Transport invalid ([*ConfigError] naming "Budget.MaxTokens" and so on). A
// RetryBudget is a plain value.
type RetryBudget struct {
	// MaxTokens is the size of each key's bucket, in (0, 1000]. Zero means
	// DefaultBudgetMaxTokens.
	MaxTokens float64
	// TokenRatio is the number of tokens one non-failing answer gives back,
	// in (0, MaxTokens], at most three decimal places used. Zero means
	// DefaultBudgetTokenRatio.
	TokenRatio float64
	// MaxKeys bounds how many keys with a partly spent budget are
	// remembered. Zero means DefaultBudgetMaxKeys; it must not be negative.
	MaxKeys int
	// Disabled turns the budget off: retries are limited only by
	// MaxAttempts and the retry policy.
	Disabled bool
}

// validate reports the first invalid setting of b.
func (b RetryBudget) validate() error {
	switch {
	case math.IsNaN(b.MaxTokens) || b.MaxTokens < 0 || b.MaxTokens > 1000:
		return configErr("Budget.MaxTokens", b.MaxTokens, "must be within (0, 1000], or 0 for the default")
	case math.IsNaN(b.TokenRatio) || b.TokenRatio < 0:
		return configErr("Budget.TokenRatio", b.TokenRatio, "must be positive, or 0 for the default")
	case b.MaxKeys < 0:
		return configErr("Budget.MaxKeys", b.MaxKeys, "must not be negative")
	}
	maxT := b.MaxTokens
	if maxT == 0 {
		maxT = DefaultBudgetMaxTokens
	}
	if b.TokenRatio > maxT {
		return configErr("Budget.TokenRatio", b.TokenRatio, "must not exceed MaxTokens")
	}
	if b.TokenRatio != 0 && math.Round(b.TokenRatio*1000) < 1 {
		return configErr("Budget.TokenRatio", b.TokenRatio, "must be at least 0.001")
	}
	return nil
}

// budget is the running state of a RetryBudget: milli-tokens per key. A key
// absent from the map holds full tokens.
type budget struct {
	full, ratio, threshold int64 // milli-tokens
	maxKeys                int

	n      atomic.Int64 // len(tokens), read without the lock on the fast path
	mu     sync.Mutex
	tokens map[string]int64
}

// newBudget returns the state for b, or nil when b is disabled. b must be
// valid.
func newBudget(b RetryBudget) *budget {
	if b.Disabled {
		return nil
	}
	maxT, ratio, keys := b.MaxTokens, b.TokenRatio, b.MaxKeys
	if maxT == 0 {
		maxT = DefaultBudgetMaxTokens
	}
	if ratio == 0 {
		ratio = DefaultBudgetTokenRatio
	}
	if keys == 0 {
		keys = DefaultBudgetMaxKeys
	}
	full := int64(math.Round(maxT * 1000))
	return &budget{
		full:      full,
		ratio:     max(1, int64(math.Round(ratio*1000))),
		threshold: full / 2,
		maxKeys:   keys,
	}
}

// failure takes one token from key and reports whether a retry is still
// allowed, that is whether more than half the tokens remain.
func (b *budget) failure(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tokens[key]
	if !ok {
		t = b.full
		if b.tokens == nil {
			b.tokens = make(map[string]int64)
		}
		if len(b.tokens) >= b.maxKeys {
			b.evictLocked()
		}
	}
	t = max(0, t-1000)
	b.tokens[key] = t
	b.n.Store(int64(len(b.tokens)))
	return t > b.threshold
}

// success gives TokenRatio back to key.
func (b *budget) success(key string) {
	if b.n.Load() == 0 {
		return // every key is full
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tokens[key]
	if !ok {
		return
	}
	if t += b.ratio; t >= b.full {
		delete(b.tokens, key)
		b.n.Store(int64(len(b.tokens)))
		return
	}
	b.tokens[key] = t
}

// evictLocked forgets the fullest of up to 8 entries.
func (b *budget) evictLocked() {
	var victim string
	best, seen := int64(-1), 0
	for k, t := range b.tokens {
		if t > best {
			victim, best = k, t
		}
		if seen++; seen == 8 {
			break
		}
	}
	delete(b.tokens, victim)
}

package pace

import (
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/internal/testhttp"
)

// TestBudgetBoundAlwaysFailing: the bound the RetryBudget documents for a
// key that fails every time. 20 GETs to an always-500 host cost 20 first
// attempts plus the retries the budget allows: ⌈MaxTokens/2⌉ − 1 at most
// (4 with the defaults, not 5: first attempts spend tokens too), fewer
// when MaxAttempts cuts a request's retries short (3 with the default
// MaxAttempts, as the new-user trial measured: 23 requests).
func TestBudgetBoundAlwaysFailing(t *testing.T) {
	tests := []struct {
		name        string
		maxTokens   float64 // 0: the default
		maxAttempts int     // 0: the default
		wantRetries int
	}{
		{"defaults", 0, 0, 3},         // failures leave 9 (retry), 8 (retry), 7 (3rd attempt), 6 (retry), 5 (stop)
		{"MaxAttempts 2", 0, 2, 2},    // 9 (retry), 8 (2nd attempt), 7 (retry), 6 (2nd attempt), 5 (stop)
		{"MaxAttempts 4", 0, 4, 3},    // 9, 8, 7 (retries), 6 (4th attempt), 5 (stop)
		{"MaxAttempts 5", 0, 5, 4},    // 9, 8, 7, 6 (retries), 5 (5th attempt, and stop)
		{"MaxAttempts 10", 0, 10, 4},  // the bound itself
		{"MaxTokens 5", 5, 10, 2},     // ⌈2.5⌉ − 1: 4, 3 (retries), 2 (stop)
		{"MaxTokens 7.5", 7.5, 10, 3}, // ⌈3.75⌉ − 1: 6.5, 5.5, 4.5 (retries), 3.5 (stop)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusInternalServerError)}}
				tr := &Transport{Base: srv, MaxAttempts: tt.maxAttempts, Budget: RetryBudget{MaxTokens: tt.maxTokens},
					NewBackOff: constBackOff(time.Millisecond)}
				for range 20 {
					if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusInternalServerError {
						t.Fatalf("status %d, want the 500", code)
					}
				}
				maxT := tt.maxTokens
				if maxT == 0 {
					maxT = DefaultBudgetMaxTokens
				}
				retries := srv.Count() - 20
				if bound := int(math.Ceil(maxT/2)) - 1; retries > bound {
					t.Errorf("%d retries, above the documented bound %d", retries, bound)
				}
				if retries != tt.wantRetries {
					t.Errorf("%d requests for 20 calls (%d retries), want %d retries", srv.Count(), retries, tt.wantRetries)
				}
			})
		})
	}
}

// TestBudgetBoundProperty: over 10,000 random schedules of failures and
// non-failing answers, each from a full bucket with a random MaxTokens and
// TokenRatio (three decimals), the failures that still allow a retry
// number fewer than MaxTokens/2 + TokenRatio × (non-failing answers), as
// the RetryBudget doc states, and a schedule of failures only reaches
// ⌈MaxTokens/2⌉ − 1 exactly.
func TestBudgetBoundProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261130, 4))
	for i := range 10_000 {
		maxT := float64(1+rng.IntN(20_000)) / 1000 // (0, 20]
		ratio := float64(1+rng.IntN(int(maxT*1000))) / 1000
		rb := RetryBudget{MaxTokens: maxT, TokenRatio: ratio}
		if err := rb.validate(); err != nil {
			t.Fatalf("schedule %d: %v", i, err)
		}
		b := newBudget(rb)
		pFail := rng.Float64()
		allowed, ok := 0, 0
		for range rng.IntN(80) {
			if rng.Float64() < pFail {
				if b.failure("k") {
					allowed++
				}
			} else {
				b.success("k")
				ok++
			}
		}
		if bound := maxT/2 + ratio*float64(ok); float64(allowed) >= bound+1e-9 {
			t.Fatalf("schedule %d (MaxTokens %v, TokenRatio %v): %d retries allowed after %d non-failing answers, want fewer than %v",
				i, maxT, ratio, allowed, ok, bound)
		}
		fresh, n := newBudget(rb), 0
		for fresh.failure("k") {
			n++
		}
		if want := int(math.Ceil(maxT/2)) - 1; n != want {
			t.Fatalf("schedule %d (MaxTokens %v): failures only allow %d retries, want ⌈MaxTokens/2⌉ − 1 = %d", i, maxT, n, want)
		}
	}
}

package pace

import (
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/internal/testhttp"
)

// TestBudgetRule walks the gRFC A6 token bucket with the defaults (10
// tokens, 0.1 back per success, retries while more than 5 remain).
func TestBudgetRule(t *testing.T) {
	b := newBudget(RetryBudget{})
	steps := []struct {
		op        string // "f" failure, "s" success
		wantAllow bool   // for failures
		wantLevel int64  // milli-tokens after the step
	}{
		{"f", true, 9000}, {"f", true, 8000}, {"f", true, 7000}, {"f", true, 6000},
		{"f", false, 5000}, // exactly half: no retry
		{"s", false, 5100}, {"f", false, 4100},
		{"f", false, 3100}, {"f", false, 2100}, {"f", false, 1100}, {"f", false, 100},
		{"f", false, 0}, {"f", false, 0}, // never below 0
	}
	for i, st := range steps {
		if st.op == "f" {
			if got := b.failure("k"); got != st.wantAllow {
				t.Errorf("step %d: failure allows retry = %v, want %v", i, got, st.wantAllow)
			}
		} else {
			b.success("k")
		}
		if got := b.level("k"); got != st.wantLevel {
			t.Errorf("step %d: level = %d, want %d", i, got, st.wantLevel)
		}
	}
	// 61 successes bring it to 6.1, so that after the next failure more
	// than half is left; 100 fill it, and a full key is forgotten.
	for range 60 {
		b.success("k")
	}
	if b.failure("k") {
		t.Error("after 60 successes a failure should leave no retry")
	}
	for range 11 {
		b.success("k")
	}
	if !b.failure("k") {
		t.Error("after 71 successes and 1 failure, a failure should allow a retry")
	}
	for range 200 {
		b.success("k")
	}
	if b.n.Load() != 0 {
		t.Errorf("a full key is still stored (%d entries)", b.n.Load())
	}
	if b.level("other") != 10_000 {
		t.Error("an unseen key is not full")
	}
}

func TestBudgetMaxKeys(t *testing.T) {
	b := newBudget(RetryBudget{MaxKeys: 100})
	for i := range 10_000 {
		b.failure(fmt.Sprint("host-", i))
	}
	if n := b.n.Load(); n > 100 {
		t.Errorf("%d keys remembered, want at most 100", n)
	}
}

func TestBudgetCustom(t *testing.T) {
	b := newBudget(RetryBudget{MaxTokens: 4, TokenRatio: 0.5})
	got := []bool{b.failure("k"), b.failure("k"), b.failure("k")}
	if fmt.Sprint(got) != "[true false false]" {
		t.Errorf("failures allow %v, want [true false false]", got)
	}
	b.success("k")
	b.success("k")
	if l := b.level("k"); l != 2000 {
		t.Errorf("level = %d, want 2000", l)
	}
	if newBudget(RetryBudget{Disabled: true}) != nil {
		t.Error("a disabled budget has state")
	}
}

// TestBudgetDeadUpstream is issue item 10: an upstream failing every
// request for 1,000 sequential calls gets 1,000 attempts plus the budget's
// few retries, not MaxAttempts × 1,000. With the defaults: call 1 retries
// twice (tokens 10 → 7), call 2 once (→ 5, no longer above half), then
// nothing: 1,003 attempts in all.
func TestBudgetDeadUpstream(t *testing.T) {
	tests := []struct {
		name         string
		budget       RetryBudget
		wantAttempts int
	}{
		{"default budget", RetryBudget{}, 1003},
		{"no budget", RetryBudget{Disabled: true}, 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusServiceUnavailable)}}
				tr := &Transport{Base: srv, Budget: tt.budget, NewBackOff: constBackOff(time.Millisecond)}
				giveUps := map[Reason]int{}
				tr.OnEvent = func(e Event) {
					if e.Kind == EventGiveUp {
						giveUps[e.Reason]++
					}
				}
				for range 1000 {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
					if err != nil {
						t.Fatal(err)
					}
					if resp.StatusCode != http.StatusServiceUnavailable {
						t.Fatalf("status %d, want the 503", resp.StatusCode)
					}
					resp.Body.Close()
				}
				if n := srv.Count(); n != tt.wantAttempts {
					t.Errorf("%d attempts for 1,000 calls, want %d", n, tt.wantAttempts)
				}
				if !tt.budget.Disabled && giveUps[ReasonBudget] != 999 {
					t.Errorf("%d give-ups for the budget, want 999 (call 2 and all after)", giveUps[ReasonBudget])
				}
			})
		})
	}
}

// TestBudgetServerDelayExempt: retries the server scheduled with a delay
// are not held back by a spent budget; the cooldown paces them.
func TestBudgetServerDelayExempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			if n%2 == 1 {
				return testhttp.Response(http.StatusServiceUnavailable, "Retry-After", "1"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, Budget: RetryBudget{MaxTokens: 1}}
		for i := range 20 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("call %d ended with %d, want 200", i, resp.StatusCode)
			}
			resp.Body.Close()
		}
	})
}

// level returns key's tokens in thousandths.
func (b *budget) level(key string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tokens[key]; ok {
		return t
	}
	return b.full
}

package retrydecide

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pacehttp/pace/retry"
)

// TestBudgetBoundProperty: over 500 random schedules of requests and
// retries spread over two minutes, each with a random TTL, reserve and
// percentage, the retries the budget allows in any stretch of 9/10 of the
// TTL number at most MinRetriesPerSec × TTL + PercentCanRetry × (the
// requests of the TTL up to the stretch's last retry), the bound retry.Budget
// documents (Finagle's retry.Budget; the window is kept in ten slices, so a
// count lasts between 9/10 of the TTL and the TTL).
func TestBudgetBoundProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261201, 11))
	type event struct {
		at      time.Time
		retry   bool // a withdrawal allowed; else a request
		allowed bool
	}
	for i := range 500 {
		rb := retry.Budget{
			TTL:              time.Duration(1+rng.IntN(60)) * time.Second,
			MinRetriesPerSec: rng.IntN(20) - 2, // some negative: no reserve
			PercentCanRetry:  float64(rng.IntN(2000)-200) / 1000,
		}
		if err := validateBudget(rb); err != nil {
			t.Fatalf("schedule %d: %v", i, err)
		}
		b, k := NewBudget(rb), new(Window)
		now := budgetT0
		var events []event
		for range 300 {
			now = now.Add(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
			if rng.IntN(3) == 0 {
				b.Request(k, true, now)
				events = append(events, event{at: now})
			} else {
				events = append(events, event{at: now, retry: true, allowed: b.Withdraw(k, now, false)})
			}
		}
		perSec, pct := rb.MinRetriesPerSec, rb.PercentCanRetry
		if perSec == 0 {
			perSec = defaultBudgetMinRetriesPerSec
		}
		if pct == 0 {
			pct = defaultBudgetPercentCanRetry
		}
		reserve, pct := float64(max(perSec, 0))*rb.TTL.Seconds(), max(pct, 0)
		for end := range events {
			// The stretch of 9/10 of the TTL that ends at event end, and
			// the requests of the TTL up to its last allowed retry.
			retries, last := 0, -1
			for j := end; j >= 0 && events[end].at.Sub(events[j].at) < rb.TTL*9/10; j-- {
				if events[j].allowed {
					retries++
					last = max(last, j)
				}
			}
			requests := 0
			for j := last; j >= 0 && events[last].at.Sub(events[j].at) < rb.TTL; j-- {
				if !events[j].retry {
					requests++
				}
			}
			if bound := reserve + pct*float64(requests); float64(retries) > bound+1e-9 {
				t.Fatalf("schedule %d (%+v): %d retries in a stretch, %d requests, bound %v", i, rb, retries, requests, bound)
			}
		}
	}
}

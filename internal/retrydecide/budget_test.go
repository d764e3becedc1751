package retrydecide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/retry"
)

var budgetT0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// TestBudgetRule walks Finagle's retry.Budget rule with the defaults: a
// reserve of 10 retries a second over a 10 s TTL (100 retries), plus 0.2 of
// a retry per request, counts expiring after the TTL.
func TestBudgetRule(t *testing.T) {
	b := NewBudget(retry.Budget{})
	k := new(Window)
	now := budgetT0
	for i := range 100 {
		require.True(t, b.Withdraw(k, now, false), "retry %d is within the reserve", i+1)
	}
	assert.False(t, b.Withdraw(k, now, false), "retry 101 exceeds the reserve")
	for range 4 {
		b.Request(k, true, now)
	}
	assert.False(t, b.Withdraw(k, now, false), "4 requests make 0.8 of a retry")
	b.Request(k, false, now)
	assert.True(t, b.Withdraw(k, now, false), "5 requests make one retry")
	assert.False(t, b.Withdraw(k, now, false))
	assert.False(t, b.Withdraw(k, now, true), "forced: taken, but not allowed")

	// 9.9 s later the counts are still in the window; 10 s later they
	// have expired and the whole reserve is back.
	assert.False(t, b.Withdraw(k, now.Add(9900*time.Millisecond), false))
	later := now.Add(defaultBudgetTTL)
	for i := range 100 {
		require.True(t, b.Withdraw(k, later, false), "after the TTL, retry %d", i+1)
	}
	assert.False(t, b.Withdraw(k, later, false))

	// A request that does not fail, once the window holds no retry,
	// clears it; a window that tracks nothing costs nothing on success.
	require.True(t, k.Tracking())
	b.Request(k, false, later.Add(defaultBudgetTTL))
	assert.False(t, k.Tracking(), "a window with no recent retry is cleared")
	assert.Equal(t, Window{}.epoch, k.epoch, "and holds no count")
	other := new(Window)
	b.Request(other, false, later)
	assert.False(t, other.Tracking(), "a success does not start tracking")
}

func TestBudgetCustom(t *testing.T) {
	k := new(Window)
	b := NewBudget(retry.Budget{TTL: time.Second, MinRetriesPerSec: -1, PercentCanRetry: 0.5})
	assert.False(t, b.Withdraw(k, budgetT0, false), "no reserve")
	b.Request(k, true, budgetT0)
	b.Request(k, true, budgetT0)
	assert.True(t, b.Withdraw(k, budgetT0, false), "two requests at 0.5 make one retry")
	assert.False(t, b.Withdraw(k, budgetT0, false))
	assert.True(t, b.Withdraw(k, budgetT0.Add(time.Second), false) == false, "deposits expire too")

	b, k = NewBudget(retry.Budget{TTL: 2 * time.Second, MinRetriesPerSec: 3, PercentCanRetry: -1}), new(Window)
	n := 0
	for b.Withdraw(k, budgetT0, false) {
		n++
	}
	assert.Equal(t, 6, n, "3 a second over 2 s")
	assert.Nil(t, NewBudget(retry.Budget{Disabled: true}), "a disabled budget has state")
}

package batch

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
)

// heldBackRun runs 50 items of HTTP through a plain client whose server
// answers the first 3 requests 200 and every later one 429 with a
// Retry-After of an hour, 4 at a time, under ctx. It returns the report
// and how many requests the server saw.
func heldBackRun(t *testing.T, ctx context.Context) (*Report, int) {
	t.Helper()
	var sent atomic.Int32
	client := &http.Client{Transport: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		if sent.Add(1) <= 3 {
			return testhttp.Response(http.StatusOK), nil
		}
		return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "3600"), nil
	})}
	rep, _ := Run(ctx, ints(50), HTTP(client, getItem, nil), Options{Concurrency: 4})
	require.NotNil(t, rep)
	return rep, int(sent.Load())
}

// checkHeldBack asserts what an item its key's pause held back at the
// gate, nothing sent, counts: no attempt, no throttle, and NotStarted when
// no attempt of it was ever sent; Result.Attempts add up to the requests
// the server saw (a new user's trial counted 50 attempts and 45 throttles
// for 8 requests).
func checkHeldBack(t *testing.T, rep *Report, sent int) {
	t.Helper()
	s := rep.Summary
	attempts, neverSent := 0, 0
	for _, res := range rep.Results {
		attempts += res.Attempts
		if res.Attempts == 0 {
			neverSent++
			assert.Equal(t, NotStarted, res.Outcome, "item %d: never sent", res.Index)
		}
	}
	assert.Equal(t, sent, attempts, "Result.Attempts add up to the requests sent")
	assert.Equal(t, sent-3, s.Throttled, "Summary.Throttled counts the answers that throttled (all but the first 3)")
	assert.Equal(t, neverSent, s.NotStarted, "items never sent are not started")
	assert.Equal(t, s.Items, s.Succeeded+s.Failed+s.Interrupted+s.InDoubt+s.NotStarted)
	assert.Equal(t, 3, s.Succeeded)
	assert.Positive(t, neverSent)
}

// TestRunHeldBackPastDeadline: a key paused past the context's deadline
// holds its items back at the gate; they end at once, not sent.
func TestRunHeldBackPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		rep, sent := heldBackRun(t, ctx)
		t.Logf("%v; %d sent", rep.Summary, sent)
		checkHeldBack(t, rep, sent)
	})
}

// TestRunHeldBackCancelled: a run cancelled while its key is paused ends
// the items held back at the gate NotStarted, not Interrupted: they were
// never sent, and Interrupted says started and cut off.
func TestRunHeldBackCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(10*time.Second, cancel)
		rep, sent := heldBackRun(t, ctx)
		t.Logf("%v; %d sent", rep.Summary, sent)
		checkHeldBack(t, rep, sent)
	})
}

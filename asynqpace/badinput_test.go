package asynqpace

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
)

// TestRequeueErrorOutOfBounds: a *RequeueError built by hand (a nil one,
// a negative Delay, a Delay of centuries) waits within
// (0, pace.DefaultMaxRetryAfter], rounded up to a whole second, and is
// still no failure; nothing panics.
func TestRequeueErrorOutOfBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
	}{
		{"nil *RequeueError", (*RequeueError)(nil), DefaultDelay},
		{"wrapped nil *RequeueError", fmt.Errorf("job: %w", (*RequeueError)(nil)), DefaultDelay},
		{"negative Delay", &RequeueError{Delay: -time.Hour, Err: pace.ErrThrottled}, DefaultDelay},
		{"zero Delay", &RequeueError{Err: pace.ErrThrottled}, DefaultDelay},
		{"MaxInt64 Delay", &RequeueError{Delay: math.MaxInt64, Err: pace.ErrThrottled}, pace.DefaultMaxRetryAfter},
	} {
		require.NotPanics(t, func() {
			d := RetryDelay(nil)(1, tc.err, nil)
			assert.GreaterOrEqual(t, d, tc.want, tc.name)
			assert.Less(t, d, tc.want+time.Second, tc.name)
			assert.False(t, IsFailure(nil)(tc.err), tc.name)
			assert.NotEmpty(t, tc.err.Error(), tc.name)
		}, tc.name)
	}
}

// TestNoEmptyIdempotencyKey: outside an asynq handler's context (a unit
// test, a wrapper that replaced the context) a POST goes out with no
// Idempotency-Key at all, not an empty one.
func TestNoEmptyIdempotencyKey(t *testing.T) {
	var got []string
	var present bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, present = r.Header["Idempotency-Key"]
	}))
	defer srv.Close()
	h := Handler(srv.Client(), func(ctx context.Context, _ *asynq.Task) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
	}, nil)
	require.NoError(t, h.ProcessTask(context.Background(), asynq.NewTask("charge", nil)))
	assert.False(t, present, "Idempotency-Key sent: %q", got)
	//lint:ignore SA1012 a nil Context is the bad input under test
	assert.Empty(t, IdempotencyKey(nil))
}

package batch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTransportPauseFollowsOptions: with a pace.Transport as HTTP's
// client, the pause the Transport sets on a key after a throttle follows
// Options.Backoff and MaxBackoff, as their docs promise for every pause of
// a key. Before, the Transport kept its own (up to MaxRetryAfter, 5 min,
// for Retry-After: 3600; 5 s for a 429 without a delay) and refused each
// retry at once, so the item never went out again before the deadline.
func TestTransportPauseFollowsOptions(t *testing.T) {
	for _, tt := range []struct {
		name, retryAfter string
		opts             Options
	}{
		{"Retry-After: 3600 capped by MaxBackoff", "3600", Options{Backoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond}},
		{"no delay: Backoff", "", Options{Backoff: 200 * time.Millisecond, MaxBackoff: 10 * time.Second}},
		{"malformed delay: Backoff", "abc", Options{Backoff: 200 * time.Millisecond, MaxBackoff: 10 * time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if hits.Add(1) == 1 {
					if tt.retryAfter != "" {
						w.Header().Set("Retry-After", tt.retryAfter)
					}
					w.WriteHeader(http.StatusTooManyRequests)
				}
			}))
			defer srv.Close()
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			client := &http.Client{Transport: &pace.Transport{Base: base}}
			build := func(ctx context.Context, _ int) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			}
			// Far beyond the options' pauses, far below the Transport's own.
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			rep, err := Run(ctx, []int{1}, HTTP(client, build, nil), tt.opts)
			require.NoError(t, err)
			assert.Equal(t, Succeeded, rep.Results[0].Outcome)
			assert.Equal(t, int32(2), hits.Load(), "the throttled request and its retry")
			assert.Equal(t, 1, rep.Summary.Pauses, "%+v", rep.Summary)
		})
	}
}

package batch

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestRequeueFollowsTransportStatuses: an item goes back in line after an
// answer whose status the client's pace.Transport retries for that request
// (Retry.Statuses, or its Hosts entry's), else after one of the default
// statuses. Batch used retry.DefaultStatuses whatever the Transport's
// policy, so a Transport retrying 409 saw its 409s fail the item and one
// retrying only 500 saw its 503s requeued.
func TestRequeueFollowsTransportStatuses(t *testing.T) {
	tests := []struct {
		name      string
		transport func(base http.RoundTripper) http.RoundTripper
		first     int // the first answer's status; the second is 200
		want      Outcome
	}{
		{"pace.Transport retrying 409 requeues a 409", func(b http.RoundTripper) http.RoundTripper {
			return &pace.Transport{Base: b, Retry: retry.Policy{MaxAttempts: 1, Statuses: []int{409}}}
		}, http.StatusConflict, Succeeded},
		{"pace.Transport retrying only 500 does not requeue a 503", func(b http.RoundTripper) http.RoundTripper {
			return &pace.Transport{Base: b, Retry: retry.Policy{MaxAttempts: 1, Statuses: []int{500}}}
		}, http.StatusServiceUnavailable, Failed},
		{"the host's Statuses win over Retry's", func(b http.RoundTripper) http.RoundTripper {
			return &pace.Transport{Base: b, Retry: retry.Policy{MaxAttempts: 1, Statuses: []int{500}},
				Limits: pace.Hosts{"api.test": {Statuses: []int{409}}}}
		}, http.StatusConflict, Succeeded},
		{"pace.Transport with the default statuses requeues a 503", func(b http.RoundTripper) http.RoundTripper {
			return &pace.Transport{Base: b, Retry: retry.Policy{MaxAttempts: 1}}
		}, http.StatusServiceUnavailable, Succeeded},
		{"another Transport: the defaults requeue a 503", func(b http.RoundTripper) http.RoundTripper { return b }, http.StatusServiceUnavailable, Succeeded},
		{"another Transport: the defaults do not requeue a 409", func(b http.RoundTripper) http.RoundTripper { return b }, http.StatusConflict, Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent atomic.Int32
				base := testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
					if sent.Add(1) == 1 {
						return testhttp.Response(tt.first), nil
					}
					return testhttp.Response(http.StatusOK), nil
				})
				client := &http.Client{Transport: tt.transport(base)}
				build := func(ctx context.Context, _ int) (*http.Request, error) {
					return http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
				}
				rep, err := Run(t.Context(), ints(1), HTTP(client, build, nil), Options{})
				if tt.want == Failed {
					require.Error(t, err)
				} else {
					require.NoError(t, err)
				}
				assert.Equal(t, tt.want, rep.Results[0].Outcome)
			})
		})
	}
}

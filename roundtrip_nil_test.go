package pace

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestRoundTripNilRequest: a nil request, or one with a nil URL, is
// refused with an error, nothing sent, as net/http's Transport refuses
// them; it never panics, even on a Transport whose settings are invalid.
func TestRoundTripNilRequest(t *testing.T) {
	srv := &testhttp.Server{}
	for name, tr := range map[string]*Transport{
		"zero":    {},
		"base":    {Base: srv},
		"invalid": {Base: srv, Retry: retry.Policy{MaxAttempts: -1}},
	} {
		t.Run(name, func(t *testing.T) {
			var resp *http.Response
			var err error
			require.NotPanics(t, func() { resp, err = tr.RoundTrip(nil) })
			assert.Nil(t, resp)
			require.EqualError(t, err, "pace: nil Request: nothing sent")
			assert.NotErrorIs(t, err, ErrInvalidConfig)
			assert.NotErrorAs(t, err, new(*AttemptsError), "nothing was sent")
		})
	}
	body := testhttp.NewBody("x")
	resp, err := (&Transport{Base: srv}).RoundTrip(&http.Request{Method: "PUT", Header: http.Header{}, Body: body})
	assert.Nil(t, resp)
	require.EqualError(t, err, "pace: nil Request.URL: nothing sent")
	assert.True(t, body.Closed(), "the body is closed, as the RoundTripper contract asks")
	assert.Zero(t, srv.Count())
}

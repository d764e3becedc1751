package pace

import (
	"net/http"
	"net/url"
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

// TestRoundTripRefusedRequest: a request net/http's Transport refuses
// before dialling (a nil Header, an http URL without a host) is refused up
// front like a nil URL, its body closed, with an error that claims no
// attempt (it was "pace: 1 attempt: http: nil Request.Header").
func TestRoundTripRefusedRequest(t *testing.T) {
	tests := []struct {
		name   string
		url    string
		header http.Header
		want   string
	}{
		{"nil Header", "http://127.0.0.1:1/", nil, "pace: nil Request.Header: nothing sent"},
		{"empty host", "http:///x", http.Header{}, "pace: no Host in request URL: nothing sent"},
		{"empty https host", "https:///x", http.Header{}, "pace: no Host in request URL: nothing sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &testhttp.Server{}
			var events []Event
			tr := &Transport{Base: srv, OnEvent: func(e Event) { events = append(events, e) }}
			u, err := url.Parse(tt.url)
			require.NoError(t, err)
			body := testhttp.NewBody("x")
			resp, err := tr.RoundTrip(&http.Request{Method: "PUT", URL: u, Header: tt.header, Body: body})
			assert.Nil(t, resp)
			require.EqualError(t, err, tt.want)
			assert.NotErrorAs(t, err, new(*AttemptsError), "nothing was sent")
			assert.True(t, body.Closed(), "the body is closed, as the RoundTripper contract asks")
			assert.Zero(t, srv.Count())
			assert.Empty(t, events)
		})
	}
	// The same requests through net/http's own Transport are refused too,
	// so refusing them first changes no outcome.
	for _, tt := range tests {
		u, _ := url.Parse(tt.url)
		_, err := (&Transport{}).RoundTrip(&http.Request{Method: "GET", URL: u, Header: tt.header})
		require.Error(t, err, tt.name)
		_, err = http.DefaultTransport.RoundTrip(&http.Request{Method: "GET", URL: u, Header: tt.header})
		require.Error(t, err, tt.name)
	}
}

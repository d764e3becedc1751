package pace

import (
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
)

// TestRouteAlternatingHosts: calls that alternate between hosts, and
// between spellings of one host, each take their own host's limit, retry
// policy and Stats entry, however the Transport reuses the last call's
// choice (call.route).
func TestRouteAlternatingHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Handle: func(_ int, r testhttp.Received) (*http.Response, error) {
			u, err := url.Parse(r.URL)
			if err != nil || u.Hostname() != "flaky.test" {
				return testhttp.Response(200), err
			}
			return testhttp.Response(503), nil
		}}
		tr := &Transport{Base: srv, Limits: Hosts{
			"slow.test":  {Limit: LeakyBucket(Every(time.Second), LeakyOptions{Queue: 10})},
			"flaky.test": {MaxAttempts: 1},
		}}
		start := time.Now()
		for _, u := range []string{
			"http://slow.test/", "http://fast.test/", "http://SLOW.test/", "http://flaky.test/",
			"http://slow.test:80/", "http://fast.test/", "http://flaky.test/", "http://slow.test/",
		} {
			roundTrip(t, tr, "GET", u)
		}
		var slow, fast, flaky []time.Duration
		for _, r := range srv.Requests() {
			u, err := url.Parse(r.URL)
			require.NoError(t, err)
			at := r.At.Sub(start)
			switch u.Hostname() {
			case "slow.test", "SLOW.test":
				slow = append(slow, at)
			case "fast.test":
				fast = append(fast, at)
			case "flaky.test":
				flaky = append(flaky, at)
			}
		}
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}, slow, "slow.test, in any spelling, keeps its one pacer")
		assert.Len(t, fast, 2, "fast.test: no limit, no wait")
		assert.Len(t, flaky, 2, "flaky.test: MaxAttempts 1, one attempt per call")

		byKey := map[string]Stats{}
		for _, st := range tr.Stats() {
			byKey[st.Key] = st
		}
		assert.Equal(t, int64(4), byKey["slow.test"].Requests)
		assert.Equal(t, int64(2), byKey["fast.test"].Requests)
		assert.Equal(t, int64(2), byKey["flaky.test"].Requests)
		assert.Len(t, byKey, 3)
	})
}

// TestRouteWithKeyFunction: with Transport.Key, calls to one host under
// two keys keep two Stats entries and two pacers.
func TestRouteWithKeyFunction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{}
		tr := &Transport{
			Base:   srv,
			Limits: Hosts{"api.test": {Limit: LeakyBucket(Every(time.Second), LeakyOptions{Queue: 10})}},
			Key:    func(r *http.Request) string { return r.Header.Get("X-Api-Key") },
		}
		start := time.Now()
		for _, key := range []string{"a", "b", "a", "b"} {
			req := newRequest(t, t.Context(), "GET", "http://api.test/", "")
			req.Header.Set("X-Api-Key", key)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
		var at []time.Duration
		for _, r := range srv.Requests() {
			at = append(at, r.At.Sub(start))
		}
		assert.Equal(t, []time.Duration{0, 0, time.Second, time.Second}, at, "a and b each paced on their own")
		assert.Len(t, tr.Stats(), 2)
	})
}

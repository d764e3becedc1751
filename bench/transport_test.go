package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/pacehttp/pace"
)

// The success path of each round tripper is measured over two Bases:
//
//   - canned: an in-memory RoundTripper that answers every request at once
//     with a copy of one prebuilt 200 response whose body is http.NoBody.
//     The copy (one allocation) is paid by every contestant, bare included,
//     so the differences are each wrapper's own cost.
//   - loopback: an http.Transport talking to an httptest server on
//     127.0.0.1 that answers 200 with an empty body, kept alive.
//
// Every wrapper is configured as a user would for production: retries on
// (each library's default policy), pacing or rate limiting on where named,
// at a rate no benchmark reaches (10⁹ a second), so that the limiter decides
// on every request and never waits. go-retryablehttp's Logger is set to nil:
// its default logs a line to stderr for every request. Each iteration closes
// the response body, as a caller must.

// cannedBase is the in-memory Base.
type cannedBase struct{ resp http.Response }

func newCannedBase() *cannedBase {
	return &cannedBase{resp: http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          http.NoBody,
		ContentLength: 0,
	}}
}

func (c *cannedBase) RoundTrip(req *http.Request) (*http.Response, error) {
	r := c.resp
	r.Request = req
	return &r, nil
}

// wrapper is one contestant: wrap returns base wrapped by the library.
type wrapper struct {
	name string
	wrap func(base http.RoundTripper) http.RoundTripper
}

var wrappers = []wrapper{
	{"bare", func(base http.RoundTripper) http.RoundTripper { return base }},
	{"pace.Transport", func(base http.RoundTripper) http.RoundTripper {
		return &pace.Transport{
			Base:   base,
			Limits: pace.Hosts{pace.DefaultHost: {Limit: pace.TokenBucket(pace.PerSecond(fastRate), fastBurst)}},
		}
	}},
	{"pace.Transport-nopacing", func(base http.RoundTripper) http.RoundTripper {
		return &pace.Transport{Base: base}
	}},
	{"go-retryablehttp", func(base http.RoundTripper) http.RoundTripper {
		c := retryablehttp.NewClient()
		c.HTTPClient = &http.Client{Transport: base}
		c.Logger = nil
		return &retryablehttp.RoundTripper{Client: c}
	}},
	{"failsafehttp-retry", func(base http.RoundTripper) http.RoundTripper {
		return failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().Build())
	}},
	{"failsafehttp-retry+ratelimiter", func(base http.RoundTripper) http.RoundTripper {
		// The retry policy is outermost, so each attempt passes the limiter,
		// as in pace. A max wait lets it wait, as pace's pacing does.
		rl := ratelimiter.NewSmoothBuilder[*http.Response](fastRate, time.Second).
			WithMaxWaitTime(time.Second).Build()
		policies := []failsafe.Policy[*http.Response]{failsafehttp.NewRetryPolicyBuilder().Build(), rl}
		return failsafehttp.NewRoundTripper(base, policies...)
	}},
}

// roundTrip sends req through rt, reads and closes the body, and fails b
// unless the answer is a 200.
func roundTrip(b *testing.B, rt http.RoundTripper, req *http.Request) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d, body error %v", resp.StatusCode, err)
	}
}

func newGET(b *testing.B, url string) *http.Request {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	return req
}

// BenchmarkTransportCanned is the success-path cost of each round tripper
// over the canned in-memory Base, from one goroutine and from all of them.
// The wrapper's overhead is its ns/op and allocs/op minus bare's.
func BenchmarkTransportCanned(b *testing.B) {
	for _, w := range wrappers {
		b.Run(w.name, func(b *testing.B) {
			b.Run("serial", func(b *testing.B) {
				rt := w.wrap(newCannedBase())
				req := newGET(b, "http://api.example/v1/items")
				b.ReportAllocs()
				for b.Loop() {
					roundTrip(b, rt, req)
				}
			})
			b.Run("parallel", func(b *testing.B) {
				rt := w.wrap(newCannedBase())
				req := newGET(b, "http://api.example/v1/items")
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						roundTrip(b, rt, req)
					}
				})
			})
		})
	}
}

// BenchmarkTransportLoopback is the same over a real http.Transport and a
// loopback httptest server, from one goroutine: the overhead in context.
func BenchmarkTransportLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	for _, w := range wrappers {
		b.Run(w.name, func(b *testing.B) {
			base := srv.Client().Transport.(*http.Transport).Clone()
			defer base.CloseIdleConnections()
			rt := w.wrap(base)
			req := newGET(b, srv.URL+"/v1/items")
			roundTrip(b, rt, req) // open the connection before the clock starts
			b.ReportAllocs()
			for b.Loop() {
				roundTrip(b, rt, req)
			}
		})
	}
}

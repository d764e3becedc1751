package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/pacehttp/pace"
	benchpeer "github.com/pacehttp/pace/bench/internal/peer"
	"github.com/pacehttp/pace/retry"
)

// pacing is a scenario's client-side pacing, given once for pace and
// translated for the peers, which have no pace.Limit:
//
//   - burst 0 is strict spacing, one request every 1/perSecond: pace's
//     LeakyBucket(PerSecond(perSecond), LeakyOptions{Queue: queue}); for go-retryablehttp an
//     x/time/rate Limiter(perSecond, burst 1) waited on before every attempt;
//     for failsafe-go its smooth rate limiter (perSecond per second).
//   - burst B > 0 is a token bucket: pace's TokenBucket(PerSecond(perSecond), B);
//     x/time/rate Limiter(perSecond, B); failsafe-go has no token bucket, so
//     its bursty limiter (B permits per window of B/perSecond, a fixed
//     window), its nearest: it also lets B through at once, then perSecond.
type pacing struct {
	perSecond int
	burst     int
	pace      pace.Limit
}

// peerMaxWait is how long failsafe-go's rate limiter lets a request wait
// for its permit; long, as pace's (DefaultMaxWait) and x/time/rate's Wait
// (bounded only by the context) are.
const peerMaxWait = time.Minute

// peer is one library under test: build returns its round tripper for the
// scenario over base, which is a fresh http.Transport per run. A library
// that says why it stopped retrying tells gaveUp (pace, through OnEvent).
type peer struct {
	name  string
	build func(sc *scenario, base http.RoundTripper, gaveUp func(why string)) http.RoundTripper
}

var peers = []peer{
	{"pace", func(sc *scenario, base http.RoundTripper, gaveUp func(string)) http.RoundTripper {
		t := &pace.Transport{Base: base, Retry: retry.Policy{MaxAttempts: sc.attempts}, OnEvent: func(e pace.Event) {
			if e.Kind == pace.EventGiveUp {
				gaveUp(fmt.Sprintf("%s after attempt %d (status %d)", e.Reason, e.Attempt, e.StatusCode))
			}
		}}
		if sc.pacing != nil {
			t.Limits = pace.Hosts{pace.DefaultHost: {Limit: sc.pacing.pace}}
		}
		return t
	}},
	{"go-retryablehttp", func(sc *scenario, base http.RoundTripper, _ func(string)) http.RoundTripper {
		c := retryablehttp.NewClient() // DefaultRetryPolicy, DefaultBackoff (honours Retry-After)
		c.Logger = nil
		if sc.attempts > 0 {
			c.RetryMax = sc.attempts - 1
		}
		if p := sc.pacing; p != nil {
			base = &benchpeer.RatePaced{Next: base, Limiter: rate.NewLimiter(rate.Limit(p.perSecond), max(p.burst, 1))}
		}
		c.HTTPClient = &http.Client{Transport: base}
		return &retryablehttp.RoundTripper{Client: c}
	}},
	{"failsafe-go", func(sc *scenario, base http.RoundTripper, _ func(string)) http.RoundTripper {
		// failsafehttp's builder: retries 429, 5xx but 501 and transport
		// errors, with failsafehttp.DelayFunc (Retry-After) as the delay.
		rb := failsafehttp.NewRetryPolicyBuilder()
		if sc.attempts > 0 {
			rb = rb.WithMaxAttempts(sc.attempts)
		}
		policies := []failsafe.Policy[*http.Response]{rb.Build()}
		if p := sc.pacing; p != nil {
			// Inside the retry policy, so that every attempt passes it, as
			// in pace.
			var lb ratelimiter.Builder[*http.Response]
			if p.burst == 0 {
				lb = ratelimiter.NewSmoothBuilder[*http.Response](uint(p.perSecond), time.Second)
			} else {
				lb = ratelimiter.NewBurstyBuilder[*http.Response](uint(p.burst),
					time.Duration(p.burst)*time.Second/time.Duration(p.perSecond))
			}
			policies = append(policies, lb.WithMaxWaitTime(peerMaxWait).Build())
		}
		return failsafehttp.NewRoundTripper(base, policies...)
	}},
}

// newBase is the http.Transport every library sends through: the default
// one, with room to keep a connection alive per concurrent caller.
func newBase() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 200
	t.MaxIdleConnsPerHost = 100
	return t
}

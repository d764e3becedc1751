package throttle_test

import (
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/throttle"
)

// counting is a throttle.Limiter that counts the throttles reported to it
// and leaves every decision to the pace.Keyed it wraps (Wait and Depart
// are the Keyed's own).
type counting struct {
	*pace.Keyed
	throttles atomic.Int64
}

var _ throttle.Limiter = (*counting)(nil)

func (c *counting) Settle(p throttle.Permit, o throttle.Outcome) {
	if o.Pause > 0 {
		c.throttles.Add(1)
	}
	c.Keyed.Settle(p, o) // the Permit goes back unchanged
}

// A Limiter that wraps a pace.Keyed, passing each call on. It behaves as
// the bare Keyed: the pause, the probe, the server's quota headers and the
// adaptive rate all reach the wrapped one through Settle's Outcome.
func ExampleLimiter() {
	k, err := pace.NewKeyed(pace.TokenBucket(pace.PerSecond(100), 10), pace.KeyedOptions{})
	if err != nil {
		panic(err)
	}
	lim := &counting{Keyed: k}
	n := 0
	base := testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		if n++; n == 1 {
			return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "0"), nil
		}
		return testhttp.Response(http.StatusOK), nil
	})
	client := &http.Client{Transport: &pace.Transport{Base: base, Limiter: lim}}
	resp, err := client.Get("http://api.example/items")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", n, "attempts;", lim.throttles.Load(), "throttle")
	// Output:
	// 200 after 2 attempts; 1 throttle
}

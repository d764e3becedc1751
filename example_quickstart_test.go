package pace_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// The README's quick start: one API paced by a leaky bucket, every other
// host by a token bucket. Here a stand-in Base answers instead of the
// network.
func ExampleTransport_quickStart() {
	tr := &pace.Transport{
		Limits: pace.Hosts{
			"api.payments.example": { // one every 100ms, at most 100 waiting; 5 attempts, retried on 503 only
				Limit:       pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Queue: 100}),
				MaxAttempts: 5,
				Statuses:    []int{503},
			},
			pace.DefaultHost: {Limit: pace.TokenBucket(pace.PerMinute(600), 20)}, // 600 a minute, bursts of 20
		},
		Retry: retry.Policy{ // import "github.com/pacehttp/pace/retry"
			MaxAttempts: 4, // first attempt included; zero means 3; a Host's own MaxAttempts wins
		},
	}
	if err := tr.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	tr.Base = testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		return testhttp.Response(http.StatusOK), nil
	})
	client := &http.Client{Transport: tr}

	resp, err := client.Get("https://api.payments.example/v1/charges")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 200
}

// http.Client wraps a Transport's error in a *url.Error holding the whole
// URL, query included. Cut the query before the error is logged.
func ExampleTransport_cutURLInError() {
	tr := &pace.Transport{
		Retry: retry.Policy{MaxAttempts: 1},
		Base: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("connection reset")
		}),
	}
	_, err := (&http.Client{Transport: tr}).Get("https://api.example/v1/items?api_key=secret")
	fmt.Println(err)

	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery = ""
			ue.URL = u.Redacted() // no query, no password
		}
	}
	fmt.Println(err)
	// Output:
	// Get "https://api.example/v1/items?api_key=secret": pace: 1 attempt: connection reset
	// Get "https://api.example/v1/items": pace: 1 attempt: connection reset
}

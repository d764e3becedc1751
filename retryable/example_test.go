package retryable_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/retry"
	"github.com/pacehttp/pace/retryable"
)

// Install keeps a go-retryablehttp client and puts a pace.Transport under
// it. The local API throttles its first request (429 with Retry-After: 0);
// the client retries it, and the Transport paces each attempt.
func ExamplePolicy_Install() {
	var n atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer api.Close()
	u, _ := url.Parse(api.URL)

	client := retryablehttp.NewClient()
	client.Logger = nil
	err := (&retryable.Policy{}).Install(client, &pace.Transport{
		Retry:  retry.Policy{MaxAttempts: 1}, // the client retries; the Transport paces each attempt and pauses the host on a 429
		Limits: pace.Hosts{u.Host: {Limit: pace.TokenBucket(pace.PerSecond(10), 5)}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	resp, err := client.Get(api.URL + "/v1/items")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", n.Load(), "attempts")
	// Output:
	// 200 after 2 attempts
}

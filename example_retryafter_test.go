package pace_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pacehttp/pace"
)

// RetryAfter reads the delay a throttled response asks for, for code that
// handles responses itself; Transport applies the same rules on its own.
func ExampleRetryAfter() {
	received := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, h := range []http.Header{
		{"Retry-After": {"120"}},                                              // delay-seconds
		{"Retry-After": {"Sun, 01 Jun 2025 12:00:30 GMT"}},                    // an HTTP-date
		{"Retry-After": {"1"}, "Retry-After-Ms": {"1500"}},                    // the finer header wins
		{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1748779260"}}, // epoch seconds
		{"Retry-After": {"soon"}},                                             // malformed: no delay
	} {
		resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: h}
		d, ok := pace.RetryAfter(resp, received)
		fmt.Println(d, ok)
	}
	// Output:
	// 2m0s true
	// 30s true
	// 1.5s true
	// 1m0s true
	// 0s false
}
